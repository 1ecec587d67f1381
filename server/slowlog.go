package server

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
)

// The slow log: the commands that ran for slowlog-log-slower-than
// microseconds or longer (-1: none; 0: every command), newest first, at
// most slowlog-max-len of them. As Redis: EXEC is not logged (the commands
// it ran are, each on its own), an entry keeps at most slowlogMaxArgs
// arguments and slowlogMaxString bytes of each, and passwords are shown as
// "(redacted)". Entries are made only for slow commands, so the lock is
// taken only then.

const (
	slowlogMaxArgs   = 32
	slowlogMaxString = 128
)

// slowlog is the log. threshold and maxLen are read without the lock;
// entries and nextID are guarded by mu.
type slowlog struct {
	threshold atomic.Int64 // µs
	maxLen    atomic.Int64
	mu        sync.Mutex
	entries   []slowEntry // oldest first
	nextID    int64
}

// slowEntry is one logged command.
type slowEntry struct {
	id, unix, usec int64
	args           []string
	addr, name     string
}

// add logs a call of args by c that started at start (Unix ns) and took
// usec microseconds.
func (l *slowlog) add(c *client, args [][]byte, start, usec int64) {
	e := slowEntry{unix: start / 1e9, usec: usec, args: slowlogArgs(args), addr: c.addr}
	c.mu.Lock()
	e.name = c.name
	c.mu.Unlock()
	l.mu.Lock()
	e.id = l.nextID
	l.nextID++
	l.entries = append(l.entries, e)
	l.trim()
	l.mu.Unlock()
}

// trim drops the oldest entries beyond maxLen, by reslicing: append
// moves the rest to a new array when it runs out of room, so a full log
// costs amortized O(1) per entry, not a copy of the log. mu is held.
func (l *slowlog) trim() {
	if n := len(l.entries) - int(max(l.maxLen.Load(), 0)); n > 0 {
		clear(l.entries[:n])
		l.entries = l.entries[n:]
	}
}

// slowlogArgs is what an entry keeps of args: at most slowlogMaxArgs (the
// last saying how many more there were), each cut at slowlogMaxString
// bytes (saying how many more there were), passwords redacted.
func slowlogArgs(args [][]byte) []string {
	n := min(len(args), slowlogMaxArgs)
	out := make([]string, n)
	hidden := redactedArgs(args)
	for i := range n {
		a := args[i]
		switch {
		case n != len(args) && i == n-1:
			out[i] = "... (" + strconv.Itoa(len(args)-n+1) + " more arguments)"
		case hidden(i):
			out[i] = "(redacted)"
		case len(a) > slowlogMaxString:
			out[i] = string(a[:slowlogMaxString]) + "... (" + strconv.Itoa(len(a)-slowlogMaxString) + " more bytes)"
		default:
			out[i] = string(a)
		}
	}
	return out
}

// redactedArgs tells which arguments of args are secrets that the slow log
// and MONITOR show as "(redacted)": every argument of AUTH, and the two
// after HELLO's AUTH.
func redactedArgs(args [][]byte) func(i int) bool {
	switch {
	case isKeyword(args[0], "auth"):
		return func(i int) bool { return i > 0 }
	case isKeyword(args[0], "hello"):
		for j := 2; j+2 < len(args); j++ {
			if isKeyword(args[j], "auth") {
				at := j
				return func(i int) bool { return i == at+1 || i == at+2 }
			}
		}
	}
	return func(int) bool { return false }
}

func slowlogCommands() []*Command {
	const f = command.Loading | command.Stale
	return []*Command{
		{Name: "slowlog", Arity: -2, Flags: f, Group: "server", Since: "2.2.12",
			Summary: "A container for slow log commands.", Subs: []*Command{
				{Name: "get", Docs: "[count:integer]", Arity: -2, Flags: f | command.Admin, Args: "[<count>]", Since: "2.2.12",
					Summary: "Return top <count> entries from the slowlog (default: 10, -1 mean all).", Handler: slowlogGet},
				{Name: "len", Arity: 2, Flags: f | command.Admin, Since: "2.2.12", Summary: "Return the length of the slowlog.", Handler: slowlogLen},
				{Name: "reset", Arity: 2, Flags: f | command.Admin, Since: "2.2.12", Summary: "Reset the slowlog.", Handler: slowlogReset},
				{Name: "help", Arity: 2, Flags: f, Since: "6.2.0", Summary: "Prints this help.", Handler: subcommandHelp},
			}},
	}
}

func slowlogGet(x *Ctx) {
	count := int64(10)
	if len(x.args) > 3 {
		x.w.Error("ERR unknown subcommand or wrong number of arguments for '" + string(x.args[1]) + "'. Try SLOWLOG HELP.")
		return
	}
	if len(x.args) == 3 {
		n, ok := resp.ParseInt(x.args[2])
		if !ok || n < -1 {
			x.w.Error("ERR count should be greater than or equal to -1")
			return
		}
		count = n
	}
	l := &x.s.ops.slow
	l.mu.Lock()
	defer l.mu.Unlock()
	if count == -1 || count > int64(len(l.entries)) {
		count = int64(len(l.entries))
	}
	x.w.Array(int(count))
	for i := len(l.entries) - 1; i >= len(l.entries)-int(count); i-- {
		e := &l.entries[i]
		x.w.Array(6)
		x.w.Int(e.id)
		x.w.Int(e.unix)
		x.w.Int(e.usec)
		x.w.Array(len(e.args))
		for _, a := range e.args {
			x.w.BulkString(a)
		}
		x.w.BulkString(e.addr)
		x.w.BulkString(e.name)
	}
}

func slowlogLen(x *Ctx) {
	l := &x.s.ops.slow
	l.mu.Lock()
	n := len(l.entries)
	l.mu.Unlock()
	x.w.Int(int64(n))
}

func slowlogReset(x *Ctx) {
	l := &x.s.ops.slow
	l.mu.Lock()
	l.entries = nil
	l.mu.Unlock()
	x.w.OK()
}
