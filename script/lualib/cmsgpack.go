package lualib

import (
	"encoding/binary"
	"math"
	"strings"

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

// msgpackUnpack is cmsgpack.unpack(s): every value in s.
func msgpackUnpack(L *lua.LState) int {
	return msgpackUnpackFull(L, 0, 0)
}

// msgpackUnpackOne is cmsgpack.unpack_one(s [, offset]): the offset after
// the first value (-1 at the end of s), then the value.
func msgpackUnpackOne(L *lua.LState) int {
	offset := optInteger(L, 2, 0)
	L.SetTop(1)
	return msgpackUnpackFull(L, 1, offset)
}

// msgpackUnpackLimit is cmsgpack.unpack_limit(s, limit [, offset]): the
// offset after the values (-1 at the end of s), then up to limit values.
func msgpackUnpackLimit(L *lua.LState) int {
	limit := checkInteger(L, 2)
	offset := optInteger(L, 3, 0)
	L.SetTop(1)
	return msgpackUnpackFull(L, limit, offset)
}

// msgpackUnpackFull decodes up to limit values of argument 1 from offset;
// limit and offset both 0 means all values, and then no offset is returned.
func msgpackUnpackFull(L *lua.LState, limit, offset int64) int {
	s := checkString(L, 1)
	if offset < 0 || limit < 0 {
		// lua-cmsgpack reports the input length where it means the limit.
		raisef(L, "Invalid request to unpack with offset of %d and limit of %d.", int32(offset), int32(len(s)))
	}
	if offset > int64(len(s)) {
		raisef(L, "Start offset %d greater than input length %d.", int32(offset), int32(len(s)))
	}
	all := limit == 0 && offset == 0
	if all {
		limit = math.MaxInt32
	}
	d := msgpackDecoder{L: L, data: s, pos: int(offset)}
	var values []lua.LValue
	for d.pos < len(d.data) && int64(len(values)) < limit {
		// The values decoded so far stay on the Lua stack above the
		// argument, which counts against the C stack limit.
		v, err := d.value(1 + len(values))
		switch err {
		case errMsgpackEOF:
			raise(L, "Missing bytes in input.")
		case errMsgpackFormat:
			raise(L, "Bad data format in input.")
		}
		values = append(values, v)
	}
	n := len(values)
	if !all {
		next := int64(d.pos)
		if d.pos == len(d.data) {
			next = -1
		}
		L.Push(lua.LNumber(next))
		n++
	}
	for _, v := range values {
		L.Push(v)
	}
	return n
}

type msgpackError string

func (e msgpackError) Error() string { return string(e) }

const (
	errMsgpackEOF    = msgpackError("missing bytes")
	errMsgpackFormat = msgpackError("bad data format")
)

// msgpackDecoder reads values from data[pos:].
type msgpackDecoder struct {
	L    *lua.LState
	data string
	pos  int
}

// need fails with errMsgpackEOF unless n more bytes are there.
func (d *msgpackDecoder) need(n uint64) error {
	if uint64(len(d.data)-d.pos) < n {
		return errMsgpackEOF
	}
	return nil
}

// uint reads the n-byte big-endian unsigned integer at pos+1.
func (d *msgpackDecoder) uint(n int) uint64 {
	var v uint64
	for i := d.pos + 1; i <= d.pos+n; i++ {
		v = v<<8 | uint64(d.data[i])
	}
	return v
}

// value decodes one value; slots is how many Lua stack slots lua-cmsgpack
// would be using at this point, for its stack checks.
func (d *msgpackDecoder) value(slots int) (lua.LValue, error) {
	if err := d.need(1); err != nil {
		return nil, err
	}
	if slots+1 > luaMaxCStack {
		raise(d.L, "stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)")
	}
	c := d.data[d.pos]
	switch c {
	case 0xc0:
		d.pos++
		return lua.LNil, nil
	case 0xc2, 0xc3:
		d.pos++
		return lua.LBool(c == 0xc3), nil
	case 0xcc, 0xcd, 0xce, 0xcf, 0xd0, 0xd1, 0xd2, 0xd3, 0xca, 0xcb:
		return d.number(c)
	case 0xd9:
		return d.str(1)
	case 0xda:
		return d.str(2)
	case 0xdb:
		return d.str(4)
	case 0xdc, 0xdd, 0xde, 0xdf:
		size := 2
		if c == 0xdd || c == 0xdf {
			size = 4
		}
		if err := d.need(uint64(1 + size)); err != nil {
			return nil, err
		}
		n := d.uint(size)
		d.pos += 1 + size
		if c <= 0xdd {
			return d.array(n, slots)
		}
		return d.table(n, slots)
	}
	switch {
	case c < 0x80: // positive fixint
		d.pos++
		return lua.LNumber(c), nil
	case c >= 0xe0: // negative fixint
		d.pos++
		return lua.LNumber(int8(c)), nil
	case c&0xe0 == 0xa0: // fixstr
		n := uint64(c & 0x1f)
		if err := d.need(1 + n); err != nil {
			return nil, err
		}
		v := strings.Clone(d.data[d.pos+1 : d.pos+1+int(n)])
		d.pos += 1 + int(n)
		return lua.LString(v), nil
	case c&0xf0 == 0x90:
		d.pos++
		return d.array(uint64(c&0xf), slots)
	case c&0xf0 == 0x80:
		d.pos++
		return d.table(uint64(c&0xf), slots)
	}
	return nil, errMsgpackFormat
}

// number decodes the integer and float formats. Unsigned 64-bit values
// wrap to negative numbers as in lua-cmsgpack (which pushes them as a
// signed lua_Integer).
func (d *msgpackDecoder) number(c byte) (lua.LValue, error) {
	size := 8
	switch c {
	case 0xcc, 0xd0:
		size = 1
	case 0xcd, 0xd1:
		size = 2
	case 0xce, 0xd2, 0xca:
		size = 4
	}
	if err := d.need(uint64(1 + size)); err != nil {
		return nil, err
	}
	u := d.uint(size)
	d.pos += 1 + size
	var f float64
	switch c {
	case 0xcc, 0xcd, 0xce:
		f = float64(u)
	case 0xd0:
		f = float64(int8(u))
	case 0xd1:
		f = float64(int16(u))
	case 0xd2:
		f = float64(int32(u))
	case 0xcf, 0xd3:
		f = float64(int64(u))
	case 0xca:
		f = float64(math.Float32frombits(uint32(u)))
	case 0xcb:
		f = math.Float64frombits(u)
	}
	return lua.LNumber(f), nil
}

// str decodes a str 8, 16 or 32 whose length takes size bytes.
func (d *msgpackDecoder) str(size int) (lua.LValue, error) {
	if err := d.need(uint64(1 + size)); err != nil {
		return nil, err
	}
	n := d.uint(size)
	if err := d.need(uint64(1+size) + n); err != nil {
		return nil, err
	}
	start := d.pos + 1 + size
	d.pos = start + int(n)
	return lua.LString(strings.Clone(d.data[start:d.pos])), nil
}

// array decodes n values into t[1..n]; nil values leave holes.
func (d *msgpackDecoder) array(n uint64, slots int) (lua.LValue, error) {
	if slots+2 > luaMaxCStack { // the table is pushed, then one more slot checked
		raise(d.L, "stack overflow (in function mp_decode_to_lua_array)")
	}
	t := d.L.NewTable()
	for i := uint64(1); i <= n; i++ {
		v, err := d.value(slots + 2) // the table and the index
		if err != nil {
			return nil, err
		}
		t.RawSet(lua.LNumber(i), v)
	}
	return t, nil
}

// table decodes n key and value pairs; a nil or NaN key is a Lua error, as
// lua_settable makes it.
func (d *msgpackDecoder) table(n uint64, slots int) (lua.LValue, error) {
	t := d.L.NewTable()
	for i := uint64(0); i < n; i++ {
		k, err := d.value(slots + 1) // the table
		if err != nil {
			return nil, err
		}
		v, err := d.value(slots + 2) // the table and the key
		if err != nil {
			return nil, err
		}
		switch {
		case k == lua.LNil:
			d.L.Error(lua.LString("table index is nil"), 0)
		case isNaN(k):
			d.L.Error(lua.LString("table index is NaN"), 0)
		}
		t.RawSet(k, v)
	}
	return t, nil
}

func isNaN(v lua.LValue) bool {
	n, ok := v.(lua.LNumber)
	return ok && n != n
}
