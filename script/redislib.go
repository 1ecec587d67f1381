package script

import (
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/turnstile/turnstile/command"
)

// Errors redis.call reports (Redis's texts).
const (
	errNoArgs      = "Please specify at least one argument for this redis lib call"
	errArgType     = "Lua redis lib command arguments must be strings or integers"
	errUnknownCmd  = "Unknown Redis command called from script"
	errWrongArgs   = "Wrong number of args calling Redis command from script"
	errNotAllowed  = "This Redis command is not allowed from script"
	errWriteInRO   = "Write commands are not allowed from read-only scripts."
	errRespVersion = "RESP version must be 2 or 3."
)

// Replication flags of redis.set_repl (accepted; every write of a script
// reaches the log as its effects whatever they say).
const (
	replNone    = 0
	replAOF     = 1
	replReplica = 2
	replAll     = 3
)

// redisLib builds the redis table.
func (e *Engine) redisLib() *lua.LTable {
	L := e.lua
	t := L.NewTable()
	fns := map[string]lua.LGFunction{
		"call":               func(L *lua.LState) int { return e.call(L, true) },
		"pcall":              func(L *lua.LState) int { return e.call(L, false) },
		"error_reply":        errorReply,
		"status_reply":       statusReply,
		"sha1hex":            sha1hex,
		"log":                e.log,
		"setresp":            e.setresp,
		"set_repl":           setRepl,
		"replicate_commands": func(L *lua.LState) int { L.Push(lua.LTrue); return 1 },
		"breakpoint":         func(L *lua.LState) int { L.Push(lua.LFalse); return 1 },
		"debug":              func(L *lua.LState) int { return 0 },
		"acl_check_cmd":      e.aclCheckCmd,
	}
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	for name, v := range map[string]int{
		"LOG_DEBUG": LogDebug, "LOG_VERBOSE": LogVerbose, "LOG_NOTICE": LogNotice, "LOG_WARNING": LogWarning,
		"REPL_NONE": replNone, "REPL_AOF": replAOF, "REPL_SLAVE": replReplica, "REPL_REPLICA": replReplica, "REPL_ALL": replAll,
	} {
		t.RawSetString(name, lua.LNumber(v))
	}
	t.RawSetString("REDIS_VERSION", lua.LString(e.cfg.Version))
	t.RawSetString("REDIS_VERSION_NUM", lua.LNumber(e.cfg.VersionNum))
	return t
}

// scratchKeep is the size up to which the buffer of redis.call's replies
// is kept from one call to the next (a larger one is released).
const scratchKeep = 16 << 10

// call is redis.call (raise) and redis.pcall.
func (e *Engine) call(L *lua.LState, raise bool) int {
	r := e.cur
	if r == nil { // called outside a run (from a coroutine kept alive?)
		return e.callError(L, raise, "ERR "+errUnknownCmd)
	}
	args, errText := e.luaArgs(L)
	if errText != "" {
		return e.callError(L, raise, "ERR "+errText)
	}
	arity, flags, ok := r.req.Host.Lookup(args)
	switch {
	case !ok:
		return e.callError(L, raise, "ERR "+errUnknownCmd)
	case !command.CheckArity(arity, len(args)):
		return e.callError(L, raise, "ERR "+errWrongArgs)
	case flags&command.NoScript != 0:
		return e.callError(L, raise, "ERR "+errNotAllowed)
	case flags&(command.Write|command.MayReplicate) != 0 && r.readOnly:
		return e.callError(L, raise, "ERR "+errWriteInRO)
	}
	if flags&command.Write != 0 {
		e.wrote.Store(true)
	}
	w := &e.scratch
	w.Reset(scratchKeep)
	w.SetRESP3(r.resp3)
	r.req.Host.Call(args, w)
	v, _, isErr := parseReply(L, w.Bytes())
	if isErr && raise {
		L.Error(v, 1)
	}
	L.Push(v)
	return 1
}

// callError answers a refused redis.call: raised by call, returned (as an
// error table) by pcall.
func (e *Engine) callError(L *lua.LState, raise bool, msg string) int {
	t := errTable(L, msg)
	if raise {
		L.Error(t, 1)
	}
	L.Push(t)
	return 1
}

// raise raises the error table {err="ERR "+msg}, as Redis's library
// functions do: unlike a Lua error, it carries no position prefix.
func raise(L *lua.LState, msg string) {
	L.Error(errTable(L, "ERR "+msg), 1)
}

