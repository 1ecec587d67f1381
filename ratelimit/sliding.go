package ratelimit

// SlidingState is a sliding window counter: the current aligned window
// and the cost admitted in it and in the window before. The zero value is
// empty.
type SlidingState struct {
	Window    int64
	Cur, Prev int64
}

// roll moves st to window w: the current count becomes the previous one
// when w follows st's window, and both are dropped when w is further on.
func (st SlidingState) roll(w int64) SlidingState {
	switch {
	case st.Window == w:
		return st
	case st.Window == w-1:
		return SlidingState{Window: w, Prev: st.Cur}
	}
	return SlidingState{Window: w}
}

// Sliding admits a request of cost (>= 1) at now under the sliding window
// counter of the seed lessons: with a fraction f of the current window
// elapsed, the previous window's count is taken as spread evenly, so
// prev*(1-f) of it still lies in the last Period, and the request is
// admitted when prev*(1-f) + cur + cost - 1 < Limit (the seed's
// "prev*weight + cur < LIMIT" for a cost of 1). The comparison is done
// exactly: prev*(Period-elapsed) + (cur+cost-1)*Period < Limit*Period.
//
// The new state is meaningful only when the decision is allowed.
func (r Rule) Sliding(st SlidingState, now, cost int64) (Decision, SlidingState) {
	p := r.Period
	w := floorDiv(now, p)
	st = st.roll(w)
	start := w * p
	if cost > r.Limit {
		return denyNever(r.Limit, r.slidingRemaining(st, now-start), r.slidingReset(st, now)), st
	}
	if !r.slidingAdmits(st, now-start, cost) {
		d := Decision{Limit: r.Limit, Remaining: r.slidingRemaining(st, now-start), ResetAfter: r.slidingReset(st, now)}
		d.RetryAfter = r.slidingRetry(st, start, cost) - now
		return d, st
	}
	st.Cur += cost
	return Decision{Allowed: true, Limit: r.Limit, Remaining: r.slidingRemaining(st, now-start),
		RetryAfter: -1, ResetAfter: r.slidingReset(st, now)}, st
}

// slidingAdmits is the seed's test at elapsed ns into st's window.
func (r Rule) slidingAdmits(st SlidingState, elapsed, cost int64) bool {
	p := r.Period
	lhs := mul(st.Prev, p-elapsed).add(mul(st.Cur+cost-1, p))
	return lhs.less(mul(r.Limit, p))
}

// slidingRemaining is how many requests of cost 1 would be admitted now:
// the k-th is when (cur+k-1)*P + prev*(P-e) < Limit*P, so the count is
// ceil((Limit*P - prev*(P-e) - cur*P) / P), at least 0.
func (r Rule) slidingRemaining(st SlidingState, elapsed int64) int64 {
	p := r.Period
	used := mul(st.Prev, p-elapsed).add(mul(st.Cur, p))
	all := mul(r.Limit, p)
	if !used.less(all) {
		return 0
	}
	return all.sub(used).ceilDiv(p)
}

// slidingReset is how long the state still counts: to the end of the next
// window while the current one has a count, to the end of this one while
// only the previous has.
func (r Rule) slidingReset(st SlidingState, now int64) int64 {
	end := (st.Window + 1) * r.Period
	switch {
	case st.Cur > 0:
		return end + r.Period - now
	case st.Prev > 0:
		return end - now
	}
	return 0
}

// slidingRetry is the first instant at which a request of cost (<= Limit)
// denied in st's window (starting at start) would be admitted.
func (r Rule) slidingRetry(st SlidingState, start, cost int64) int64 {
	p := r.Period
	// Later in this window: the previous window's share shrinks. Admitted
	// at elapsed e when prev*(P-e) < B, B = (Limit-cur-cost+1)*P, that is
	// P-e <= ceil(B/prev)-1.
	if free := r.Limit - st.Cur - cost + 1; free > 0 && st.Prev > 0 {
		e := p - mul(free, p).ceilDiv(st.Prev) + 1
		if e < p {
			return start + max(e, 0)
		}
	}
	// In the next window: this window's count becomes the previous one.
	// Admitted at elapsed e when cur*(P-e) < (Limit-cost+1)*P. That may
	// fail for the whole window when Limit exceeds P in ns (cur*1 is still
	// too much); the window after it starts empty.
	next := start + p
	if st.Cur == 0 {
		return next
	}
	e := p - mul(r.Limit-cost+1, p).ceilDiv(st.Cur) + 1
	if e >= p {
		return next + p
	}
	return next + max(e, 0)
}
