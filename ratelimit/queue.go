package ratelimit

// QueueState is the leaky bucket as a queue: the instant at which the queue
// is empty again, that is when the last admitted request has left and the
// next may leave at once. The zero value is an empty queue.
type QueueState struct {
	Free int64
}

// maxInstant caps the instants Queue stores, so that no sum overflows.
const maxInstant = int64(1) << 62

// Interval is the emission interval of the queue: one request leaves every
// Period/Limit (truncated to whole ns, at least 1).
func (r Rule) Interval() int64 { return max(r.Period/r.Limit, 1) }

// Queue admits a request of cost (>= 1) at now to the leaky bucket as a
// queue (seed §3, nginx limit_req without nodelay): requests leave one
// every Interval, in order. A request that finds the queue empty leaves at
// once (Delay 0); otherwise it waits behind the others (Delay), unless it
// would make more than Burst requests wait, in which case it is denied. A
// request of cost c is c requests arriving together: the first may leave
// at once if the queue is empty, the others wait, so a cost above Burst+1
// is never admitted. Decision.Limit is Burst and Remaining the free places
// once it is queued.
//
// The new state is meaningful only when the decision is allowed.
func (r Rule) Queue(st QueueState, now, cost int64) (Decision, QueueState) {
	t := r.Interval()
	waiting := r.waiting(st.Free, now)
	reset := max(st.Free-now, 0)
	if cost-1 > r.Burst {
		return denyNever(r.Burst, max(r.Burst-waiting, 0), reset), st
	}
	if st.Free > now && waiting+cost > r.Burst {
		// Admitted once waiting+cost <= Burst, that is when Free-x is at
		// most (Burst-cost+1)*t; when that is 0, once the queue is empty.
		at := st.Free - (r.Burst-cost+1)*t
		return Decision{Limit: r.Burst, Remaining: max(r.Burst-waiting, 0), RetryAfter: at - now, ResetAfter: reset}, st
	}
	leave := max(st.Free, now)
	st.Free = min(leave+cost*t, maxInstant) // cost*t <= (Burst+1)*Period/Limit
	return Decision{Allowed: true, Limit: r.Burst, Remaining: max(r.Burst-r.waiting(st.Free, now), 0),
		RetryAfter: -1, ResetAfter: st.Free - now, Delay: leave - now}, st
}

// waiting is how many requests wait at now in a queue that empties at
// free: they leave at free-t, free-2t, ..., and those leaving after now
// still wait, ceil((free-now)/t) - 1 of them. A request served at once
// leaves at now itself and does not wait.
func (r Rule) waiting(free, now int64) int64 {
	if free <= now {
		return 0
	}
	t := r.Interval()
	return (free-now+t-1)/t - 1
}
