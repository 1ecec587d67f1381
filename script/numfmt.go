package script

import (
	"math"
	"math/bits"

	"github.com/turnstile/turnstile/resp"
)

// A fast, exact path for C's "%.<sig>g" of the numbers limiter scripts
// format most: times, rates and delays with a fraction, from 1e-4 to 2^53.
// Such a number is mant/2^k exactly (k fraction bits), so its value
// rounded to d decimals is (mant*10^d)/2^k rounded to an integer: a
// 128-bit product, a shift, and C's rounding of the exact value (to
// nearest, ties to even). strconv gets the same digits by a longer route.

// pow10 holds 10^0 ... 10^19 (the largest below 2^64).
var pow10 = [...]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// appendGFast appends "%.<sig>g" of f (sig <= 17) and reports true when f
// is finite, not a whole number, 1e-4 <= |f| < 2^53 (the "%f" layout of
// "%g"), and rounding to sig digits does not carry into another digit;
// otherwise it appends nothing and reports false.
func appendGFast(dst []byte, f float64, sig int) ([]byte, bool) {
	b := math.Float64bits(f)
	exp := int(b >> 52 & 0x7ff)
	k := uint(1075 - exp) // fraction bits: |f| = mant / 2^k
	if exp == 0 || exp == 0x7ff || exp >= 1075 || k > 52+14 {
		return dst, false // zero, subnormal, inf, nan, whole, or below 2^-14
	}
	mant := b&(1<<52-1) | 1<<52
	// p: the digits before the point; z: for |f| < 1, the zeros after it.
	p, z := 0, 0
	if k <= 52 && mant>>k > 0 {
		ip := mant >> k
		p = 1
		for ip >= pow10[p] {
			p++
		}
	} else {
		for ; z < 4; z++ { // |f| >= 10^-(z+1)?
			hi, lo := bits.Mul64(mant, pow10[z+1])
			if k >= 64 && hi >= 1<<(k-64) || k < 64 && (hi > 0 || lo >= 1<<k) {
				break
			}
		}
		if z == 4 {
			return dst, false // below 1e-4: the "%e" layout
		}
	}
	d := sig - p + z // decimals
	if p > sig || d >= len(pow10) {
		return dst, false
	}
	hi, lo := bits.Mul64(mant, pow10[d])
	// q = (hi:lo) >> k; half: bit k-1; rest: the bits below it.
	var q uint64
	var half, rest bool
	switch {
	case k < 64:
		q = hi<<(64-k) | lo>>k
		half, rest = lo>>(k-1)&1 == 1, lo&(1<<(k-1)-1) != 0
	case k == 64:
		q = hi
		half, rest = lo>>63 == 1, lo&(1<<63-1) != 0
	default:
		q = hi >> (k - 64)
		half, rest = hi>>(k-65)&1 == 1, hi&(1<<(k-65)-1) != 0 || lo != 0
	}
	if half && (rest || q&1 == 1) {
		q++
	}
	if q >= pow10[sig] {
		return dst, false // rounding carried into another digit
	}
	if b>>63 != 0 {
		dst = append(dst, '-')
	}
	var digits [17]byte
	if sig > 8 { // two shorter chains of divisions instead of one long one
		resp.PutDigits(digits[sig-8:sig], q%1e8)
		resp.PutDigits(digits[:sig-8], q/1e8)
	} else {
		resp.PutDigits(digits[:sig], q)
	}
	end := sig
	for end > p && digits[end-1] == '0' {
		end--
	}
	if p == 0 {
		dst = append(dst, '0', '.')
		dst = append(dst, "0000"[:z]...)
		return append(dst, digits[:end]...), true
	}
	dst = append(dst, digits[:p]...)
	if end > p {
		dst = append(dst, '.')
		dst = append(dst, digits[p:end]...)
	}
	return dst, true
}

// inv10f holds 10^-0 ... 10^-19, rounded (parseDecimal; pow10's powers
// themselves are exact as float64s).
var inv10f = [...]float64{1, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10,
	1e-11, 1e-12, 1e-13, 1e-14, 1e-15, 1e-16, 1e-17, 1e-18, 1e-19}

// parseDecimal is a fast, exact path for strconv.ParseFloat of the
// numbers limiter scripts store and read again (a TAT as redis_rate keeps
// it, "313459200.12345678"): unsigned digits with a fraction, 19 digits at
// most, whose value lies in [2^-11, 2^52). It reports false, having
// decided nothing, for any other text and when it cannot decide cheaply
// (a tie, a power of two).
func parseDecimal(s string) (float64, bool) {
	if len(s) > 20 { // at most 19 digits: m below 10^19 fits a uint64
		return 0, false
	}
	var m uint64
	i := 0
	for ; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			break
		}
		m = m*10 + uint64(c)
	}
	if i == 0 || i == len(s) || s[i] != '.' {
		return 0, false
	}
	dot := i
	for i++; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			return 0, false
		}
		m = m*10 + uint64(c)
	}
	d := len(s) - dot - 1
	if d == 0 {
		return 0, false
	}
	// The candidate: m/10^d with m's rounding to a double corrected (q0's
	// remainder mh - q0*10^d is exact by FMA; lo = m - mh, |lo| < 2^11).
	mh, p := float64(m), float64(pow10[d])
	lo := float64(int64(m - uint64(mh))) // mh < 10^19 fits a uint64
	q0 := mh / p
	c := q0 + (math.FMA(-q0, p, mh)+lo)*inv10f[d]
	if !nearestDouble(m, d, c) {
		return 0, false
	}
	return c, true
}

// nearestDouble reports whether c, in [2^-11, 2^52) and not a power of
// two, is the double nearest to m/10^d (1 <= d <= 19), a tie excluded.
// With c = mant/2^k (k fraction bits), that is |m/10^d - mant/2^k| below
// half of c's gap 2^-k: |m*2^k - mant*10^d| < 10^d/2, in 128-bit integers.
func nearestDouble(m uint64, d int, c float64) bool {
	b := math.Float64bits(c)
	k := 1075 - int(b>>52&0x7ff)
	mant := b&(1<<52-1) | 1<<52
	if k < 1 || k > 63 || mant == 1<<52 || b>>63 != 0 { // whole, out of range, or a power of two (its gap below is narrower)
		return false
	}
	ahi, alo := m>>(64-k), m<<k
	bhi, blo := bits.Mul64(mant, pow10[d])
	dlo, borrow := bits.Sub64(alo, blo, 0)
	dhi, _ := bits.Sub64(ahi, bhi, borrow)
	if int64(dhi) < 0 { // |diff|
		dlo, borrow = bits.Sub64(0, dlo, 0)
		dhi, _ = bits.Sub64(0, dhi, borrow)
	}
	return dhi == 0 && dlo < pow10[d]/2
}
