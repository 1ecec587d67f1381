package lualib

import (
	"fmt"
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Open registers the four libraries as the globals cjson, cmsgpack, bit and
// struct of L, as Redis 7.0 does for its scripts.
func Open(L *lua.LState) {
	OpenCJSON(L)
	OpenCmsgpack(L)
	OpenBit(L)
	OpenStruct(L)
}

// luaMaxCStack is LUAI_MAXCSTACK of Redis's Lua 5.1: the number of stack
// slots a C function may use. lua-cjson and lua-cmsgpack check against it
// (through lua_checkstack), so their nesting and result-count limits depend
// on it; the decoders here count slots the same way to fail where Redis
// fails.
const luaMaxCStack = 8000

// newModule builds a library table holding fns, each a closure over upvalues.
func newModule(L *lua.LState, fns map[string]lua.LGFunction, upvalues ...lua.LValue) *lua.LTable {
	mod := L.NewTable()
	for name, fn := range fns {
		mod.RawSetString(name, L.NewClosure(fn, upvalues...))
	}
	return mod
}

// callerIsLua reports whether the running Go function was called by a Lua
// function (not by a Go function such as pcall, nor directly by the host).
func callerIsLua(L *lua.LState) bool {
	caller, ok := L.GetStack(1)
	if !ok {
		return false
	}
	_, err := L.GetInfo("S", caller, lua.LNil)
	return err == nil && caller.What != "G"
}

// callName is the name under which the running Go function was called, as
// gopher-lua reports it, or "?" where Lua 5.1 has no name either (called
// from Go, from an expression, as a coroutine's body).
func callName(L *lua.LState) string {
	if !callerIsLua(L) {
		return "?"
	}
	dbg, ok := L.GetStack(0)
	if !ok {
		return "?"
	}
	if _, err := L.GetInfo("n", dbg, lua.LNil); err != nil {
		return "?"
	}
	switch name := dbg.Name; {
	case name == "", name == "(anonymous)", name == "main chunk", name == "corountine", strings.HasPrefix(name, "<"):
		return "?"
	default:
		return name
	}
}

// raise raises msg as a Lua error the way luaL_error does: prefixed with
// the position of the calling Lua code, or with nothing when there is none
// (pcall(cjson.encode, x), or a call from the host, gets the bare message,
// as in Lua 5.1).
func raise(L *lua.LState, msg string) {
	if !callerIsLua(L) {
		L.Error(lua.LString(msg), 0)
	}
	L.RaiseError("%s", msg)
}

// raisef is raise with a message formatted by fmt.Sprintf.
func raisef(L *lua.LState, format string, args ...any) {
	raise(L, fmt.Sprintf(format, args...))
}

// argError raises Lua 5.1's "bad argument #n to 'f' (msg)" (luaL_argerror).
func argError(L *lua.LState, n int, msg string) {
	raise(L, fmt.Sprintf("bad argument #%d to '%s' (%s)", n, callName(L), msg))
}

// typeName is Lua 5.1's name of the type of argument n, "no value" when
// there is no such argument.
func typeName(L *lua.LState, n int) string {
	if n > L.GetTop() {
		return "no value"
	}
	return L.Get(n).Type().String()
}

// typeError raises Lua 5.1's "bad argument #n to 'f' (T expected, got U)".
func typeError(L *lua.LState, n int, expected string) {
	argError(L, n, expected+" expected, got "+typeName(L, n))
}

// toNumber converts v as lua_tonumber does: numbers as they are, strings
// that Lua 5.1 reads as numbers converted, anything else not at all.
func toNumber(v lua.LValue) (float64, bool) {
	switch x := v.(type) {
	case lua.LNumber:
		return float64(x), true
	case lua.LString:
		return str2number(string(x))
	}
	return 0, false
}

// checkNumber is luaL_checknumber.
func checkNumber(L *lua.LState, n int) float64 {
	f, ok := toNumber(L.Get(n))
	if !ok {
		typeError(L, n, "number")
	}
	return f
}

// checkInteger is luaL_checkinteger on 64-bit Linux: the number truncated
// toward zero to 64 bits (NaN and out-of-range values give math.MinInt64,
// as the x86-64 conversion does).
func checkInteger(L *lua.LState, n int) int64 {
	return truncInt64(checkNumber(L, n))
}

// optInteger is luaL_optinteger: def when argument n is absent or nil.
func optInteger(L *lua.LState, n int, def int64) int64 {
	if L.Get(n) == lua.LNil {
		return def
	}
	return checkInteger(L, n)
}

// checkString is luaL_checklstring: strings as they are, numbers formatted
// as Lua 5.1 formats them ("%.14g"), anything else an error.
func checkString(L *lua.LState, n int) string {
	switch x := L.Get(n).(type) {
	case lua.LString:
		return string(x)
	case lua.LNumber:
		return formatG(float64(x), 14)
	}
	typeError(L, n, "string")
	return ""
}

// truncInt64 converts f to int64 the way x86-64's cvttsd2si does: toward
// zero, and math.MinInt64 for NaN and values out of range.
func truncInt64(f float64) int64 {
	if f != f || f >= 0x1p63 || f < -0x1p63 {
		return math.MinInt64
	}
	return int64(f)
}

// truncInt32 converts f to int32 as the 32-bit cvttsd2si does: toward
// zero, and math.MinInt32 for NaN and values out of range.
func truncInt32(f float64) int32 {
	if f != f || f >= 0x1p31 || f < -0x1p31 {
		return math.MinInt32
	}
	return int32(f)
}

// truncUint64 converts f to uint64 as GCC's x86-64 code for a C cast does:
// values not at least 2^63 (NaN included) through cvttsd2si, larger ones by
// subtracting 2^63 first and flipping the top bit back (so 2^64 and beyond
// give 0).
func truncUint64(f float64) uint64 {
	if !(f >= 0x1p63) {
		return uint64(truncInt64(f))
	}
	return uint64(truncInt64(f-0x1p63)) ^ (1 << 63)
}
