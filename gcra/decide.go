package gcra

import (
	"math"
	"math/bits"
)

// Action says what the caller must do with the stored state.
type Action uint8

const (
	Keep   Action = iota // leave the key as it is (limited, or a peek)
	Store                // store NewTAT; the key expires at NewTAT (absolute ns)
	Delete               // remove the key: the bucket is completely full again
)

// String returns the name of the action.
func (a Action) String() string {
	switch a {
	case Keep:
		return "Keep"
	case Store:
		return "Store"
	case Delete:
		return "Delete"
	}
	return "Action(?)"
}

// Result is the outcome of one Decide call.
type Result struct {
	Limited    bool
	Limit      int64 // tokens
	Remaining  int64 // tokens, always within [0, Limit]
	RetryAfter int64 // ns until the request would be allowed; -1 when allowed or when it can never succeed
	ResetAfter int64 // ns until the bucket is completely full (>= 0)
	Action     Action
	NewTAT     int64 // valid when Action == Store
}

// Decide applies a request of quantity n at time now to a bucket whose stored
// theoretical arrival time is tat (exists=false: no stored key, treat tat = now).
//
// n > 0 consumes tokens, n == 0 peeks, n < 0 refunds. All times are ns since
// the Unix epoch; Decide reads no clock and does not allocate.
func Decide(tat int64, exists bool, now int64, q Quota, n int64) Result {
	// backlog = max(tat - now, 0): how far the bucket is booked ahead of
	// now. tat - now of two int64 values always fits in a uint64 when it is
	// positive, and the wrapping uint64 subtraction then yields it exactly.
	var backlog uint64
	if exists && tat > now {
		backlog = uint64(tat) - uint64(now)
	}
	switch {
	case n > q.limit:
		return never(q, backlog)
	case n >= 0:
		return consume(q, backlog, now, n)
	default:
		return refund(q, backlog, now, n)
	}
}

// consume handles 0 <= n <= limit: a peek (n == 0) or a normal request.
func consume(q Quota, backlog uint64, now, n int64) Result {
	tau := uint64(q.tau)
	// inc = E*n exactly, as 128 bits. With n <= limit it can exceed tau only
	// when tau saturated; a cost beyond the (saturated) tolerance can never
	// be paid, like redis-cell's "inc > tau" rule.
	hi, inc := bits.Mul64(uint64(q.e), uint64(n))
	if hi != 0 || inc > tau {
		return never(q, backlog)
	}
	// t = newTAT - now = backlog + inc. The uint64 sum can only wrap when
	// backlog > 2^63 (a negative now); saturate, since it is then > tau
	// anyway.
	t := backlog + inc
	if t < backlog {
		t = math.MaxUint64
	}
	if t > tau {
		return limited(q, backlog, t-tau)
	}
	if n == 0 {
		return allowed(q, int64(t), Keep, 0) // t <= tau <= MaxInt64
	}
	return store(q, backlog, now, int64(t))
}

// refund handles n < 0: the TAT moves back by |E*n|.
func refund(q Quota, backlog uint64, now, n int64) Result {
	// |E*n| as 128 bits. If it reaches the backlog (including any 128-bit
	// overflow, which certainly exceeds a 64-bit backlog), the new TAT is at
	// or before now: the bucket is full and the key can go.
	hi, back := bits.Mul64(uint64(q.e), magnitude(n))
	if hi != 0 || back >= backlog {
		return allowed(q, 0, Delete, 0)
	}
	t := backlog - back // 0 < t < backlog
	if tau := uint64(q.tau); t > tau {
		// Still booked beyond tau (the quota shrank since the TAT was set).
		return limited(q, backlog, t-tau)
	}
	// t <= tau <= MaxInt64 and now+t < tat, so nothing overflows.
	return store(q, backlog, now, int64(t))
}

// store returns an allowed result that books the bucket ttl > 0 ns ahead of
// now.
func store(q Quota, backlog uint64, now, ttl int64) Result {
	if now > math.MaxInt64-ttl {
		// now+ttl would overflow: the TAT saturates at the end of int64
		// time (year 2262). The decision was made on the exact backlog.
		if now == math.MaxInt64 {
			// Nothing can be stored after now: never succeeds.
			return never(q, backlog)
		}
		ttl = math.MaxInt64 - now
	}
	return allowed(q, ttl, Store, now+ttl)
}

// allowed builds an allowed result; ttl in [0, tau] is the reset time.
func allowed(q Quota, ttl int64, a Action, newTAT int64) Result {
	return Result{
		Limit:      q.limit,
		Remaining:  remaining(q, ttl),
		RetryAfter: -1,
		ResetAfter: ttl,
		Action:     a,
		NewTAT:     newTAT,
	}
}

// limited builds a limited result that can succeed after retry ns.
func limited(q Quota, backlog, retry uint64) Result {
	r := never(q, backlog)
	r.RetryAfter = clampU(retry)
	return r
}

// never builds a limited result that can never succeed (RetryAfter -1). The
// state is untouched, so reset and remaining describe the current backlog.
func never(q Quota, backlog uint64) Result {
	ttl := clampU(backlog)
	return Result{
		Limited:    true,
		Limit:      q.limit,
		Remaining:  remaining(q, ttl),
		RetryAfter: -1,
		ResetAfter: ttl,
		Action:     Keep,
	}
}

// remaining reproduces redis-cell's formula for a reset time ttl >= 0:
// next = tau - ttl, then (next in whole µs) / (E in whole µs) in float64,
// truncated and saturated (NaN → 0, ±Inf → saturate; E < 1 µs makes the
// divisor 0), 0 when next <= -E. The result is then clamped to [0, limit],
// which redis-cell does not do (see the package documentation).
func remaining(q Quota, ttl int64) int64 {
	next := q.tau - ttl // tau >= 0 and ttl >= 0: cannot overflow
	if next <= -q.e {
		return 0
	}
	r := floatToInt(float64(next/1000) / q.eUs)
	if r < 0 {
		return 0
	}
	if r > q.limit {
		return q.limit
	}
	return r
}
