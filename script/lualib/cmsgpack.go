package lualib

import (
	"encoding/binary"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// msgpackMaxNesting is lua-cmsgpack's LUACMSGPACK_MAX_NESTING: a table
// nested this deep is packed as nil, which also stops reference cycles.
const msgpackMaxNesting = 16

// OpenCmsgpack registers the global cmsgpack of L.
func OpenCmsgpack(L *lua.LState) {
	mod := newModule(L, map[string]lua.LGFunction{
		"pack":         msgpackPack,
		"unpack":       msgpackUnpack,
		"unpack_one":   msgpackUnpackOne,
		"unpack_limit": msgpackUnpackLimit,
	})
	mod.RawSetString("_NAME", lua.LString("cmsgpack"))
	mod.RawSetString("_VERSION", lua.LString("lua-cmsgpack 0.4.0"))
	mod.RawSetString("_COPYRIGHT", lua.LString("Copyright (C) 2012, Salvatore Sanfilippo"))
	mod.RawSetString("_DESCRIPTION", lua.LString("MessagePack C implementation for Lua"))
	L.SetGlobal("cmsgpack", mod)
}

// msgpackPack is cmsgpack.pack(...): every argument packed, concatenated.
func msgpackPack(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		argError(L, 0, "MessagePack pack needs input.")
	}
	var buf []byte
	for i := 1; i <= n; i++ {
		buf = appendMsgpack(buf, L.Get(i), 0)
	}
	L.Push(lua.LString(buf))
	return 1
}

// appendMsgpack packs v. Types msgpack cannot hold (functions, userdata
// including cjson.null, nil) become nil, and so does a table at nesting
// level msgpackMaxNesting.
func appendMsgpack(buf []byte, v lua.LValue, level int) []byte {
	switch x := v.(type) {
	case lua.LString:
		return appendMsgpackString(buf, string(x))
	case lua.LBool:
		if x {
			return append(buf, 0xc3)
		}
		return append(buf, 0xc2)
	case lua.LNumber:
		return appendMsgpackNumber(buf, float64(x))
	case *lua.LTable:
		if level == msgpackMaxNesting {
			return append(buf, 0xc0)
		}
		if n, ok := msgpackArrayLength(x); ok {
			buf = appendMsgpackHeader(buf, 0x90, 0xdc, 0xdd, uint64(n))
			for i := 1; i <= n; i++ {
				buf = appendMsgpack(buf, x.RawGetInt(i), level+1)
			}
			return buf
		}
		count := 0
		for k, _ := x.Next(lua.LNil); k != lua.LNil; k, _ = x.Next(k) {
			count++
		}
		buf = appendMsgpackHeader(buf, 0x80, 0xde, 0xdf, uint64(count))
		for k, val := x.Next(lua.LNil); k != lua.LNil; k, val = x.Next(k) {
			buf = appendMsgpack(buf, k, level+1)
			buf = appendMsgpack(buf, val, level+1)
		}
		return buf
	}
	return append(buf, 0xc0)
}

// msgpackArrayLength reports whether t's keys are exactly 1..n (the empty
// table included) and n. Keys are counted as lua-cmsgpack does: numbers
// that are positive and equal to their conversion to a 32-bit C int.
func msgpackArrayLength(t *lua.LTable) (int, bool) {
	var max, count int32
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		n, ok := k.(lua.LNumber)
		f := float64(n)
		if !ok || f <= 0 || math.IsInf(f, 0) || float64(truncInt32(f)) != f {
			return 0, false
		}
		if f > float64(max) {
			max = truncInt32(f)
		}
		count++
	}
	return int(max), max == count
}

// appendMsgpackHeader writes the header of a string, array or map of n
// elements: fix is the fixed form's tag (holding up to 15, or 31 for
// strings), tag16 and tag32 the longer forms.
func appendMsgpackHeader(buf []byte, fix, tag16, tag32 byte, n uint64) []byte {
	switch {
	case n <= 15:
		return append(buf, fix|byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(buf, tag16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(buf, tag32), uint32(n))
}

// appendMsgpackString writes s as msgpack's str type (fixstr, str 8, 16,
// 32): lua-cmsgpack uses no bin type.
func appendMsgpackString(buf []byte, s string) []byte {
	n := uint64(len(s))
	switch {
	case n < 32:
		buf = append(buf, 0xa0|byte(n))
	case n <= 0xff:
		buf = append(buf, 0xd9, byte(n))
	case n <= 0xffff:
		buf = binary.BigEndian.AppendUint16(append(buf, 0xda), uint16(n))
	default:
		buf = binary.BigEndian.AppendUint32(append(buf, 0xdb), uint32(n))
	}
	return append(buf, s...)
}

// appendMsgpackNumber writes an integral number that fits in 64 bits as
// the smallest integer format, other numbers as float 32 when that holds
// them exactly (infinities included) and as float 64 otherwise (NaN
// included).
func appendMsgpackNumber(buf []byte, f float64) []byte {
	if !math.IsInf(f, 0) && float64(truncInt64(f)) == f {
		return appendMsgpackInt(buf, truncInt64(f))
	}
	if f32 := float32(f); float64(f32) == f {
		return binary.BigEndian.AppendUint32(append(buf, 0xca), math.Float32bits(f32))
	}
	return binary.BigEndian.AppendUint64(append(buf, 0xcb), math.Float64bits(f))
}

func appendMsgpackInt(buf []byte, n int64) []byte {
	if n >= 0 {
		switch {
		case n <= 127:
			return append(buf, byte(n))
		case n <= 0xff:
			return append(buf, 0xcc, byte(n))
		case n <= 0xffff:
			return binary.BigEndian.AppendUint16(append(buf, 0xcd), uint16(n))
		case n <= 0xffffffff:
			return binary.BigEndian.AppendUint32(append(buf, 0xce), uint32(n))
		}
		return binary.BigEndian.AppendUint64(append(buf, 0xcf), uint64(n))
	}
	switch {
	case n >= -32:
		return append(buf, byte(n))
	case n >= -128:
		return append(buf, 0xd0, byte(n))
	case n >= -32768:
		return binary.BigEndian.AppendUint16(append(buf, 0xd1), uint16(n))
	case n >= -2147483648:
		return binary.BigEndian.AppendUint32(append(buf, 0xd2), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(buf, 0xd3), uint64(n))
}
