package script

import (
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Lua 5.1 behaviours gopher-lua does not have, as Redis's scripts see
// them: numbers formatted by tostring with "%.14g", tonumber that reads
// what C's strtod reads, and math.random on Redis's own generator.

// luaTostring is tostring with Lua 5.1's number format.
func luaTostring(L *lua.LState) int {
	v := L.CheckAny(1)
	if n, ok := v.(lua.LNumber); ok {
		L.Push(lua.LString(formatNumber(float64(n))))
		return 1
	}
	L.Push(L.ToStringMeta(v))
	return 1
}

// smallInts are the numbers 0 to 1023 as Lua values: Go boxes a float64
// in an interface on the heap, and limiter scripts convert small whole
// numbers (limits, costs, counts) on every run. Read-only.
var smallInts = func() (a [1024]lua.LValue) {
	for i := range a {
		a[i] = lua.LNumber(i)
	}
	return a
}()

// luaNumber returns f as a Lua value, without an allocation for the
// whole numbers 0 to 1023 (not -0).
func luaNumber(f float64) lua.LValue {
	if f >= 0 && f < float64(len(smallInts)) && f == math.Trunc(f) && !math.Signbit(f) {
		return smallInts[int(f)]
	}
	return lua.LNumber(f)
}

// luaTonumber is tonumber(v [, base]).
func luaTonumber(L *lua.LState) int {
	v := L.CheckAny(1)
	base := L.OptInt(2, 10)
	if base == 10 {
		switch s := v.(type) {
		case lua.LNumber:
			L.Push(v) // the argument itself: no new box
		case lua.LString:
			if f, ok := parseNumber(string(s)); ok {
				L.Push(luaNumber(f))
			} else {
				L.Push(lua.LNil)
			}
		default:
			L.Push(lua.LNil)
		}
		return 1
	}
	if base < 2 || base > 36 {
		L.ArgError(2, "base out of range")
	}
	s := strings.TrimSpace(L.CheckString(1))
	n, err := strconv.ParseInt(s, base, 64)
	if err != nil {
		L.Push(lua.LNil)
		return 1
	}
	L.Push(lua.LNumber(n))
	return 1
}

// shortDecimal reads s when it is 1 to 15 decimal digits and nothing else
// (the arguments limiter scripts pass, mostly): its value is below 10^15,
// so float64(n) is the number exactly, as strconv.ParseFloat would read it.
func shortDecimal(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 15 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			return 0, false
		}
		n = n*10 + int64(c)
	}
	return n, true
}

// parseNumber converts a string as Lua 5.1 does: decimal (with exponent)
// or hexadecimal after 0x, surrounded by optional white space.
func parseNumber(s string) (float64, bool) {
	s = trimSpace(s)
	if s == "" {
		return 0, false
	}
	body, neg := s, false
	if body[0] == '-' || body[0] == '+' {
		neg, body = body[0] == '-', body[1:]
	}
	if len(body) > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X') {
		n, err := strconv.ParseUint(body[2:], 16, 64)
		if err != nil {
			return 0, false
		}
		f := float64(n)
		if neg {
			f = -f
		}
		return f, true
	}
	if n, ok := shortDecimal(body); ok { // exact: below 2^53
		f := float64(n)
		if neg {
			f = -f
		}
		return f, true
	}
	if f, ok := parseDecimal(body); ok { // exact: a time as a script stored it
		if neg {
			f = -f
		}
		return f, true
	}
	for i := 0; i < len(body); i++ { // only digits, '.', exponent: no "inf", "nan", "_"
		c := body[i]
		if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !strings.Contains(err.Error(), "range") {
		return 0, false
	}
	return f, true
}

// trimSpace trims C's isspace characters from both ends.
func trimSpace(s string) string {
	isSpace := func(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }
	for len(s) > 0 && isSpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isSpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

// rand48 is the 48-bit linear congruential generator of POSIX lrand48,
// which Redis's math.random uses: one per engine, seeded at start as
// lrand48 is, reseeded only by math.randomseed.
type rand48 struct{ x uint64 }

const (
	rand48A    = 0x5DEECE66D
	rand48C    = 0xB
	rand48Mask = 1<<48 - 1
	rand48Max  = math.MaxInt32 // Redis's REDIS_LRAND48_MAX
)

func newRand48() *rand48 { return &rand48{x: 0x1234ABCD330E} }

func (r *rand48) seed(s int32) { r.x = uint64(uint32(s))<<16 | 0x330E }

func (r *rand48) next() int32 {
	r.x = (rand48A*r.x + rand48C) & rand48Mask
	return int32(r.x >> 17)
}

// openRandom replaces math.random and math.randomseed in the math table.
func openRandom(L *lua.LState, math *lua.LTable, r *rand48) {
	math.RawSetString("random", L.NewFunction(func(L *lua.LState) int {
		f := float64(r.next()%rand48Max) / float64(rand48Max)
		switch L.GetTop() {
		case 0:
			L.Push(lua.LNumber(f))
		case 1:
			u := L.CheckInt(1)
			if u < 1 {
				L.ArgError(1, "interval is empty")
			}
			L.Push(lua.LNumber(floor(f*float64(u)) + 1))
		case 2:
			l, u := L.CheckInt(1), L.CheckInt(2)
			if l > u {
				L.ArgError(2, "interval is empty")
			}
			L.Push(lua.LNumber(floor(f*float64(u-l+1)) + float64(l)))
		default:
			L.RaiseError("wrong number of arguments")
		}
		return 1
	}))
	math.RawSetString("randomseed", L.NewFunction(func(L *lua.LState) int {
		r.seed(int32(L.CheckInt(1)))
		return 0
	}))
}

func floor(f float64) float64 { return math.Floor(f) }
