package gcra

import (
	"math"
	"math/big"
)

// Quota is a validated rate: MaxBurst+1 requests at once, Count per Period
// seconds. Build it with NewQuota. The zero Quota is usable but limits every
// request that consumes tokens.
type Quota struct {
	e     int64   // emission interval E, ns, >= 1
	limit int64   // max_burst + 1, >= 1
	tau   int64   // E*limit, ns, saturated at MaxInt64
	eUs   float64 // float64(E / 1000): the µs divisor of the remaining formula
}

// NewQuota validates the CL.THROTTLE parameters max_burst, count and period
// (seconds). The checks run in this order: count or period 0 → ErrZeroRate
// (as redis-cell); any negative value → ErrNegative (redis-cell accepts
// them); emission interval truncating to 0 ns → ErrZeroRate (as redis-cell);
// maxBurst == MaxInt64 → ErrBurstTooLarge.
func NewQuota(maxBurst, count, period int64) (Quota, error) {
	if count == 0 || period == 0 {
		return Quota{}, ErrZeroRate
	}
	if maxBurst < 0 || count < 0 || period < 0 {
		return Quota{}, ErrNegative
	}
	e := emissionInterval(count, period)
	if e == 0 {
		return Quota{}, ErrZeroRate
	}
	if maxBurst == math.MaxInt64 {
		return Quota{}, ErrBurstTooLarge
	}
	limit := maxBurst + 1
	return Quota{
		e:     e,
		limit: limit,
		tau:   satMul(e, limit),
		eUs:   float64(e / 1000),
	}, nil
}

// Limit returns max_burst + 1, the number of tokens in a full bucket.
func (q Quota) Limit() int64 { return q.limit }

// EmissionInterval returns E, the time one token is worth, in ns.
func (q Quota) EmissionInterval() int64 { return q.e }

// Tolerance returns tau = E*limit in ns, saturated at MaxInt64.
func (q Quota) Tolerance() int64 { return q.tau }

// nsPerSecond is 1e9 as an int64 constant.
const nsPerSecond = 1_000_000_000

// emissionInterval computes E = trunc(float64(period*1e9) / float64(count))
// like redis-cell: the product is exact (128-bit), rounded once to float64,
// divided in float64, truncated and saturated. count and period are > 0.
func emissionInterval(count, period int64) int64 {
	var num float64
	if period <= math.MaxInt64/nsPerSecond {
		// The product fits in int64; converting it rounds once.
		num = float64(period * nsPerSecond)
	} else {
		// period*1e9 overflows int64 (period > ~292 years). Rounding
		// float64(period) first and then multiplying would round twice
		// and can differ from redis-cell (e.g. period 2^53+1), so form the
		// exact product and round it once. Slow path, NewQuota only.
		p := new(big.Int).Mul(big.NewInt(period), big.NewInt(nsPerSecond))
		num, _ = p.Float64()
	}
	return floatToInt(num / float64(count))
}
