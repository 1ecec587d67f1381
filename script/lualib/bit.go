package lualib

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// OpenBit registers the global bit of L: LuaBitOp's functions, which work
// on the low 32 bits of numbers and return signed 32-bit results.
func OpenBit(L *lua.LState) {
	L.SetGlobal("bit", newModule(L, map[string]lua.LGFunction{
		"tobit":   bitToBit,
		"bnot":    bitNot,
		"band":    bitAnd,
		"bor":     bitOr,
		"bxor":    bitXor,
		"lshift":  bitLShift,
		"rshift":  bitRShift,
		"arshift": bitARShift,
		"rol":     bitRol,
		"ror":     bitRor,
		"bswap":   bitSwap,
		"tohex":   bitToHex,
	}))
}

// bitArg converts argument n as LuaBitOp does: adding 2^52+2^51 to the
// number and keeping the low 32 bits of the double's representation, which
// rounds to the nearest integer (ties to even) modulo 2^32 for numbers below
// 2^51 and gives LuaBitOp's particular bits beyond. Strings that are numbers
// are converted; a non-number is an error (it would convert to 0).
func bitArg(L *lua.LState, n int) uint32 {
	f, ok := toNumber(L.Get(n))
	b := uint32(math.Float64bits(f + 6755399441055744.0))
	if b == 0 && !ok {
		typeError(L, n, "number")
	}
	return b
}

// bitReturn pushes b as a signed 32-bit number.
func bitReturn(L *lua.LState, b uint32) int {
	L.Push(lua.LNumber(int32(b)))
	return 1
}

func bitToBit(L *lua.LState) int { return bitReturn(L, bitArg(L, 1)) }

func bitNot(L *lua.LState) int { return bitReturn(L, ^bitArg(L, 1)) }

// bitFold combines all arguments with op, from the last one down to the
// second (LuaBitOp's order, which decides which bad argument is reported).
func bitFold(L *lua.LState, op func(a, b uint32) uint32) int {
	b := bitArg(L, 1)
	for i := L.GetTop(); i > 1; i-- {
		b = op(b, bitArg(L, i))
	}
	return bitReturn(L, b)
}

func bitAnd(L *lua.LState) int { return bitFold(L, func(a, b uint32) uint32 { return a & b }) }
func bitOr(L *lua.LState) int  { return bitFold(L, func(a, b uint32) uint32 { return a | b }) }
func bitXor(L *lua.LState) int { return bitFold(L, func(a, b uint32) uint32 { return a ^ b }) }

// bitShift applies op to argument 1 and argument 2 modulo 32.
func bitShift(L *lua.LState, op func(b uint32, n uint) uint32) int {
	b := bitArg(L, 1)
	n := uint(bitArg(L, 2) & 31)
	return bitReturn(L, op(b, n))
}

func bitLShift(L *lua.LState) int {
	return bitShift(L, func(b uint32, n uint) uint32 { return b << n })
}

func bitRShift(L *lua.LState) int {
	return bitShift(L, func(b uint32, n uint) uint32 { return b >> n })
}

func bitARShift(L *lua.LState) int {
	return bitShift(L, func(b uint32, n uint) uint32 { return uint32(int32(b) >> n) })
}

func bitRol(L *lua.LState) int {
	return bitShift(L, func(b uint32, n uint) uint32 { return b<<n | b>>(32-n) })
}

func bitRor(L *lua.LState) int {
	return bitShift(L, func(b uint32, n uint) uint32 { return b<<(32-n) | b>>n })
}

func bitSwap(L *lua.LState) int {
	b := bitArg(L, 1)
	return bitReturn(L, b>>24|b>>8&0xff00|(b&0xff00)<<8|b<<24)
}

// bitToHex is bit.tohex(x [, n]): the low |n| hex digits of x (8 when n is
// absent, at most 8), upper case when n is negative.
func bitToHex(L *lua.LState) int {
	b := bitArg(L, 1)
	n := int32(8)
	if L.GetTop() >= 2 {
		n = int32(bitArg(L, 2))
	}
	digits := "0123456789abcdef"
	if n < 0 {
		n = -n
		digits = "0123456789ABCDEF"
	}
	if n > 8 {
		n = 8
	}
	if n < 0 { // -2^31 stays negative; LuaBitOp would misbehave, give ""
		n = 0
	}
	buf := make([]byte, n)
	for i := n - 1; i >= 0; i-- {
		buf[i] = digits[b&15]
		b >>= 4
	}
	L.Push(lua.LString(buf))
	return 1
}
