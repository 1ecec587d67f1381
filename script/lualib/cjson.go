package lualib

import (
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// cjsonConfig is one cjson module's settings (lua-cjson keeps them in a
// userdata that all of the module's functions share as an upvalue). Each
// OpenCJSON and each cjson.new() makes its own.
type cjsonConfig struct {
	sparseConvert  bool
	sparseRatio    int32
	sparseSafe     int32
	encodeMaxDepth int32
	decodeMaxDepth int32
	// encodeInvalid: 0 refuses NaN and Inf, 1 writes them (nan, inf,
	// -inf), 2 writes null.
	encodeInvalid   int
	decodeInvalid   bool
	keepBuffer      bool
	numberPrecision int32
	null            lua.LValue
}

func newCJSONConfig(null lua.LValue) *cjsonConfig {
	return &cjsonConfig{
		sparseRatio:     2,
		sparseSafe:      10,
		encodeMaxDepth:  1000,
		decodeMaxDepth:  1000,
		decodeInvalid:   true,
		keepBuffer:      true,
		numberPrecision: 14,
		null:            null,
	}
}

// nullMarker is the Value of the userdata that stands for JSON null; no
// script can make a userdata holding it.
type nullMarker struct{}

// IsNull reports whether v is cjson.null (of any LState).
func IsNull(v lua.LValue) bool {
	ud, ok := v.(*lua.LUserData)
	if !ok {
		return false
	}
	_, ok = ud.Value.(nullMarker)
	return ok
}

// newNull makes the value that OpenCJSON installs as cjson.null. Each LState
// gets its own, so nothing is shared between states.
func newNull(L *lua.LState) *lua.LUserData {
	ud := L.NewUserData()
	ud.Value = nullMarker{}
	return ud
}

// OpenCJSON registers the global cjson of L.
func OpenCJSON(L *lua.LState) {
	L.SetGlobal("cjson", newCJSONModule(L, newNull(L)))
}

// newCJSONModule builds a cjson table with fresh settings; null is shared by
// all modules of one LState so that every decoded null equals cjson.null.
func newCJSONModule(L *lua.LState, null lua.LValue) *lua.LTable {
	cfg := newCJSONConfig(null)
	ud := L.NewUserData()
	ud.Value = cfg
	mod := newModule(L, map[string]lua.LGFunction{
		"encode":                  cjsonEncode,
		"decode":                  cjsonDecode,
		"encode_sparse_array":     cjsonEncodeSparseArray,
		"encode_max_depth":        cjsonEncodeMaxDepth,
		"decode_max_depth":        cjsonDecodeMaxDepth,
		"encode_number_precision": cjsonEncodeNumberPrecision,
		"encode_keep_buffer":      cjsonEncodeKeepBuffer,
		"encode_invalid_numbers":  cjsonEncodeInvalidNumbers,
		"decode_invalid_numbers":  cjsonDecodeInvalidNumbers,
		"new":                     cjsonNew,
	}, ud)
	mod.RawSetString("null", null)
	mod.RawSetString("_NAME", lua.LString("cjson"))
	mod.RawSetString("_VERSION", lua.LString("2.1.0"))
	return mod
}

// cjsonConf fetches the settings from the running closure's upvalue.
func cjsonConf(L *lua.LState) *cjsonConfig {
	if ud, ok := L.Get(lua.UpvalueIndex(1)).(*lua.LUserData); ok {
		if cfg, ok := ud.Value.(*cjsonConfig); ok {
			return cfg
		}
	}
	raise(L, "BUG: Unable to fetch CJSON configuration")
	return nil
}

func cjsonNew(L *lua.LState) int {
	L.Push(newCJSONModule(L, cjsonConf(L).null))
	return 1
}

// cjsonEncode is cjson.encode(value).
func cjsonEncode(L *lua.LState) int {
	cfg := cjsonConf(L)
	if L.GetTop() != 1 {
		argError(L, 1, "expected 1 argument")
	}
	e := jsonEncoder{L: L, cfg: cfg, slots: 1}
	e.value(L.Get(1), 0)
	L.Push(lua.LString(e.buf.String()))
	return 1
}

// jsonEncoder writes one value. slots counts the Lua stack slots lua-cjson
// would be using (the argument, plus one per open array and two per open
// object), because its depth check also fails when the C stack limit is hit.
type jsonEncoder struct {
	L     *lua.LState
	cfg   *cjsonConfig
	buf   strings.Builder
	slots int
}

func (e *jsonEncoder) fail(v lua.LValue, reason string) {
	raise(e.L, "Cannot serialise "+v.Type().String()+": "+reason)
}

func (e *jsonEncoder) value(v lua.LValue, depth int) {
	switch x := v.(type) {
	case lua.LString:
		e.str(string(x))
	case lua.LNumber:
		e.number(x)
	case lua.LBool:
		if x {
			e.buf.WriteString("true")
		} else {
			e.buf.WriteString("false")
		}
	case *lua.LTable:
		depth++
		if int64(depth) > int64(e.cfg.encodeMaxDepth) || e.slots+3 > luaMaxCStack {
			raise(e.L, "Cannot serialise, excessive nesting ("+strconv.Itoa(depth)+")")
		}
		if n := e.arrayLength(x); n > 0 {
			e.array(x, n, depth)
		} else {
			e.object(x, depth)
		}
	case *lua.LNilType:
		e.buf.WriteString("null")
	default:
		if IsNull(v) {
			e.buf.WriteString("null")
			return
		}
		e.fail(v, "type not supported")
	}
}

// arrayLength is lua-cjson's test for an array: every key a number k with
// k >= 1 and integral; it returns the largest key, or -1 for an object. The
// largest key is kept in a C int, so keys of 2^31 and more wrap it to
// INT_MIN (and the table becomes an object unless a smaller key follows).
// A table too sparse (largest key above both ratio*items and safe) is an
// error, or an object when sparse conversion is on.
func (e *jsonEncoder) arrayLength(t *lua.LTable) int {
	var max int32
	var items int32
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		n, ok := k.(lua.LNumber)
		f := float64(n)
		if !ok || f == 0 || math.Floor(f) != f || f < 1 {
			return -1
		}
		if f > float64(max) {
			max = truncInt32(f)
		}
		items++
	}
	cfg := e.cfg
	if cfg.sparseRatio > 0 && max > items*cfg.sparseRatio && max > cfg.sparseSafe {
		if !cfg.sparseConvert {
			e.fail(t, "excessively sparse array")
		}
		return -1
	}
	return int(max)
}

