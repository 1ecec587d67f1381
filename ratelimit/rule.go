package ratelimit

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"time"
)

// Bounds of a rule. They keep every instant below 2^62 ns after now + a few
// periods, and every product in 128 bits.
const (
	MaxLimit  = int64(1) << 40
	MinPeriod = int64(time.Millisecond)
	MaxPeriod = int64(100 * 365 * 24 * time.Hour) // a century
	MaxBurst  = MaxLimit
)

// Errors of NewRule, worded as the RL.* commands reply them after "ERR ".
var (
	ErrLimit  = errors.New("limit must be a positive integer")
	ErrPeriod = errors.New("period must be at least 1ms and at most 100 years")
	ErrBurst  = errors.New("burst must be a non-negative integer")
)

// Rule is a validated limit: Limit requests per Period. Burst is the queue
// size of the leaky bucket (Queue); the window algorithms ignore it.
type Rule struct {
	Limit  int64 // requests (cost units) per Period, 1..MaxLimit
	Period int64 // ns, MinPeriod..MaxPeriod
	Burst  int64 // Queue: requests that may wait, 0..MaxBurst
}

// NewRule validates a rule.
func NewRule(limit, period, burst int64) (Rule, error) {
	switch {
	case limit < 1 || limit > MaxLimit:
		return Rule{}, fmt.Errorf("%w (1..%d), got %d", ErrLimit, MaxLimit, limit)
	case period < MinPeriod || period > MaxPeriod:
		return Rule{}, fmt.Errorf("%w, got %v", ErrPeriod, time.Duration(period))
	case burst < 0 || burst > MaxBurst:
		return Rule{}, fmt.Errorf("%w (0..%d), got %d", ErrBurst, MaxBurst, burst)
	case mul(burst+1, max(period/limit, 1)).above(MaxPeriod):
		return Rule{}, fmt.Errorf("%w: burst × period / limit must be at most 100 years", ErrBurst)
	}
	return Rule{Limit: limit, Period: period, Burst: burst}, nil
}

// Decision is the outcome of one request.
type Decision struct {
	Allowed    bool
	Limit      int64 // the rule's limit (Queue: its Burst, the queue size)
	Remaining  int64 // cost units still admitted now (Queue: free places in the queue)
	RetryAfter int64 // ns until the same request would be admitted; -1 when allowed or never
	ResetAfter int64 // ns until the state has no effect left (the key's lifetime; 0: none)
	Delay      int64 // Queue: ns the admitted request waits before it proceeds; 0 otherwise
}

// denyNever is the decision for a cost the rule can never admit.
func denyNever(limit, remaining, reset int64) Decision {
	return Decision{Limit: limit, Remaining: remaining, RetryAfter: -1, ResetAfter: reset}
}

// u128 is an unsigned 128-bit integer for exact products.
type u128 struct{ hi, lo uint64 }

func mul(a, b int64) u128 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	return u128{hi, lo}
}

func (x u128) add(y u128) u128 {
	lo, c := bits.Add64(x.lo, y.lo, 0)
	hi, _ := bits.Add64(x.hi, y.hi, c)
	return u128{hi, lo}
}

func (x u128) less(y u128) bool {
	return x.hi < y.hi || (x.hi == y.hi && x.lo < y.lo)
}

// above tells whether x > n for n >= 0.
func (x u128) above(n int64) bool { return x.hi != 0 || x.lo > uint64(n) }

// sub returns x - y for y <= x.
func (x u128) sub(y u128) u128 {
	lo, b := bits.Sub64(x.lo, y.lo, 0)
	hi, _ := bits.Sub64(x.hi, y.hi, b)
	return u128{hi, lo}
}

// ceilDiv returns ceil(x / d) for d > 0, saturating at MaxInt64 (the
// callers' bounds keep their quotients far below).
func (x u128) ceilDiv(d int64) int64 {
	if x.hi >= uint64(d) {
		return math.MaxInt64
	}
	q, r := bits.Div64(x.hi, x.lo, uint64(d))
	if r != 0 {
		q++
	}
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}

// floorDiv returns floor(a / b) for b > 0 and any a.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
