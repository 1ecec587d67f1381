package script

import (
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/turnstile/turnstile/resp"
)

// maxReplyDepth bounds the nesting of a script's reply (a table that
// contains itself would otherwise never end).
const maxReplyDepth = 1000

// writeValue converts a script's return value into a reply, as Redis
// does: a number is an integer (truncated), a string a bulk string, true
// 1 and false a null (under redis.setresp(3): booleans), nil a null; a
// table {err=s} an error, {ok=s} a status, {double=n}, {big_number=s},
// {verbatim_string=...}, {map=...}, {set=...} their RESP3 types (or their
// RESP2 forms), and any other table an array of its elements up to the
// first nil. resp3 is the script's redis.setresp choice; w's own protocol
// is the client's.
func (e *Engine) writeValue(w *resp.Writer, v lua.LValue, resp3 bool, depth int) {
	if depth > maxReplyDepth {
		w.Error("ERR reached lua stack limit")
		return
	}
	switch v := v.(type) {
	case lua.LString:
		w.BulkString(string(v))
	case lua.LNumber:
		w.Int(luaToInt(float64(v)))
	case lua.LBool:
		switch {
		case resp3:
			w.Bool(bool(v))
		case bool(v):
			w.Int(1)
		default:
			w.Null()
		}
	case *lua.LTable:
		e.writeTable(w, v, resp3, depth)
	default:
		w.Null()
	}
}

func (e *Engine) writeTable(w *resp.Writer, t *lua.LTable, resp3 bool, depth int) {
	if s, ok := t.RawGetString("err").(lua.LString); ok {
		w.Error(string(s))
		return
	}
	if s, ok := t.RawGetString("ok").(lua.LString); ok {
		w.Status(strings.NewReplacer("\r", " ", "\n", " ").Replace(string(s)))
		return
	}
	if n, ok := t.RawGetString("double").(lua.LNumber); ok {
		w.Double(float64(n))
		return
	}
	if s, ok := t.RawGetString("big_number").(lua.LString); ok {
		w.BigNumber(string(s))
		return
	}
	if vt, ok := t.RawGetString("verbatim_string").(*lua.LTable); ok {
		format, ok1 := vt.RawGetString("format").(lua.LString)
		text, ok2 := vt.RawGetString("string").(lua.LString)
		if ok1 && ok2 {
			w.VerbatimFormat(string(format), string(text))
			return
		}
	}
	if m, ok := t.RawGetString("map").(*lua.LTable); ok {
		var n int
		m.ForEach(func(lua.LValue, lua.LValue) { n++ })
		w.Map(n)
		m.ForEach(func(k, v lua.LValue) {
			e.writeValue(w, k, resp3, depth+1)
			e.writeValue(w, v, resp3, depth+1)
		})
		return
	}
	if s, ok := t.RawGetString("set").(*lua.LTable); ok {
		var n int
		s.ForEach(func(lua.LValue, lua.LValue) { n++ })
		w.Set(n)
		s.ForEach(func(k, _ lua.LValue) { e.writeValue(w, k, resp3, depth+1) })
		return
	}
	n := 0
	for t.RawGetInt(n+1) != lua.LNil {
		n++
	}
	w.Array(n)
	for i := 1; i <= n; i++ {
		e.writeValue(w, t.RawGetInt(i), resp3, depth+1)
	}
}

// luaToInt converts a Lua number to an integer reply as Redis's C cast
// does on x86-64: truncated, and the minimum int64 for NaN or a value out
// of range.
func luaToInt(f float64) int64 {
	if math.IsNaN(f) || f >= 9223372036854775807 || f < -9223372036854775808 {
		return math.MinInt64
	}
	return int64(f)
}
