package lualib

import (
	"math"
	"strconv"
	"strings"
)

// This file holds C's number text conversions as glibc does them, which the
// libraries inherit: printf's "%.Ng" (lua-cjson's numbers, Lua 5.1's number
// to string) and strtod (lua-cjson's decoder, Lua 5.1's string to number).

// formatG formats f as C's printf("%.<prec>g", f) does with glibc: prec
// significant digits, exponent form when the exponent is below -4 or at
// least prec, trailing zeros removed, "inf", "-inf", "nan" and "-nan".
func formatG(f float64, prec int) string {
	if prec < 1 {
		prec = 1
	}
	switch {
	case math.IsNaN(f):
		if math.Signbit(f) {
			return "-nan"
		}
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	// The exponent decides the style; it is the exponent after rounding to
	// prec digits, which is what 'e' formatting with prec-1 decimals gives.
	e := strconv.FormatFloat(f, 'e', prec-1, 64)
	at := strings.LastIndexByte(e, 'e')
	exp, _ := strconv.Atoi(e[at+1:])
	if exp < -4 || exp >= prec {
		return trimZeros(e[:at]) + e[at:]
	}
	return trimZeros(strconv.FormatFloat(f, 'f', prec-1-exp, 64))
}

// trimZeros removes trailing zeros after a decimal point, and the point when
// nothing follows it.
func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// isCSpace is C's isspace in the "C" locale.
func isCSpace(c byte) bool {
	return c == ' ' || (c >= '\t' && c <= '\r')
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHexDigit(c byte) bool {
	return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f')
}

// hasPrefixFold reports whether s starts with prefix, ignoring ASCII case.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// strtod reads the longest prefix of s that glibc's strtod accepts: leading
// white space, a sign, then a decimal number with optional exponent, a
// hexadecimal number ("0x", optional binary exponent "p"), "inf",
// "infinity" or "nan" with an optional "(chars)". It returns the value and
// the number of bytes read, 0 when there is no number (strtod's endptr ==
// nptr). Overflow gives ±Inf and underflow 0 or a subnormal, as strtod.
func strtod(s string) (float64, int) {
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	v, n := unsignedStrtod(s[i:])
	if n == 0 {
		return 0, 0
	}
	if neg {
		v = math.Float64frombits(math.Float64bits(v) ^ 1<<63) // NaN too
	}
	return v, i + n
}

// quietNaN is glibc's NAN, the NaN strtod returns for "nan".
const quietNaN = 0x7ff8000000000000

// nanPayload reads the chars of "nan(chars)" as glibc does, with strtoull in
// base 0 (decimal, 0x hexadecimal or 0 octal); they must all be digits of
// the number. Too large a number saturates.
func nanPayload(s string) (uint64, bool) {
	base := uint64(10)
	switch {
	case len(s) > 2 && s[0] == '0' && s[1]|0x20 == 'x' && isHexDigit(s[2]):
		base, s = 16, s[2:]
	case len(s) > 1 && s[0] == '0':
		base = 8
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		d, err := strconv.ParseUint(s[i:i+1], int(base), 8)
		if err != nil {
			return 0, false
		}
		if v > (math.MaxUint64-d)/base {
			v = math.MaxUint64
			continue
		}
		v = v*base + d
	}
	return v, true
}

// unsignedStrtod is strtod after the sign.
func unsignedStrtod(s string) (float64, int) {
	switch {
	case hasPrefixFold(s, "infinity"):
		return math.Inf(1), 8
	case hasPrefixFold(s, "inf"):
		return math.Inf(1), 3
	case hasPrefixFold(s, "nan"):
		bits, n := uint64(quietNaN), 3
		if n < len(s) && s[n] == '(' {
			j := n + 1
			for j < len(s) && (isDigit(s[j]) || s[j] == '_' || (s[j]|0x20 >= 'a' && s[j]|0x20 <= 'z')) {
				j++
			}
			if j < len(s) && s[j] == ')' {
				if payload, ok := nanPayload(s[n+1 : j]); ok {
					bits |= payload & (1<<51 - 1)
				}
				n = j + 1
			}
		}
		return math.Float64frombits(bits), n
	case len(s) >= 2 && s[0] == '0' && s[1]|0x20 == 'x':
		if v, n := hexStrtod(s); n > 0 {
			return v, n
		}
		return 0, 1 // just the "0"
	}
	return decimalStrtod(s)
}

// decimalStrtod reads digits, an optional fraction and an optional
// exponent; at least one digit must come before the exponent.
func decimalStrtod(s string) (float64, int) {
	i, digits := 0, 0
	for i < len(s) && isDigit(s[i]) {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isDigit(s[i]) {
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0, 0
	}
	i = exponentEnd(s, i, 'e', isDigit)
	v, _ := strconv.ParseFloat(s[:i], 64) // a range error still gives ±Inf or 0
	return v, i
}

// exponentEnd returns where an exponent starting at s[i] with letter mark
// ends: i itself when there is no complete exponent (letter, optional sign,
// at least one digit).
func exponentEnd(s string, i int, mark byte, digit func(byte) bool) int {
	if i >= len(s) || s[i]|0x20 != mark {
		return i
	}
	j := i + 1
	if j < len(s) && (s[j] == '+' || s[j] == '-') {
		j++
	}
	if j >= len(s) || !digit(s[j]) {
		return i
	}
	for j < len(s) && digit(s[j]) {
		j++
	}
	return j
}

// hexStrtod reads "0x" hex digits, an optional fraction and an optional
// binary exponent "p"; it returns 0 bytes when no hex digit follows "0x".
func hexStrtod(s string) (float64, int) {
	i, digits := 2, 0
	for i < len(s) && isHexDigit(s[i]) {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isHexDigit(s[i]) {
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0, 0
	}
	mant := i
	i = exponentEnd(s, i, 'p', isDigit)
	text := s[:i]
	if i == mant {
		text += "p0" // Go wants the binary exponent that C makes optional
	}
	v, _ := strconv.ParseFloat(text, 64)
	return v, i
}

// str2number is Lua 5.1's string to number conversion (luaO_str2d): strtod
// on the text up to its first NUL byte, then a hexadecimal integer when
// strtod stops at an "x", then nothing but white space may follow.
func str2number(s string) (float64, bool) {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	v, n := strtod(s)
	if n == 0 {
		return 0, false
	}
	if n < len(s) && s[n]|0x20 == 'x' {
		v, n = strtoulHex(s)
	}
	for n < len(s) && isCSpace(s[n]) {
		n++
	}
	return v, n == len(s)
}

// strtoulHex is strtoul(s, &end, 16) as a number: white space, a sign, an
// optional "0x", hex digits; the value saturates at 2^64-1 and a minus sign
// negates it modulo 2^64.
func strtoulHex(s string) (float64, int) {
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	if i+2 < len(s) && s[i] == '0' && s[i+1]|0x20 == 'x' && isHexDigit(s[i+2]) {
		i += 2
	}
	start := i
	var v uint64
	overflow := false
	for i < len(s) && isHexDigit(s[i]) {
		d, _ := strconv.ParseUint(s[i:i+1], 16, 8)
		if v > (math.MaxUint64-d)/16 {
			overflow = true
		}
		v = v*16 + d
		i++
	}
	if i == start {
		return 0, 0
	}
	if overflow {
		return float64(uint64(math.MaxUint64)), i
	}
	if neg {
		v = -v
	}
	return float64(v), i
}
