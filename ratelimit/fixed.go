package ratelimit

// FixedState is a fixed window counter: the window the count belongs to
// (Unix ns / Period) and the cost admitted in it. The zero value is empty.
type FixedState struct {
	Window int64
	Count  int64
}

// Fixed admits a request of cost (>= 1) at now under a fixed window: the
// windows are aligned on the epoch (minute 10:15 is one window, 10:16 the
// next, as in the seed's INCR rl:u42:1015), and each admits Limit. A
// state from an older window counts nothing.
//
// The new state is meaningful only when the decision is allowed; it
// expires at the end of its window (ResetAfter).
func (r Rule) Fixed(st FixedState, now, cost int64) (Decision, FixedState) {
	w := floorDiv(now, r.Period)
	if st.Window != w {
		st = FixedState{Window: w}
	}
	end := (w + 1) * r.Period
	reset := end - now
	remaining := max(r.Limit-st.Count, 0) // a lowered limit may leave it over
	if st.Count == 0 {
		reset = 0 // nothing stored has an effect
	}
	switch {
	case cost > r.Limit:
		return denyNever(r.Limit, remaining, reset), st
	case st.Count+cost > r.Limit:
		return Decision{Limit: r.Limit, Remaining: remaining, RetryAfter: end - now, ResetAfter: reset}, st
	}
	st.Count += cost
	return Decision{Allowed: true, Limit: r.Limit, Remaining: r.Limit - st.Count, RetryAfter: -1, ResetAfter: end - now}, st
}
