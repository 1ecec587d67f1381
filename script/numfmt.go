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
