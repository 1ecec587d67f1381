package server

import (
	"fmt"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/turnstile/turnstile/shards"
)

// Ctx is what a handler sees: the request, the connection, the selected
// database, the time of the command and the reply writer. The shards of the
// command's keys are locked for the whole call.
type Ctx struct {
	s    *Server
	c    *client
	cmd  *Command
	args [][]byte
	now  int64       // read once per command from the server clock
	db   *shards.Map // the client's selected database
	w    *Writer

	// allLocked is set inside an EXEC that holds every shard, so keyspace-wide
	// commands must not lock shards themselves.
	allLocked bool
	inExec    bool // running as part of EXEC
}

// Error replies common to many commands (Redis's exact texts).
const (
	errSyntax     = "ERR syntax error"
	errNotInt     = "ERR value is not an integer or out of range"
	errNotFloat   = "ERR value is not a valid float"
	errWrongType  = "WRONGTYPE Operation against a key holding the wrong kind of value"
	errNoAuth     = "NOAUTH Authentication required."
	errOverflow   = "ERR increment or decrement would overflow"
	errWrongPass  = "WRONGPASS invalid username-password pair or user is disabled."
	errDBRange    = "ERR DB index is out of range"
	errExecAbort  = "EXECABORT Transaction discarded because of previous errors."
	errInternal   = "ERR internal error"
	errNoSuchKey  = "ERR no such key"
	errInvalidExp = "ERR invalid expire time in '%s' command"
)

func arityError(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}

// unknownCommandError formats Redis's unknown command reply: the name cut
// at 128 bytes, then quoted arguments until that list reaches 128 bytes.
func unknownCommandError(args [][]byte) string {
	var list strings.Builder
	for _, a := range args[1:] {
		if list.Len() >= 128 {
			break
		}
		room := 128 - list.Len()
		list.WriteString("'")
		list.WriteString(truncate(a, room))
		list.WriteString("' ")
	}
	return "ERR unknown command '" + truncate(args[0], 128) + "', with args beginning with: " + list.String()
}

func truncate(b []byte, n int) string {
	if n < 0 {
		n = 0
	}
	if len(b) > n {
		b = b[:n]
	}
	return string(b)
}

// handle runs one request: lookup, checks, MULTI queueing, then the call.
// The checks come in Redis's order: existence (command, then subcommand),
// arity, authentication. Inside MULTI a rejected command makes EXEC fail.
func (s *Server) handle(c *client, args [][]byte) {
	cmd := c.lookupCommand(args[0])
	errText := ""
	switch {
	case cmd == nil:
		s.stats.unknown.Add(1)
		errText = unknownCommandError(args)
	case !checkArity(cmd.Arity, len(args)):
		errText = arityError(cmd.Name)
	default:
		errText = cmd.checkSubcommand(args)
		switch {
		case errText != "":
		case !c.authed && !cmd.Has(FlagNoAuth):
			errText = errNoAuth
		case s.persist.loading.Load() && !cmd.Has(FlagLoading):
			errText = errLoading
		case cmd.Has(FlagWrite) && s.persist.aofWriteErr.Load() != nil:
			errText = "MISCONF Errors writing to the AOF file: " + *s.persist.aofWriteErr.Load()
		}
	}
	if errText != "" {
		if c.multi != nil {
			if cmd != nil && cmd.Name == "exec" {
				c.multi = nil
				c.unwatchAll()
				errText = "EXECABORT Transaction discarded because of: " + strings.TrimPrefix(errText, "ERR ")
			} else {
				c.multi.dirty = true
			}
		}
		c.w.Error(errText)
		return
	}
	if c.multi != nil && !cmd.Has(FlagNoQueue) {
		c.multi.cmds = append(c.multi.cmds, queued{cmd: cmd, args: copyArgs(args)})
		c.w.Status("QUEUED")
		return
	}
	s.call(c, cmd, args)
}

