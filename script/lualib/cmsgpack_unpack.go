package lualib

import (
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// msgpackUnpack is cmsgpack.unpack(s): every value in s.
func msgpackUnpack(L *lua.LState) int {
	return msgpackUnpackFull(L, 0, 0)
}

// msgpackUnpackOne is cmsgpack.unpack_one(s [, offset]): the offset after
// the first value (-1 at the end of s), then the value.
func msgpackUnpackOne(L *lua.LState) int {
	offset := optInteger(L, 2, 0)
	keepFirst(L)
	return msgpackUnpackFull(L, 1, offset)
}

// msgpackUnpackLimit is cmsgpack.unpack_limit(s, limit [, offset]): the
// offset after the values (-1 at the end of s), then up to limit values.
func msgpackUnpackLimit(L *lua.LState) int {
	limit := checkInteger(L, 2)
	offset := optInteger(L, 3, 0)
	keepFirst(L)
	return msgpackUnpackFull(L, limit, offset)
}

// keepFirst drops the arguments after the first (a missing first argument
// stays missing, for its "got no value" error).
func keepFirst(L *lua.LState) {
	if L.GetTop() > 1 {
		L.SetTop(1)
	}
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