func (e *jsonEncoder) array(t *lua.LTable, n int, depth int) {
	e.slots++
	e.buf.WriteByte('[')
	for i := 1; i <= n; i++ {
		if i > 1 {
			e.buf.WriteByte(',')
		}
		e.value(t.RawGetInt(i), depth)
	}
	e.buf.WriteByte(']')
	e.slots--
}

func (e *jsonEncoder) object(t *lua.LTable, depth int) {
	e.slots += 2
	e.buf.WriteByte('{')
	first := true
	for k, v := t.Next(lua.LNil); k != lua.LNil; k, v = t.Next(k) {
		if !first {
			e.buf.WriteByte(',')
		}
		first = false
		switch key := k.(type) {
		case lua.LNumber:
			e.buf.WriteByte('"')
			e.number(key)
			e.buf.WriteString(`":`)
		case lua.LString:
			e.str(string(key))
			e.buf.WriteByte(':')
		default:
			e.fail(k, "table key must be a number or string")
		}
		e.value(v, depth)
	}
	e.buf.WriteByte('}')
	e.slots -= 2
}

func (e *jsonEncoder) number(n lua.LNumber) {
	f := float64(n)
	bad := math.IsInf(f, 0) || math.IsNaN(f)
	switch e.cfg.encodeInvalid {
	case 0:
		if bad {
			e.fail(n, "must not be NaN or Inf")
		}
	case 1:
		if math.IsNaN(f) {
			e.buf.WriteString("nan")
			return
		}
	default:
		if bad {
			e.buf.WriteString("null")
			return
		}
	}
	e.buf.WriteString(formatG(f, int(e.cfg.numberPrecision)))
}

// str writes s quoted with lua-cjson's escapes: the JSON short forms for
// \b \t \n \f \r " \ and also "/" (as "\/"); \u00XX for other control bytes
// and DEL; every other byte as it is (no UTF-8 checks).
func (e *jsonEncoder) str(s string) {
	const hexDigits = "0123456789abcdef"
	b := &e.buf
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '/':
			b.WriteString(`\/`)
		default:
			if c < 0x20 || c == 0x7f {
				b.WriteString(`\u00`)
				b.WriteByte(hexDigits[c>>4])
				b.WriteByte(hexDigits[c&15])
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
}
