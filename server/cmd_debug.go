package server

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/turnstile/turnstile/command"
)

// DEBUG: the subcommands tools and client test suites call (SLEEP,
// OBJECT, SET-ACTIVE-EXPIRE, CHANGE-REPL-ID, LOG, ERROR, PROTOCOL, HELP),
// with Redis's replies. The rest (crashes, RELOAD, DIGEST, JMAP, memory
// internals) answer Redis's unknown-subcommand error. As in Redis 7, DEBUG
// is refused unless enable-debug-command is "yes", or "local" and the
// client connected over loopback.

// debugState is the server state DEBUG changes.
type debugState struct {
	noActiveExpire atomic.Bool // DEBUG SET-ACTIVE-EXPIRE 0
}

func debugCommands() []*Command {
	return []*Command{
		{Name: "debug", Docs: "subcommand:string [arg:string...]", Arity: -2, Flags: command.Admin | command.NoScript | command.Loading | command.Stale, Locks: debugLocks,
			Group: "server", Since: "1.0.0", Summary: "A container for debugging commands.", Handler: cmdDebug},
	}
}

// debugLocks locks DEBUG OBJECT's key (DEBUG declares no key, as in Redis).
func debugLocks(args [][]byte, db, _ int, add func(int, []byte)) {
	if len(args) == 3 && isKeyword(args[1], "object") {
		add(db, args[2])
	}
}

// debugSub is one DEBUG subcommand, with its argument count (with DEBUG
// and the subcommand's name): n exactly, or at least -n.
type debugSub struct {
	name  string
	argc  int
	run   func(x *Ctx)
	usage string
	help  []string
}

// debugSubs lists the subcommands (a function: HELP reads the list).
func debugSubs() []debugSub {
	return []debugSub{
		{"change-repl-id", 2, func(x *Ctx) { x.w.OK() }, "CHANGE-REPL-ID",
			[]string{"Change the replication IDs of the instance (Turnstile has none: a no-op)."}},
		{"error", 3, func(x *Ctx) { x.w.Error(string(x.args[2])) }, "ERROR <string>",
			[]string{"Return a Redis protocol error with <string> as message. Useful for clients", "unit tests to simulate Redis errors."}},
		{"log", 3, debugLog, "LOG <message>", []string{"Write <message> to the server log."}},
		{"object", 3, debugObject, "OBJECT <key>", []string{"Show low level info about `key` and associated value."}},
		{"protocol", 3, debugProtocol, "PROTOCOL <type>", []string{"Reply with a test value of the specified type. <type> can be: string,",
			"integer, double, bignum, null, array, set, map, attrib, push, verbatim,", "true, false."}},
		{"set-active-expire", 3, debugActiveExpire, "SET-ACTIVE-EXPIRE <0|1>", []string{"Setting it to 0 disables expiring keys in background when they are not",
			"accessed (otherwise the Redis behavior). Setting it to 1 reenables back the", "default."}},
		{"sleep", 3, debugSleep, "SLEEP <seconds>", []string{"Stop this connection for <seconds> (Redis stops the whole server). Decimals allowed."}},
		{"help", 2, debugHelp, "HELP", []string{"Prints this help."}},
	}
}

const errDebugNotAllowed = `ERR DEBUG command not allowed. If the enable-debug-command option is set to "local", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.`

// cmdDebug checks enable-debug-command, then runs the subcommand.
func cmdDebug(x *Ctx) {
	if !debugAllowed(x.s.cfg.EnableDebugCommand, x.c.addr) {
		x.w.Error(errDebugNotAllowed)
		return
	}
	for _, sub := range debugSubs() {
		if isKeyword(x.args[1], sub.name) && (sub.argc == len(x.args) || sub.argc < 0 && len(x.args) >= -sub.argc) {
			sub.run(x)
			return
		}
	}
	x.w.Error("ERR unknown subcommand or wrong number of arguments for '" + cstring(x.args[1]) + "'. Try DEBUG HELP.")
}

// debugAllowed applies enable-debug-command to a client at addr.
func debugAllowed(mode, addr string) bool {
	switch mode {
	case "yes":
		return true
	case "local":
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return false
		}
		ip := net.ParseIP(host)
		return ip != nil && ip.IsLoopback()
	}
	return false
}