// lockSet is the sorted, de-duplicated set of (database, shard) pairs one
// command or transaction needs.
type lockSet struct {
	items []lockItem
	all   bool // every shard of every database
}

type lockItem struct{ db, shard int }

func (l *lockSet) add(db, shard int) { l.items = append(l.items, lockItem{db, shard}) }

func (l *lockSet) lock(s *Server) {
	if l.all {
		for _, db := range s.dbs {
			for i := 0; i < db.NumShards(); i++ {
				db.Lock(i)
			}
		}
		return
	}
	slices.SortFunc(l.items, func(a, b lockItem) int {
		if a.db != b.db {
			return a.db - b.db
		}
		return a.shard - b.shard
	})
	l.items = slices.Compact(l.items)
	for _, it := range l.items {
		s.dbs[it.db].Lock(it.shard)
	}
}

func (l *lockSet) unlock(s *Server) {
	if l.all {
		for _, db := range s.dbs {
			for i := 0; i < db.NumShards(); i++ {
				db.Unlock(i)
			}
		}
		return
	}
	for _, it := range l.items {
		s.dbs[it.db].Unlock(it.shard)
	}
}

// call runs cmd with the shards of its keys locked. A panic in the handler
// is recovered: the locks are released, the partial reply is replaced by an
// error, and the server keeps running.
func (s *Server) call(c *client, cmd *Command, args [][]byte) {
	x := &c.ctx
	*x = Ctx{s: s, c: c, cmd: cmd, args: args, now: s.clock.Now(), db: s.dbs[c.db], w: &c.w}
	c.lastCmd.Store(cmd)
	var keyBuf [8]int
	pos := cmd.keyPositions(args, keyBuf[:0])
	switch {
	case cmd.Has(FlagWrite | FlagKeyspace):
		// FLUSHDB/FLUSHALL: hold every shard, so the flush is one atomic
		// step in memory and in the log.
		ls := lockSet{all: true}
		ls.lock(s)
		x.allLocked = true
		s.run(x, func() { ls.unlock(s) })
	case cmd.Locks != nil:
		var items [8]lockItem
		ls := lockSet{items: items[:0]}
		cmd.Locks(args, c.db, len(s.dbs), func(db int, key []byte) { ls.add(db, s.dbs[db].ShardOf(key)) })
		ls.lock(s)
		s.run(x, func() { ls.unlock(s) })
	case len(pos) == 0:
		s.run(x, nil)
	case len(pos) == 1:
		i := x.db.ShardOf(args[pos[0]])
		x.db.Lock(i)
		s.run(x, func() { x.db.Unlock(i) })
	default:
		var items [8]lockItem
		ls := lockSet{items: items[:0]}
		for _, p := range pos {
			ls.add(c.db, x.db.ShardOf(args[p]))
		}
		ls.lock(s)
		s.run(x, func() { ls.unlock(s) })
	}
	// Command time for INFO commandstats is sampled (one call in
	// timingSample, scaled up): reading the clock twice per command costs
	// more than the fastest commands themselves.
	var usec int64
	if c.calls++; c.calls%timingSample == 0 {
		usec = (s.clock.Now() - x.now) / 1000 * timingSample
	}
	s.stats.record(cmd, usec)
}

// run calls the handler, hands its effects to the log, then calls unlock
// (if any). A panic is recovered: whatever the handler changed before it is
// still logged, so the log never disagrees with memory.
func (s *Server) run(x *Ctx, unlock func()) {
	mark := len(x.w.b)
	defer func() {
		r := recover()
		if !x.inExec { // EXEC commits all its commands' effects at once
			s.commitEffects(x.c)
		}
		if unlock != nil {
			unlock()
		}
		if r != nil {
			s.log.Error("panic in command handler", "cmd", x.cmd.Name, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			x.w.b = x.w.b[:mark]
			x.w.Error(errInternal)
		}
	}()
	x.cmd.Handler(x)
}
