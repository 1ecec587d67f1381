package server

import (
	"bytes"
	"math/big"
	"strings"
)

// INCRBYFLOAT arithmetic. Redis parses both operands with strtold, adds them
// as C long doubles (the x87 80-bit format on amd64: a 64-bit significand,
// a 15-bit exponent, subnormals down to 2^-16445) and prints the sum with
// "%.17Lf", trimming trailing zeros. This file emulates that with big.Float
// so that replies match Redis digit for digit: 0.1+0.1+0.1 is "0.3" and
// 10.5+0.1 is "10.6", where float64 arithmetic would not agree.

const (
	ldPrec = 64 // significand bits of an x87 long double
	// big.Float.MantExp exponents (x = m * 2^exp, 0.5 <= |m| < 1).
	ldMaxExp = 16384  // LDBL_MAX < 2^16384
	ldMinExp = -16381 // smallest normal, 2^-16382
	// Exponent of the smallest subnormal, 2^-16445.
	ldTinyExp = ldMinExp - ldPrec + 1

	// maxLongDoubleChars is Redis's MAX_LONG_DOUBLE_CHARS: longer inputs
	// are rejected before parsing.
	maxLongDoubleChars = 5 * 1024
)

// longDouble is a parsed operand: a finite value rounded to long double
// precision and range, or an infinity.
type longDouble struct {
	f   *big.Float // nil when inf
	inf bool
}

// parseLongDouble parses b as Redis's string2ld does: strtold's syntax
// (decimal or hexadecimal, optional exponent, "inf"/"infinity"), no leading
// space, no trailing bytes (a NUL byte included), no NaN, and no overflow
// or underflow to zero.
func parseLongDouble(b []byte) (longDouble, bool) {
	if len(b) == 0 || len(b) >= maxLongDoubleChars {
		return longDouble{}, false
	}
	if bytes.IndexByte(b, 0) >= 0 { // strtold would stop short of the end
		return longDouble{}, false
	}
	switch b[0] {
	case ' ', '\t', '\n', '\v', '\f', '\r':
		return longDouble{}, false
	}
	neg := false
	s := b
	if s[0] == '+' || s[0] == '-' {
		neg = s[0] == '-'
		s = s[1:]
	}
	if len(s) >= 3 && strings.EqualFold(string(s[:3]), "inf") {
		if len(s) == 3 || (len(s) == 8 && strings.EqualFold(string(s), "infinity")) {
			return longDouble{inf: true}, true
		}
		return longDouble{}, false
	}
	var (
		f  *big.Float
		ok bool
	)
	if len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		f, ok = parseHexLongDouble(s[2:])
	} else {
		f, ok = parseDecLongDouble(s)
	}
	if !ok {
		return longDouble{}, false
	}
	if neg {
		f.Neg(f)
	}
	return longDouble{f: f}, true
}

// scanDigits splits s into the digits of a mantissa with an optional radix
// point: it returns the digits without the point, how many followed the
// point, and the rest of s.
func scanDigits(s []byte, isDigit func(byte) bool) (digits []byte, frac int, rest []byte) {
	seenPoint := false
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case isDigit(c):
			digits = append(digits, c)
			if seenPoint {
				frac++
			}
		case c == '.' && !seenPoint:
			seenPoint = true
		default:
			return digits, frac, s[i:]
		}
	}
	return digits, frac, s[i:]
}

// scanExponent parses the decimal exponent after 'e' or 'p' (sign and at
// least one digit) up to the end of s, saturating far beyond any range.
func scanExponent(s []byte) (int64, bool) {
	neg := false
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if len(s) == 0 {
		return 0, false
	}
	var e int64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		if e < 1e12 {
			e = e*10 + int64(c-'0')
		}
	}
	if neg {
		e = -e
	}
	return e, true
}

func isDecDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func parseDecLongDouble(s []byte) (*big.Float, bool) {
	digits, frac, rest := scanDigits(s, isDecDigit)
	if len(digits) == 0 {
		return nil, false
	}
	var exp int64
	if len(rest) > 0 {
		if rest[0] != 'e' && rest[0] != 'E' {
			return nil, false
		}
		var ok bool
		if exp, ok = scanExponent(rest[1:]); !ok {
			return nil, false
		}
	}
	var m big.Int
	m.SetString(string(digits), 10)
	return roundLongDouble(&m, exp-int64(frac), 0)
}

