package coll

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"unsafe"
)

// ParseScore reads a sorted-set score as Redis does (strtod over the whole
// argument): decimal and hexadecimal forms, "inf", "+inf", "-inf",
// "infinity"; no leading space, no trailing bytes, no NaN, no overflow,
// and no underflow to zero of a non-zero mantissa.
func ParseScore(b []byte) (float64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	if n, ok := parseSmallInt(b); ok {
		return float64(n), true
	}
	c := b[0]
	if c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r' {
		return 0, false
	}
	if bytes.IndexByte(b, '_') >= 0 {
		return 0, false // Go's syntax, not strtod's
	}
	s := unsafe.String(unsafe.SliceData(b), len(b))
	hex := isHexFloat(b)
	if hex && bytes.IndexAny(b, "pP") < 0 {
		s = s + "p0" // strtod takes a hexadecimal float without exponent
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	if f == 0 && nonZeroMantissa(b, hex) {
		return 0, false // strtod's ERANGE underflow to zero
	}
	return f, true
}

// parseSmallInt reads a plain decimal integer of at most 15 digits (exact
// as a float), the common case of a score.
func parseSmallInt(b []byte) (int64, bool) {
	i, neg := 0, false
	if b[0] == '-' || b[0] == '+' {
		neg, i = b[0] == '-', 1
	}
	if len(b)-i == 0 || len(b)-i > 15 {
		return 0, false
	}
	var n int64
	for ; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		if n == 0 {
			return 0, false // -0: let the general path keep the sign
		}
		n = -n
	}
	return n, true
}

func isHexFloat(b []byte) bool {
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		b = b[1:]
	}
	return len(b) > 1 && b[0] == '0' && (b[1] == 'x' || b[1] == 'X')
}

// nonZeroMantissa reports whether a float's text has a non-zero digit
// before its exponent.
func nonZeroMantissa(b []byte, hex bool) bool {
	if hex {
		i := bytes.IndexAny(b, "xX")
		for _, c := range b[i+1:] {
			if c == 'p' || c == 'P' {
				return false
			}
			if (c >= '1' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') {
				return true
			}
		}
		return false
	}
	for _, c := range b {
		if c == 'e' || c == 'E' {
			return false
		}
		if c >= '1' && c <= '9' {
			return true
		}
	}
	return false
}

// AppendScore appends a score as Redis 7.0 replies with it (RESP2 bulk
// string and RESP3 double alike): "inf", "-inf", or C's %.17g.
func AppendScore(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	}
	return strconv.AppendFloat(dst, f, 'g', 17, 64)
}

// AppendScoreString appends a score as Redis stores it in text (its
// d2string, which ZSCAN replies with): integral values within ±2^62 as
// integers, "-0" for negative zero, otherwise as AppendScore.
func AppendScoreString(dst []byte, f float64) []byte {
	if f == 0 && math.Signbit(f) {
		return append(dst, "-0"...)
	}
	if f >= -(1<<62) && f <= 1<<62 && f == math.Trunc(f) {
		return strconv.AppendInt(dst, int64(f), 10)
	}
	return AppendScore(dst, f)
}

// ScoreRange is a ZRANGEBYSCORE interval.
type ScoreRange struct {
	Min, Max     float64
	MinEx, MaxEx bool
}

// ParseScoreRange reads ZRANGEBYSCORE's min and max ("(" for exclusive;
// each bound as strtod reads it, more leniently than ParseScore).
// Redis's error for false is "min or max is not a float".
func ParseScoreRange(min, max []byte) (ScoreRange, bool) {
	var r ScoreRange
	var ok1, ok2 bool
	r.Min, r.MinEx, ok1 = parseScoreBound(min)
	r.Max, r.MaxEx, ok2 = parseScoreBound(max)
	return r, ok1 && ok2
}

