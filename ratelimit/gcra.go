package ratelimit

// GCRAState is a token bucket kept as GCRA keeps it (seed §5): the
// theoretical arrival time, the instant at which the bucket is full again.
// The zero value is a full bucket.
type GCRAState struct {
	TAT int64
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
