package ratelimit

// GCRAState is a token bucket kept as GCRA keeps it (seed §5): the
// theoretical arrival time, the instant at which the bucket is full again.
// The zero value is a full bucket.
type GCRAState struct {
	TAT int64
	// Lent is how many of the tokens spent were borrowed (Borrow) and
	// not returned yet: Return gives back at most that many. It is
	// forgotten once the bucket is full again.
	Lent int64
}

// Capacity is the GCRA bucket's size: Burst, or Limit when Burst is 0.
func (r Rule) Capacity() int64 {
	if r.Burst > 0 {
		return r.Burst
	}
	return r.Limit
}

// GCRA admits a request of cost (>= 1) at now to a token bucket holding
// Capacity tokens and refilled with Limit per Period, one every Interval
// (seed §5: T = 1/r, tau = b*T here since a request of cost c needs the
// booking tat + c*T to stay within tau of now). Decision.Limit is the
// capacity; Remaining the whole tokens left; ResetAfter the time until
// the bucket is full.
//
// The new state is meaningful only when the decision is allowed.
func (r Rule) GCRA(st GCRAState, now, cost int64) (Decision, GCRAState) {
	t, c := r.Interval(), r.Capacity()
	tau := c * t // <= MaxPeriod: NewRule bounds (Burst+1)*Interval, and Limit*Interval <= Period
	if st.TAT <= now {
		st.Lent = 0
	}
	tat := max(st.TAT, now)
	if cost > c {
		return denyNever(c, (tau-(tat-now))/t, tat-now), st
	}
	next := tat + cost*t
	if next-now > tau {
		return Decision{Limit: c, Remaining: (tau - (tat - now)) / t, RetryAfter: next - now - tau, ResetAfter: tat - now}, st
	}
	st.TAT = next
	return Decision{Allowed: true, Limit: c, Remaining: (tau - (next - now)) / t, RetryAfter: -1, ResetAfter: next - now}, st
}

// Borrow hands out up to n (>= 1) tokens at once, for a gateway to spend
// locally (seed §6: token leasing, ~n times fewer calls): as many whole
// tokens as the bucket holds, at most n. They are spent like any request's,
// so the bucket's bound holds for everything borrowed; unused ones come
// back with Return. With no whole token, it is a denial whose RetryAfter
// is when one is back. The granted count is the third result.
func (r Rule) Borrow(st GCRAState, now, n int64) (Decision, GCRAState, int64) {
	t, c := r.Interval(), r.Capacity()
	if st.TAT <= now {
		st.Lent = 0
	}
	tat := max(st.TAT, now)
	avail := (c*t - (tat - now)) / t
	g := min(n, avail)
	if g < 1 {
		d, _ := r.GCRA(st, now, 1)
		return d, st, 0
	}
	d, st := r.GCRA(st, now, g)
	st.Lent += g
	return d, st, g
}

// Return gives back up to m unused borrowed tokens and replies how many
// were taken back: no more than were lent and not returned, and none once
// the bucket is full (everything is forgiven then). The bucket's TAT moves
// back by that many intervals, never before now.
func (r Rule) Return(st GCRAState, now, m int64) (GCRAState, int64) {
	if st.TAT <= now {
		st.Lent = 0
		return st, 0
	}
	t := r.Interval()
	back := min(m, st.Lent, (st.TAT-now)/t)
	st.TAT -= back * t
	st.Lent -= back
	return st, back
}