func debugHelp(x *Ctx) {
	lines := []string{"DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"}
	for _, sub := range debugSubs() {
		lines = append(lines, sub.usage)
		for _, h := range sub.help {
			lines = append(lines, "    "+h)
		}
	}
	x.w.Array(len(lines))
	for _, l := range lines {
		x.w.Status(l)
	}
}

func debugLog(x *Ctx) {
	x.s.log.Warn("DEBUG LOG: " + string(x.args[2]))
	x.w.OK()
}

// debugSleep sleeps this connection (only: other clients go on) for a
// number of seconds read as C's strtod does (junk reads as 0), or until
// the server stops.
func debugSleep(x *Ctx) {
	secs := strtodPrefix(cstring(x.args[2]))
	if secs > 0 {
		t := time.NewTimer(time.Duration(min(secs, 1e9) * float64(time.Second)))
		select {
		case <-t.C:
		case <-x.s.stop:
			t.Stop()
		}
	}
	x.w.OK()
}

// strtodPrefix parses the longest prefix of s that is a decimal number,
// 0 if there is none (C's strtod without hexadecimal and inf/nan).
func strtodPrefix(s string) float64 {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	for n := len(s); n > 0; n-- {
		if f, err := strconv.ParseFloat(s[:n], 64); err == nil && !strings.ContainsAny(s[:n], "xXnN_") {
			return f
		}
	}
	return 0
}

func debugActiveExpire(x *Ctx) {
	n, _ := strconv.Atoi(cstring(x.args[2])) // atoi: junk is 0
	x.s.debug.noActiveExpire.Store(n == 0)
	x.w.OK()
}

// debugObject is DEBUG OBJECT key: Redis's one-line description. The
// address is the value's identity here, refcount 1, serializedlength the
// length of the value's DUMP serialization, lru as Redis's 24-bit
// seconds clock.
func debugObject(x *Ctx) {
	key := x.args[2]
	e, ok := x.get(key)
	if !ok {
		x.w.Error(errNoSuchKey)
		return
	}
	n := 0
	if p, err := dumpPayload(e); err == nil {
		n = len(p) - 11 // the type byte and the footer are not counted
	}
	idle, _, _ := x.accessInfo(key)
	at := "0x0"
	if e.Obj != nil {
		at = fmt.Sprintf("%p", e.Obj)
	}
	x.w.Status(fmt.Sprintf("Value at:%s refcount:1 encoding:%s serializedlength:%d lru:%d lru_seconds_idle:%d",
		at, encodingName(e), n, (x.now/1e9-idle)&(1<<24-1), idle))
}

// debugProtocol is DEBUG PROTOCOL type: a test value of each RESP type,
// as Redis sends it in RESP2 and RESP3.
func debugProtocol(x *Ctx) {
	w := x.w
	resp3 := w.RESP3()
	switch keyword(x.args[2]) {
	case "string":
		w.BulkString("Hello World")
	case "integer":
		w.Int(12345)
	case "double":
		w.Double(3.141)
	case "bignum":
		w.BigNumber("1234567999999999999999999999999999999")
	case "null":
		w.Null()
	case "array", "set":
		if keyword(x.args[2]) == "set" {
			w.Set(3)
		} else {
			w.Array(3)
		}
		for j := range 3 {
			w.Int(int64(j))
		}
	case "map":
		w.Map(3)
		for j := range 3 {
			w.Int(int64(j))
			w.Bool(j == 1)
		}
	case "attrib":
		if resp3 {
			w.Append([]byte("|1\r\n"))
			w.BulkString("key-popularity")
			w.Array(2)
			w.BulkString("key:123")
			w.Int(90)
		}
		w.BulkString("Some real reply following the attribute")
	case "push":
		if !resp3 {
			w.Error("ERR RESP2 is not supported by this command")
			return
		}
		w.Push(2)
		w.BulkString("server-cpu-usage")
		w.Int(42)
		w.BulkString("Some real reply following the push reply")
	case "verbatim":
		w.Verbatim("This is a verbatim\nstring")
	case "true":
		w.Bool(true)
	case "false":
		w.Bool(false)
	default:
		w.Error("ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false")
	}
}