// errTable returns {err=msg}.
func errTable(L *lua.LState, msg string) *lua.LTable {
	t := L.CreateTable(0, 1)
	t.RawSetString("err", lua.LString(msg))
	return t
}

// luaArgs converts redis.call's arguments to bytes, in the run's arena
// (valid until the run ends: effects may point into it). Numbers are
// formatted as Lua formats them (%.14g).
func (e *Engine) luaArgs(L *lua.LState) ([][]byte, string) {
	n := L.GetTop()
	if n == 0 {
		return nil, errNoArgs
	}
	start := len(e.argv)
	var num [32]byte
	for i := 1; i <= n; i++ {
		var s string // a string argument, or
		var b []byte // a number's text
		switch v := L.Get(i).(type) {
		case lua.LString:
			s = string(v)
		case lua.LNumber:
			b = appendArg(num[:0], float64(v))
		default:
			e.argv = e.argv[:start]
			return nil, errArgType
		}
		if size := len(s) + len(b); cap(e.arena)-len(e.arena) < size { // a new chunk: earlier arguments stay put
			e.arena = make([]byte, 0, max(size, 2*cap(e.arena), 1024))
		}
		from := len(e.arena)
		e.arena = append(append(e.arena, s...), b...)
		e.argv = append(e.argv, e.arena[from:len(e.arena):len(e.arena)])
	}
	return e.argv[start:len(e.argv):len(e.argv)], ""
}

// formatArg formats a number argument of redis.call as Redis does
// ("%.17g": exact, unlike tostring's "%.14g").
func formatArg(f float64) string { return string(appendArg(nil, f)) }

// appendArg appends f formatted as formatArg does.
func appendArg(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	case math.IsNaN(f):
		return append(dst, "nan"...)
	case f == math.Trunc(f) && math.Abs(f) < 1e15 && (f != 0 || !math.Signbit(f)):
		return strconv.AppendInt(dst, int64(f), 10) // what %.17g prints for these
	}
	if out, ok := appendGFast(dst, f, 17); ok {
		return out
	}
	return strconv.AppendFloat(dst, f, 'g', 17, 64)
}

// formatNumber formats a Lua number as Lua 5.1's tostring does ("%.14g").
func formatNumber(f float64) string { return string(appendNumber(nil, f)) }

// appendNumber appends f formatted as formatNumber does.
func appendNumber(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	case math.IsNaN(f):
		if math.Signbit(f) {
			return append(dst, "-nan"...)
		}
		return append(dst, "nan"...)
	case f == math.Trunc(f) && math.Abs(f) < 1e14 && (f != 0 || !math.Signbit(f)):
		return strconv.AppendInt(dst, int64(f), 10) // at most 14 digits: what %.14g prints
	}
	return appendG14(dst, f)
}

// appendG14 is C's printf("%.14g"): the 14 significant digits and the
// exponent X of "%.13e", laid out as "%.13e" when X < -4 or X >= 14, else
// as "%.(13-X)f" (the same digits), trailing zeros removed either way.
func appendG14(dst []byte, f float64) []byte {
	if out, ok := appendGFast(dst, f, 14); ok {
		return out
	}
	return appendG14Slow(dst, f)
}

// appendG14Slow is appendG14 through strconv's "%.13e", for every f.
func appendG14Slow(dst []byte, f float64) []byte {
	var tmp [32]byte
	e := strconv.AppendFloat(tmp[:0], f, 'e', 13, 64) // [-]d.ddddddddddddde±XX
	if e[0] == '-' {
		dst = append(dst, '-')
		e = e[1:]
	}
	at := len(e) - 1
	for e[at] != 'e' {
		at--
	}
	exp := 0
	for _, c := range e[at+2:] {
		exp = exp*10 + int(c-'0')
	}
	if e[at+1] == '-' {
		exp = -exp
	}
	start := len(dst)
	if exp < -4 || exp >= 14 {
		dst = trimZeros(append(dst, e[:at]...), start)
		dst = append(dst, 'e', e[at+1])
		if exp < 0 {
			exp = -exp
		}
		if exp < 10 {
			dst = append(dst, '0')
		}
		return strconv.AppendInt(dst, int64(exp), 10)
	}
	var digits [14]byte
	digits[0] = e[0]
	copy(digits[1:], e[2:at])
	if exp >= 0 {
		dst = append(dst, digits[:exp+1]...)
		dst = append(dst, '.')
		dst = append(dst, digits[exp+1:]...)
	} else {
		dst = append(dst, '0', '.')
		for range -exp - 1 {
			dst = append(dst, '0')
		}
		dst = append(dst, digits[:]...)
	}
	return trimZeros(dst, start)
}

