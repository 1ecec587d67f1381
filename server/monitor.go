package server

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/turnstile/turnstile/command"
)

// MONITOR: every command that runs is shown to the monitoring connections
// as one status line, in Redis's format:
//
//	+1339518083.107412 [0 127.0.0.1:60866] "keys" "*"
//
// (time, database after the command, client address or "lua" for a
// script's redis.call, the arguments quoted with C escapes). As Redis:
// a command is shown once it ran (EVAL and its kin before, so that their
// redis.call lines follow them), commands refused before running and
// commands queued in MULTI are not shown (EXEC shows each queued command
// and then itself), admin commands are never shown, and passwords (AUTH,
// HELLO's AUTH) are shown as "(redacted)".
//
// The line goes to each monitor's outbound queue (outq.go), like a pub/sub
// message. The dispatcher pays one atomic load of n per command while no
// monitor is attached.

// monitors is the set of monitoring connections. list is replaced (copy on
// write) under mu; n mirrors its length for the dispatcher's check.
type monitors struct {
	mu   sync.Mutex
	list atomic.Pointer[[]*client]
	n    atomic.Int32
}

func (m *monitors) add(c *client) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	var old []*client
	if p := m.list.Load(); p != nil {
		old = *p
	}
	for _, o := range old {
		if o == c {
			return false
		}
	}
	next := append(append(make([]*client, 0, len(old)+1), old...), c)
	m.list.Store(&next)
	m.n.Store(int32(len(next)))
	return true
}

func (m *monitors) remove(c *client) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.list.Load()
	if p == nil {
		return
	}
	next := make([]*client, 0, len(*p))
	for _, o := range *p {
		if o != c {
			next = append(next, o)
		}
	}
	m.list.Store(&next)
	m.n.Store(int32(len(next)))
}

func monitorCommands() []*Command {
	return []*Command{
		{Name: "monitor", Arity: 1, Flags: command.Admin | command.NoScript | command.Loading | command.Stale, Group: "server", Since: "1.0.0",
			Summary: "Listens for all requests received by the server in real-time.", Handler: cmdMonitor},
	}
}

// cmdMonitor makes the connection a monitor. Inside MULTI it is refused, as
// Redis refuses it to a client that may not block.
func cmdMonitor(x *Ctx) {
	if x.ex.kind == execMulti {
		x.w.Error("ERR MONITOR isn't allowed for DENY BLOCKING client")
		return
	}
	if x.c.monitoring {
		return // already one: Redis ignores it
	}
	x.c.monitor.Store(true)
	x.c.monitoring = true
	x.s.ops.monitors.add(x.c)
	x.w.OK()
}

// errMonitorKeyspace refuses a keyspace command to a monitor: Redis treats
// a monitor as a replica.
const errMonitorKeyspace = "ERR Replica can't interact with the keyspace"

// touchesKeyspace: the commands a monitor may not run.
func touchesKeyspace(cmd *Command) bool {
	return cmd.Has(command.Readonly) || writesOrReplicates(cmd)
}

// resetOps is RESET's part here: the connection leaves MONITOR and turns
// its replies on.
func (c *client) resetOps() {
	c.replyMode = replyOn
	if c.monitoring {
		c.monitoring = false
		c.monitor.Store(false)
		c.s.ops.monitors.remove(c)
	}
}

// feedMonitors shows a call of cmd with args by c (lua: from a script's
// redis.call) to the monitors. The caller has checked ops.monitors.n.
func (s *Server) feedMonitors(c *client, cmd *Command, args [][]byte, lua bool) {
	if cmd.Has(command.Admin) {
		return
	}
	p := s.ops.monitors.list.Load()
	if p == nil || len(*p) == 0 {
		return
	}
	now := s.clock.Now()
	b := append(c.monitorBuf[:0], '+') // push copies the line: the buffer is c's to reuse
	b = strconv.AppendInt(b, now/1e9, 10)
	b = append(b, '.')
	us := now % 1e9 / 1e3
	for d := int64(100000); d > 1 && us < d; d /= 10 {
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, us, 10)
	b = append(b, " ["...)
	b = strconv.AppendInt(b, int64(c.db), 10)
	if lua {
		b = append(b, " lua]"...)
	} else {
		b = append(b, ' ')
		b = append(b, c.addr...)
		b = append(b, ']')
	}
	hidden := redactedArgs(args)
	for i, a := range args {
		b = append(b, ' ')
		if hidden(i) {
			b = append(b, `"(redacted)"`...)
		} else {
			b = appendRepr(b, a)
		}
	}
	b = append(b, "\r\n"...)
	for _, m := range *p {
		m.push(c, b)
	}
	if cap(b) <= 4096 {
		c.monitorBuf = b
	}
}

// appendRepr appends a quoted with C escapes, as Redis shows arguments.
func appendRepr(b, a []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, ch := range a {
		switch ch {
		case '\\', '"':
			b = append(b, '\\', ch)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\a':
			b = append(b, '\\', 'a')
		case '\b':
			b = append(b, '\\', 'b')
		default:
			if ch >= ' ' && ch <= '~' {
				b = append(b, ch)
			} else {
				b = append(b, '\\', 'x', hex[ch>>4], hex[ch&15])
			}
		}
	}
	return append(b, '"')
}
