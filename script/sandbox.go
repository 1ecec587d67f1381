package script

import (
	"strconv"

	lua "github.com/yuin/gopher-lua"

	"github.com/turnstile/turnstile/script/lualib"
)

// sandbox is the environment every script runs in: Redis 7.0's globals,
// all of them read-only.
//
// A read-only table is an empty proxy whose metatable reads through to the
// real table (__index) and refuses writes (__newindex); the real tables
// are reachable from no script. The base functions that could write
// through a proxy or reach behind it (rawset, rawget, setmetatable, next,
// pairs) are wrapped to treat a proxy as its read-only target.
type sandbox struct {
	e          *Engine
	real       *lua.LTable                 // the real globals
	globals    *lua.LTable                 // their proxy: every script's environment
	targets    map[*lua.LTable]*lua.LTable // proxy -> real table
	sealed     *lua.LTable                 // the metatable getmetatable shows of a proxy
	keys, argv *lua.LTable                 // KEYS and ARGV of the last run
	argText    []byte                      // fill's buffer (reused)
	errHandler *lua.LFunction
}

// allowedBase are the base library functions Redis 7.0 leaves to scripts.
var allowedBase = []string{
	"assert", "collectgarbage", "error", "gcinfo", "getmetatable", "ipairs",
	"loadstring", "next", "pairs", "pcall", "rawequal", "rawget", "rawset",
	"select", "setmetatable", "tonumber", "tostring", "type", "unpack", "xpcall",
}

const errReadonly = "Attempt to modify a readonly table"

func newSandbox(e *Engine) *sandbox {
	L := e.lua
	sb := &sandbox{e: e, targets: make(map[*lua.LTable]*lua.LTable)}
	// What getmetatable returns for a read-only table: a table (as in
	// Redis) that cannot be written either.
	sb.sealed = L.NewTable()
	L.SetMetatable(sb.sealed, sb.metatable(map[string]lua.LValue{
		"__newindex": L.NewFunction(func(L *lua.LState) int {
			L.RaiseError(errReadonly)
			return 0
		}),
		"__metatable": lua.LFalse,
	}))
	// The libraries, opened into gopher-lua's globals, then moved.
	for _, open := range []lua.LGFunction{lua.OpenBase, lua.OpenTable, lua.OpenString, lua.OpenMath, lua.OpenCoroutine} {
		L.Push(L.NewFunction(open))
		L.Call(0, 0)
	}
	lualib.Open(L)
	g := L.G.Global
	if mt, ok := g.RawGetString("math").(*lua.LTable); ok {
		openRandom(L, mt, newRand48())
	}
	real := L.NewTable()
	for _, name := range allowedBase {
		real.RawSetString(name, g.RawGetString(name))
	}
	real.RawSetString("_VERSION", lua.LString("Lua 5.1"))
	for _, name := range []string{"string", "table", "math", "coroutine", "cjson", "cmsgpack", "bit", "struct"} {
		t, ok := g.RawGetString(name).(*lua.LTable)
		if !ok {
			continue
		}
		real.RawSetString(name, sb.readonly(t))
	}
	real.RawSetString("redis", sb.readonly(e.redisLib()))
	real.RawSetString("KEYS", L.NewTable())
	real.RawSetString("ARGV", L.NewTable())
	sb.real = real
	sb.globals = sb.readonly(real)
	real.RawSetString("_G", sb.globals)
	// Reading an unset global is an error, as in Redis.
	L.SetMetatable(real, sb.metatable(map[string]lua.LValue{
		"__index": L.NewFunction(func(L *lua.LState) int {
			L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.CheckString(2))
			return 0
		}),
	}))
	sb.wrapBase()
	// Strings' methods read the read-only string table too.
	if mt, ok := L.GetMetatable(lua.LString("")).(*lua.LTable); ok {
		mt.RawSetString("__index", real.RawGetString("string"))
		mt.RawSetString("__metatable", sb.readonly(mt))
	}
	// gopher-lua's own globals are left behind: scripts see only real's.
	L.G.Global, L.Env = real, sb.globals
	sb.errHandler = L.NewFunction(sb.handleError)
	return sb
}

// metatable builds a metatable from fields.
func (sb *sandbox) metatable(fields map[string]lua.LValue) *lua.LTable {
	mt := sb.e.lua.NewTable()
	for k, v := range fields {
		mt.RawSetString(k, v)
	}
	return mt
}

// readonly returns a read-only proxy of t.
func (sb *sandbox) readonly(t *lua.LTable) *lua.LTable {
	L := sb.e.lua
	p := L.NewTable()
	L.SetMetatable(p, sb.metatable(map[string]lua.LValue{
		"__index": t,
		"__newindex": L.NewFunction(func(L *lua.LState) int {
			L.RaiseError(errReadonly)
			return 0
		}),
		"__metatable": sb.sealed,
	}))
	sb.targets[p] = t
	return p
}

