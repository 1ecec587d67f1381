package script

import (
	"bytes"
	"strconv"

	lua "github.com/yuin/gopher-lua"
)

// parseReply converts one RESP reply at the start of b (written by the
// server, so well formed) into the Lua value redis.call returns, as Redis
// converts it:
//
//	integer -> number        bulk -> string       null bulk/array -> false
//	array -> table           status -> {ok=s}     error -> {err=s}
//	RESP3 (after redis.setresp(3)): null -> nil, boolean -> boolean,
//	double -> {double=n}, big number -> {big_number=s},
//	verbatim -> {verbatim_string={format=f, string=s}},
//	map -> {map={k=v...}}, set -> {set={m=true...}}
//
// It returns the value, the rest of b, and whether the reply is an error.
func parseReply(L *lua.LState, b []byte) (lua.LValue, []byte, bool) {
	if len(b) < 3 {
		return lua.LFalse, nil, false
	}
	line, rest := splitLine(b[1:])
	switch b[0] {
	case '+':
		t := L.CreateTable(0, 1)
		t.RawSetString("ok", lua.LString(line))
		return t, rest, false
	case '-':
		return errTable(L, errorCode("-"+string(line))), rest, true
	case ':':
		n, _ := strconv.ParseInt(string(line), 10, 64)
		return luaNumber(float64(n)), rest, false
	case '$', '=':
		n, _ := strconv.Atoi(string(line))
		if n < 0 {
			return lua.LFalse, rest, false
		}
		s := rest[:n]
		rest = rest[n+2:]
		if b[0] == '$' {
			return lua.LString(s), rest, false
		}
		format, text, _ := bytes.Cut(s, []byte(":"))
		v := L.CreateTable(0, 2)
		v.RawSetString("format", lua.LString(format))
		v.RawSetString("string", lua.LString(text))
		t := L.CreateTable(0, 1)
		t.RawSetString("verbatim_string", v)
		return t, rest, false
	case '*', '~', '%', '>':
		n, _ := strconv.Atoi(string(line))
		if n < 0 {
			return lua.LFalse, rest, false
		}
		switch b[0] {
		case '%':
			m := L.CreateTable(0, n)
			for range n {
				var k, v lua.LValue
				k, rest, _ = parseReply(L, rest)
				v, rest, _ = parseReply(L, rest)
				m.RawSet(k, v)
			}
			t := L.CreateTable(0, 1)
			t.RawSetString("map", m)
			return t, rest, false
		case '~':
			s := L.CreateTable(0, n)
			for range n {
				var k lua.LValue
				k, rest, _ = parseReply(L, rest)
				s.RawSet(k, lua.LTrue)
			}
			t := L.CreateTable(0, 1)
			t.RawSetString("set", s)
			return t, rest, false
		}
		t := L.CreateTable(n, 0)
		for i := 1; i <= n; i++ {
			var v lua.LValue
			v, rest, _ = parseReply(L, rest)
			t.RawSetInt(i, v)
		}
		return t, rest, false
	case '_':
		return lua.LNil, rest, false
	case '#':
		return lua.LBool(len(line) > 0 && line[0] == 't'), rest, false
	case ',':
		f, _ := strconv.ParseFloat(string(line), 64)
		t := L.CreateTable(0, 1)
		t.RawSetString("double", lua.LNumber(f))
		return t, rest, false
	case '(':
		t := L.CreateTable(0, 1)
		t.RawSetString("big_number", lua.LString(line))
		return t, rest, false
	case '|': // attributes are dropped: the value follows
		n, _ := strconv.Atoi(string(line))
		for range 2 * n {
			_, rest, _ = parseReply(L, rest)
		}
		return parseReply(L, rest)
	}
	return lua.LFalse, nil, false
}

// splitLine returns the line at the start of b (without CRLF) and what
// follows it.
func splitLine(b []byte) ([]byte, []byte) {
	i := bytes.Index(b, []byte("\r\n"))
	if i < 0 {
		return b, nil
	}
	return b[:i], b[i+2:]
}