func parseHexLongDouble(s []byte) (*big.Float, bool) {
	digits, frac, rest := scanDigits(s, isHexDigit)
	if len(digits) == 0 {
		return nil, false
	}
	var exp int64
	if len(rest) > 0 {
		if rest[0] != 'p' && rest[0] != 'P' {
			return nil, false
		}
		var ok bool
		if exp, ok = scanExponent(rest[1:]); !ok {
			return nil, false
		}
	}
	var m big.Int
	m.SetString(string(digits), 16)
	return roundLongDouble(&m, 0, exp-4*int64(frac))
}

// log2of10 bounds the binary magnitude of decimal exponents.
const log2of10 = 3.321928094887362

// roundLongDouble rounds m * 10^e10 * 2^e2 (m >= 0) to the nearest long
// double, as strtold does. ok is false on overflow and on underflow to zero,
// which string2ld rejects; a subnormal result keeps only the bits the x87
// format has for it.
func roundLongDouble(m *big.Int, e10, e2 int64) (*big.Float, bool) {
	if m.Sign() == 0 {
		return new(big.Float).SetPrec(ldPrec), true
	}
	// Cheap range check first, so absurd exponents cost nothing.
	approx := float64(m.BitLen()) + float64(e10)*log2of10 + float64(e2)
	if approx > ldMaxExp+64 {
		return nil, false
	}
	if approx < ldTinyExp-64 {
		return nil, false
	}
	// The exact value as num/den.
	num := new(big.Int).Set(m)
	den := big.NewInt(1)
	if e10 > 0 {
		num.Mul(num, new(big.Int).Exp(big.NewInt(10), big.NewInt(e10), nil))
	} else if e10 < 0 {
		den.Exp(big.NewInt(10), big.NewInt(-e10), nil)
	}
	if e2 > 0 {
		num.Lsh(num, uint(e2))
	} else if e2 < 0 {
		den.Lsh(den, uint(-e2))
	}
	a := new(big.Float).SetInt(num) // exact: precision grows to fit
	b := new(big.Float).SetInt(den)
	// Truncation keeps the exact binary exponent.
	t := new(big.Float).SetPrec(ldPrec).SetMode(big.ToZero).Quo(a, b)
	exp := t.MantExp(nil)
	if exp > ldMaxExp {
		return nil, false
	}
	prec := ldPrec
	if exp < ldMinExp {
		prec -= ldMinExp - exp // subnormal: fewer significand bits
	}
	if prec < 1 {
		// Below the smallest subnormal: it rounds to 2^-16445 only when
		// more than half of it (a tie goes to even, zero).
		if prec < 0 {
			return nil, false
		}
		half := new(big.Int).Lsh(num, uint(-(ldTinyExp - 2))) // num * 2^16446
		if half.Cmp(den) <= 0 {
			return nil, false
		}
		// SetMantExp takes its operand's precision (53 bits for NewFloat): set
		// the long double's after it.
		return new(big.Float).SetMantExp(big.NewFloat(0.5), ldTinyExp).SetPrec(ldPrec), true
	}
	z := new(big.Float).SetPrec(uint(prec)).Quo(a, b)
	if z.MantExp(nil) > ldMaxExp {
		return nil, false
	}
	return z.SetPrec(ldPrec), true
}

// addLongDouble adds two long doubles; ok is false when the sum is NaN or
// infinite (Redis: "increment would produce NaN or Infinity").
func addLongDouble(x, y longDouble) (*big.Float, bool) {
	if x.inf || y.inf {
		return nil, false
	}
	z := new(big.Float).SetPrec(ldPrec).Add(x.f, y.f)
	if z.Sign() != 0 && z.MantExp(nil) > ldMaxExp {
		return nil, false
	}
	return z, true
}

// formatLongDouble prints f as Redis's ld2string in human mode: "%.17Lf",
// then humanDecimal.
func formatLongDouble(f *big.Float) []byte { return humanDecimal(f.Append(nil, 'f', 17)) }

// humanDecimal is the end of Redis's human mode: trailing zeros (and a
// trailing point) removed, and "-0" as "0".
func humanDecimal(b []byte) []byte {
	if bytes.IndexByte(b, '.') >= 0 {
		b = bytes.TrimRight(b, "0")
		b = bytes.TrimSuffix(b, []byte("."))
	}
	if string(b) == "-0" {
		b = b[1:]
	}
	return b
}