// envFor returns the environment a compiled script runs in. A script that
// never assigns a global (no SETGLOBAL instruction in it or in any of its
// functions) runs in the real globals table itself, which it can then only
// read (its _G, rawset and setmetatable still see the read-only proxy):
// that saves two table lookups on every global it reads. Any other script
// runs in the proxy, whose __newindex refuses the assignment.
func (sb *sandbox) envFor(proto *lua.FunctionProto) *lua.LTable {
	if assignsGlobal(proto) {
		return sb.globals
	}
	return sb.real
}

func assignsGlobal(p *lua.FunctionProto) bool {
	for _, inst := range p.Code {
		if int(inst>>26) == lua.OP_SETGLOBAL {
			return true
		}
	}
	for _, sub := range p.FunctionPrototypes {
		if assignsGlobal(sub) {
			return true
		}
	}
	return false
}

// target returns the real table behind a proxy, or v itself.
func (sb *sandbox) target(v lua.LValue) lua.LValue {
	if t, ok := v.(*lua.LTable); ok {
		if real, ok := sb.targets[t]; ok {
			return real
		}
	}
	return v
}

// wrapBase replaces the base functions (and table.insert) that could
// write through a proxy or would see an empty proxy instead of its table,
// and pcall, which
// turns the error tables redis.call raises into their message as Redis's
// does.
func (sb *sandbox) wrapBase() {
	L, real := sb.e.lua, sb.real
	refuse := func(L *lua.LState) {
		if _, ok := sb.targets[L.CheckTable(1)]; ok {
			raise(L, errReadonly)
		}
	}
	rawset := real.RawGetString("rawset").(*lua.LFunction)
	real.RawSetString("rawset", L.NewFunction(func(L *lua.LState) int {
		refuse(L)
		return callThrough(L, rawset)
	}))
	setmt := real.RawGetString("setmetatable").(*lua.LFunction)
	real.RawSetString("setmetatable", L.NewFunction(func(L *lua.LState) int {
		refuse(L)
		return callThrough(L, setmt)
	}))
	for _, name := range []string{"rawget", "next", "pairs"} {
		f := real.RawGetString(name).(*lua.LFunction)
		real.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			if L.GetTop() >= 1 {
				L.Replace(1, sb.target(L.Get(1)))
			}
			return callThrough(L, f)
		}))
	}
	// table.insert writes with a raw set, which a proxy's __newindex does
	// not see: it would write into the proxy, shared by later scripts.
	// (table.remove and table.sort of a proxy, empty, write nothing.)
	if lib, ok := sb.target(real.RawGetString("table")).(*lua.LTable); ok {
		if insert, ok := lib.RawGetString("insert").(*lua.LFunction); ok {
			lib.RawSetString("insert", L.NewFunction(func(L *lua.LState) int {
				refuse(L)
				return callThrough(L, insert)
			}))
		}
	}
	real.RawSetString("pcall", L.NewFunction(luaPcall))
	real.RawSetString("error", L.NewFunction(luaError))
	real.RawSetString("tostring", L.NewFunction(luaTostring))
	real.RawSetString("tonumber", L.NewFunction(luaTonumber))
}

// luaError is Lua 5.1's error(v [, level]): a string or number message
// gets the position of the function level levels up, when that is a Lua
// function (none for a Go function, such as pcall), and error() raises
// nil.
func luaError(L *lua.LState) int {
	v := L.Get(1)
	level := L.OptInt(2, 1)
	if n, ok := v.(lua.LNumber); ok {
		v = lua.LString(formatNumber(float64(n)))
	}
	if s, ok := v.(lua.LString); ok && level > 0 {
		v = lua.LString(where(L, level) + string(s))
	}
	L.Error(v, 0)
	return 0
}

// where is luaL_where: "source:line: " of the function level levels up
// the stack, or "" when that is not a Lua function.
func where(L *lua.LState, level int) string {
	dbg, ok := L.GetStack(level)
	if !ok {
		return ""
	}
	if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil || dbg.CurrentLine <= 0 {
		return ""
	}
	return dbg.Source + ":" + strconv.Itoa(dbg.CurrentLine) + ": "
}

// callThrough calls f with the current arguments and returns its results.
func callThrough(L *lua.LState, f *lua.LFunction) int {
	n := L.GetTop()
	L.Insert(f, 1)
	L.Call(n, lua.MultRet)
	return L.GetTop()
}