func parseScoreBound(b []byte) (float64, bool, bool) {
	ex := len(b) > 0 && b[0] == '('
	if ex {
		b = b[1:]
	}
	f, ok := parseStrtod(b)
	return f, ex, ok
}

// parseStrtod reads a range bound as Redis's zslParseRange does, with
// strtod alone: leading white space is skipped, an empty string is 0, an
// overflow is an infinity and an underflow 0; only NaN and bytes after the
// number are refused.
func parseStrtod(b []byte) (float64, bool) {
	if len(b) == 0 {
		return 0, true
	}
	if n, ok := parseSmallInt(b); ok {
		return float64(n), true
	}
	i := 0
	for i < len(b) && (b[i] == ' ' || (b[i] >= '\t' && b[i] <= '\r')) {
		i++
	}
	b = b[i:]
	if len(b) == 0 || bytes.IndexByte(b, '_') >= 0 {
		return 0, false
	}
	s := unsafe.String(unsafe.SliceData(b), len(b))
	if isHexFloat(b) && bytes.IndexAny(b, "pP") < 0 {
		s = s + "p0"
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// Empty reports whether no score can be in r.
func (r ScoreRange) Empty() bool {
	return r.Min > r.Max || (r.Min == r.Max && (r.MinEx || r.MaxEx))
}

func (r ScoreRange) gteMin(s float64) bool {
	if r.MinEx {
		return s > r.Min
	}
	return s >= r.Min
}

func (r ScoreRange) lteMax(s float64) bool {
	if r.MaxEx {
		return s < r.Max
	}
	return s <= r.Max
}

// LexRange is a ZRANGEBYLEX interval.
type LexRange struct {
	Min, Max lexBound
}

type lexBound struct {
	inf int8 // -1 for "-", +1 for "+", 0 for a value
	ex  bool
	val []byte
}

// ParseLexRange reads ZRANGEBYLEX's min and max ("[" inclusive, "("
// exclusive, "-" and "+" the ends). Redis's error for false is "min or
// max not valid string range item". The range aliases the arguments.
func ParseLexRange(min, max []byte) (LexRange, bool) {
	a, ok1 := parseLexBound(min)
	b, ok2 := parseLexBound(max)
	return LexRange{a, b}, ok1 && ok2
}

func parseLexBound(b []byte) (lexBound, bool) {
	if len(b) == 0 {
		return lexBound{}, false
	}
	switch b[0] {
	case '-':
		if len(b) == 1 {
			return lexBound{inf: -1}, true
		}
	case '+':
		if len(b) == 1 {
			return lexBound{inf: 1}, true
		}
	case '[':
		return lexBound{val: b[1:]}, true
	case '(':
		return lexBound{ex: true, val: b[1:]}, true
	}
	return lexBound{}, false
}

// cmpLex compares two bounds as Redis's sdscmplex (the ends as extremes).
func cmpLex(a, b lexBound) int {
	if a.inf == b.inf && a.inf != 0 {
		return 0
	}
	if a.inf == -1 || b.inf == 1 {
		return -1
	}
	if a.inf == 1 || b.inf == -1 {
		return 1
	}
	return bytes.Compare(a.val, b.val)
}

// Empty reports whether no member can be in r.
func (r LexRange) Empty() bool {
	c := cmpLex(r.Min, r.Max)
	return c > 0 || (c == 0 && (r.Min.ex || r.Max.ex))
}

func (r LexRange) gteMin(m []byte) bool {
	switch r.Min.inf {
	case -1:
		return true
	case 1:
		return false
	}
	c := bytes.Compare(m, r.Min.val)
	if r.Min.ex {
		return c > 0
	}
	return c >= 0
}

func (r LexRange) lteMax(m []byte) bool {
	switch r.Max.inf {
	case -1:
		return false
	case 1:
		return true
	}
	c := bytes.Compare(m, r.Max.val)
	if r.Max.ex {
		return c < 0
	}
	return c <= 0
}
