package gcra

import (
	"math"
	"math/bits"
)

// satMul returns a*b for a, b >= 0, saturating at MaxInt64 instead of
// wrapping. The 128-bit product from bits.Mul64 overflows int64 exactly when
// its high word is non-zero or its low word has the sign bit set.
func satMul(a, b int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}

// magnitude returns |x| as a uint64. It is exact for every int64, including
// MinInt64 (whose magnitude 2^63 does not fit in an int64 but does in a
// uint64: -x wraps back to MinInt64, and its bit pattern read as uint64 is
// 2^63).
func magnitude(x int64) uint64 {
	if x < 0 {
		return uint64(-x)
	}
	return uint64(x)
}

// clampU returns u as an int64, saturating at MaxInt64.
func clampU(u uint64) int64 {
	if u > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(u)
}

// floatToInt converts like Rust's `f as i64`: truncation toward zero, NaN
// becomes 0, and values out of range saturate. Go's int64(f) is
// implementation-defined out of range (MinInt64 on amd64), hence the guards.
// 0x1p63 is exactly 2^63, the first float64 above MaxInt64.
func floatToInt(f float64) int64 {
	switch {
	case f != f:
		return 0
	case f >= 0x1p63:
		return math.MaxInt64
	case f <= -0x1p63:
		return math.MinInt64
	}
	return int64(f)
}