// luaPcall is pcall as Redis 7 has it: an error that is a table with a
// string err field (what redis.call raises) is caught as that string.
func luaPcall(L *lua.LState) int {
	L.CheckAny(1)
	n := L.GetTop()
	err := L.PCall(n-1, lua.MultRet, nil)
	if err == nil {
		L.Insert(lua.LTrue, 1)
		return L.GetTop()
	}
	obj := lua.LValue(lua.LString(err.Error()))
	if ae, ok := err.(*lua.ApiError); ok {
		obj = ae.Object
	}
	if t, ok := obj.(*lua.LTable); ok {
		if s, ok := t.RawGetString("err").(lua.LString); ok {
			obj = s
		}
	}
	L.SetTop(0)
	L.Push(lua.LFalse)
	L.Push(obj)
	return 2
}

// setArgs sets KEYS and ARGV for the next run. The tables of the last run
// are reused when the script left them as they were given (a script may
// change them: KEYS[1] = 'x' is allowed, as in Redis).
func (sb *sandbox) setArgs(keys, args [][]byte) {
	sb.keys = sb.fill(sb.keys, "KEYS", keys)
	sb.argv = sb.fill(sb.argv, "ARGV", args)
}

// hasFields reports whether t holds anything past its array part (a
// script may set KEYS.x): such a table is not reused.
func hasFields(t *lua.LTable) bool {
	var after lua.LValue = lua.LNil
	if n := t.Len(); n > 0 {
		after = lua.LNumber(n)
	}
	k, _ := t.Next(after)
	return k != lua.LNil
}

// argTextKeep is the size up to which fill keeps its buffer.
const argTextKeep = 64 << 10

// fill sets the table name to vals. A value equal to the one at its
// position in the last run is left as it is, without an allocation:
// limiter scripts get the same limits on every run. The values that
// changed become slices of one new string.
func (sb *sandbox) fill(t *lua.LTable, name string, vals [][]byte) *lua.LTable {
	if t == nil || sb.real.RawGetString(name) != t || t.Len() != t.MaxN() || hasFields(t) {
		t = sb.e.lua.CreateTable(len(vals), 0)
		sb.real.RawSetString(name, t)
	}
	n := t.Len()
	same := func(i int) bool {
		old, ok := t.RawGetInt(i + 1).(lua.LString)
		return ok && string(old) == string(vals[i])
	}
	b := sb.argText[:0]
	for i, v := range vals {
		if !same(i) {
			b = append(b, v...)
		}
	}
	if cap(b) <= argTextKeep {
		sb.argText = b
	}
	text := string(b)
	for i, v := range vals {
		if !same(i) {
			t.RawSetInt(i+1, lua.LString(text[:len(v)]))
			text = text[len(v):]
		}
	}
	for i := n; i > len(vals); i-- {
		t.RawSetInt(i, lua.LNil)
	}
	return t
}

// handleError is the error handler of a script's run: it turns any error
// into an error table {err=, source=, line=} as Redis's handler does,
// "ERR " before the message of an error that is not such a table.
func (sb *sandbox) handleError(L *lua.LState) int {
	v := L.Get(1)
	t, ok := v.(*lua.LTable)
	if !ok || t.RawGetString("err").Type() != lua.LTString {
		msg := "ERR " + L.ToStringMeta(v).String()
		if ok {
			msg = "ERR unknown error"
		}
		t = L.NewTable()
		t.RawSetString("err", lua.LString(msg))
	}
	if t.RawGetString("line") == lua.LNil {
		if line := scriptLine(L); line > 0 {
			t.RawSetString("source", lua.LString("@"+chunkName))
			t.RawSetString("line", lua.LNumber(line))
		}
	}
	L.Push(t)
	return 1
}

// scriptLine returns the line the innermost frame of the script is at,
// or 0.
func scriptLine(L *lua.LState) int {
	for level := 0; level < 64; level++ {
		dbg, ok := L.GetStack(level)
		if !ok {
			return 0
		}
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil {
			continue
		}
		if dbg.Source == chunkName && dbg.CurrentLine > 0 {
			return dbg.CurrentLine
		}
	}
	return 0
}

// errorReply formats a failed run's error as Redis's reply.
func (e *Engine) errorReply(err error, sha string) string {
	ae, ok := err.(*lua.ApiError)
	if !ok {
		return "ERR " + err.Error() + " script: " + sha
	}
	t, ok := ae.Object.(*lua.LTable)
	if !ok {
		return "ERR " + ae.Object.String() + " script: " + sha
	}
	msg := t.RawGetString("err").String()
	if line, ok := t.RawGetString("line").(lua.LNumber); ok {
		return msg + " script: " + sha + ", on @" + chunkName + ":" + strconv.Itoa(int(line)) + "."
	}
	return msg + " script: " + sha
}

// lineOf returns the line an error table names, "?" if none.
func lineOf(err error) string {
	if ae, ok := err.(*lua.ApiError); ok {
		if t, ok := ae.Object.(*lua.LTable); ok {
			if line, ok := t.RawGetString("line").(lua.LNumber); ok {
				return strconv.Itoa(int(line))
			}
		}
	}
	return "?"
}