// trimZeros removes the trailing zeros of the fraction in b[start:], and
// the point if nothing is left after it.
func trimZeros(b []byte, start int) []byte {
	hasPoint := false
	for _, c := range b[start:] {
		if c == '.' {
			hasPoint = true
		}
	}
	if !hasPoint {
		return b
	}
	for b[len(b)-1] == '0' {
		b = b[:len(b)-1]
	}
	if b[len(b)-1] == '.' {
		b = b[:len(b)-1]
	}
	return b
}

// errorReply is redis.error_reply(msg): {err=msg}, with Redis's rule for
// the error code: "-CODE text" keeps CODE, anything else gets ERR.
func errorReply(L *lua.LState) int {
	if L.GetTop() != 1 || L.Get(1).Type() != lua.LTString {
		L.Push(errTable(L, "ERR wrong number or type of arguments"))
		return 1
	}
	L.Push(errTable(L, errorCode(L.ToString(1))))
	return 1
}

// errorCode normalizes an error message as Redis does: without a leading
// "-" or trailing newline, and with the code ERR when it has none (no
// space: the first word is taken to be the code when there is one).
func errorCode(msg string) string {
	msg = strings.TrimRight(strings.TrimPrefix(msg, "-"), "\r\n")
	if !strings.Contains(msg, " ") {
		return "ERR " + msg
	}
	return msg
}

// statusReply is redis.status_reply(msg): {ok=msg}.
func statusReply(L *lua.LState) int {
	if L.GetTop() != 1 || L.Get(1).Type() != lua.LTString {
		L.Push(errTable(L, "ERR wrong number or type of arguments"))
		return 1
	}
	t := L.CreateTable(0, 1)
	t.RawSetString("ok", L.Get(1))
	L.Push(t)
	return 1
}

// sha1hex is redis.sha1hex(s).
func sha1hex(L *lua.LState) int {
	if L.GetTop() != 1 {
		raise(L, "wrong number of arguments")
	}
	s := L.ToString(1)
	L.Push(lua.LString(SHA1Hex([]byte(s))))
	return 1
}

// log is redis.log(level, ...): the arguments joined by spaces.
func (e *Engine) log(L *lua.LState) int {
	n := L.GetTop()
	if n < 2 {
		raise(L, "redis.log() requires two arguments or more.")
	}
	lv, ok := L.Get(1).(lua.LNumber)
	if !ok {
		raise(L, "First argument must be a number (log level).")
	}
	level := int(lv)
	if level < LogDebug || level > LogWarning {
		raise(L, "Invalid debug level.")
	}
	var b strings.Builder
	for i := 2; i <= n; i++ {
		if i > 2 {
			b.WriteByte(' ')
		}
		b.WriteString(L.ToStringMeta(L.Get(i)).String())
	}
	if r := e.cur; r != nil {
		r.req.Host.Log(level, b.String())
	}
	return 0
}

// setresp is redis.setresp(2|3): the protocol of redis.call's replies, and
// of the conversion of the script's own reply.
func (e *Engine) setresp(L *lua.LState) int {
	if L.GetTop() != 1 {
		raise(L, "redis.setresp() requires one argument.")
	}
	n, ok := L.Get(1).(lua.LNumber)
	if !ok || (n != 2 && n != 3) {
		raise(L, errRespVersion)
	}
	if r := e.cur; r != nil {
		r.resp3 = n == 3
	}
	return 0
}

// setRepl is redis.set_repl(flags): checked and accepted.
func setRepl(L *lua.LState) int {
	if L.GetTop() != 1 {
		raise(L, "redis.set_repl() requires two arguments.")
	}
	n, ok := L.Get(1).(lua.LNumber)
	if !ok || n < replNone || n > replAll || n != lua.LNumber(int(n)) {
		raise(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
	}
	return 0
}

// aclCheckCmd is redis.acl_check_cmd(cmd, ...): true for any existing
// command (Turnstile has no per-user command rules yet).
func (e *Engine) aclCheckCmd(L *lua.LState) int {
	args, errText := e.luaArgs(L)
	if errText != "" {
		raise(L, errText)
	}
	if r := e.cur; r != nil {
		if _, _, ok := r.req.Host.Lookup(args); !ok {
			raise(L, "Invalid command passed to redis.acl_check_cmd()")
		}
	}
	L.Push(lua.LTrue)
	return 1
}
