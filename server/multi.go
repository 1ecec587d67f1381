package server

import (
	"strconv"

	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
)

// multiState is an open MULTI block. Queued arguments are copied into
// arena (argument bytes) and argv (their slices), which grow by new
// chunks, never by moving what earlier commands point at. A connection
// keeps its last multiState for its next MULTI (client.spareMulti), so a
// steady stream of small transactions allocates nothing to queue.
type multiState struct {
	cmds  []queued
	bytes int64 // argument bytes queued
	dirty bool  // a command was rejected while queueing: EXEC aborts
	arena []byte
	argv  [][]byte
}

type queued struct {
	cmd  *Command
	args [][]byte // owned copies
}

// maxSpareArena is the largest arena a connection keeps for its next
// MULTI; a bigger one (a huge transaction) is left to the collector.
const maxSpareArena = 64 << 10

// newMulti returns the connection's spare multiState, emptied, or a new one.
func (c *client) newMulti() *multiState {
	m := c.spareMulti
	if m == nil {
		return &multiState{}
	}
	c.spareMulti = nil
	return m
}

// recycleMulti keeps m, which nothing refers to any more (its EXEC or
// DISCARD is over), for the connection's next MULTI.
func (c *client) recycleMulti(m *multiState) {
	if m == nil || cap(m.arena) > maxSpareArena || len(m.cmds) > 1024 {
		return
	}
	clear(m.cmds)
	clear(m.argv)
	*m = multiState{cmds: m.cmds[:0], arena: m.arena[:0], argv: m.argv[:0]}
	c.spareMulti = m
}

// checkRoom returns the error for a command that would overflow the queue
// (Config.MaxQueuedCommands, MaxQueuedBytes), or "".
func (m *multiState) checkRoom(s *Server, args [][]byte) string {
	if len(m.cmds) >= s.cfg.MaxQueuedCommands {
		return "ERR MULTI queue is full: at most " + strconv.Itoa(s.cfg.MaxQueuedCommands) + " commands per transaction"
	}
	n := int64(0)
	for _, a := range args {
		n += int64(len(a))
	}
	if m.bytes+n > s.cfg.MaxQueuedBytes {
		return "ERR MULTI queue is full: at most " + strconv.FormatInt(s.cfg.MaxQueuedBytes, 10) + " bytes of arguments per transaction"
	}
	return ""
}

// queue appends a copy of the command (checkRoom said there is room).
func (m *multiState) queue(cmd *Command, args [][]byte) {
	n := 0
	for _, a := range args {
		n += len(a)
	}
	m.bytes += int64(n)
	if cap(m.arena)-len(m.arena) < n {
		m.arena = make([]byte, 0, max(n, 2*cap(m.arena), 512))
	}
	if cap(m.argv)-len(m.argv) < len(args) {
		m.argv = make([][]byte, 0, max(len(args), 2*cap(m.argv), 32))
	}
	start := len(m.argv)
	for _, a := range args {
		from := len(m.arena)
		m.arena = append(m.arena, a...)
		m.argv = append(m.argv, m.arena[from:len(m.arena):len(m.arena)])
	}
	m.cmds = append(m.cmds, queued{cmd: cmd, args: m.argv[start:len(m.argv):len(m.argv)]})
}

func transactionCommands() []*Command {
	const f = command.NoQueue | command.NoScript | command.Loading | command.Stale | command.Leader
	return []*Command{
		{Name: "multi", Arity: 1, Flags: f | command.Fast | command.AllowBusy, Group: "transactions", Since: "1.2.0",
			Summary: "Starts a transaction.", Handler: cmdMulti},
		{Name: "exec", Arity: 1, Flags: f, Group: "transactions", Since: "1.2.0",
			Summary: "Executes all commands in a transaction.", Handler: cmdExec},
		{Name: "discard", Arity: 1, Flags: f | command.Fast | command.AllowBusy, Group: "transactions", Since: "2.0.0",
			Summary: "Discards a transaction.", Handler: cmdDiscard},
		{Name: "watch", Access: []command.KeyAccess{command.KeyAny}, Docs: "key:key...", Arity: -2, Flags: f | command.Fast | command.AllowBusy, FirstKey: 1, LastKey: -1, Step: 1, Group: "transactions", Since: "2.2.0",
			Summary: "Monitors changes to keys to determine the execution of a transaction.", Handler: cmdWatch},
		{Name: "unwatch", Arity: 1, Flags: command.NoScript | command.Loading | command.Stale | command.Fast | command.AllowBusy | command.Leader, Group: "transactions", Since: "2.2.0",
			Summary: "Forgets about watched keys of a transaction.", Handler: cmdUnwatch},
	}
}

func cmdMulti(x *Ctx) {
	if x.c.multi != nil {
		x.w.Error("ERR MULTI calls can not be nested")
		return
	}
	x.c.setMulti(x.c.newMulti())
	x.w.OK()
}

func cmdDiscard(x *Ctx) {
	if x.c.multi == nil {
		x.w.Error("ERR DISCARD without MULTI")
		return
	}
	m := x.c.multi
	x.c.setMulti(nil)
	x.c.recycleMulti(m)
	x.c.unwatchAll()
	x.w.OK()
}

// cmdWatch adds keys to the client's watch list: linear in the number of
// keys (a set finds repeats), bounded by Config.MaxWatchedKeys. The
// dispatcher holds the shards of every key named.
func cmdWatch(x *Ctx) {
	c := x.c
	if c.multi != nil {
		x.w.Error("ERR WATCH inside MULTI is not allowed")
		return
	}
	if c.watch == nil {
		c.watch = &watchState{set: make(map[watchedKey]int64)}
	}
	if limit := x.s.cfg.MaxWatchedKeys; len(c.watch.set)+newWatches(c, x.args[1:], limit) > limit {
		x.w.Error("ERR too many watched keys: at most " + strconv.Itoa(limit) + " per connection")
		return
	}
	for _, k := range x.args[1:] {
		wk := watchedKey{c.db, string(k)}
		if _, dup := c.watch.set[wk]; dup {
			continue
		}
		c.watch.set[wk] = x.watch(k, &c.watch.w)
	}
	x.w.OK()
}

// newWatches counts the keys not yet watched among keys: exactly, with a
// scratch set, when a cheap upper bound (repeats counted) would pass limit.
func newWatches(c *client, keys [][]byte, limit int) int {
	fresh := 0
	for _, k := range keys {
		if _, dup := c.watch.set[watchedKey{c.db, string(k)}]; !dup {
			fresh++
		}
	}
	if len(c.watch.set)+fresh <= limit {
		return fresh
	}
	seen := make(map[string]struct{}, fresh)
	for _, k := range keys {
		if _, dup := c.watch.set[watchedKey{c.db, string(k)}]; !dup {
			seen[string(k)] = struct{}{}
		}
	}
	return len(seen)
}

func cmdUnwatch(x *Ctx) {
	if x.ex.kind == execCommand { // inside EXEC the shards are held; EXEC unwatches after
		x.c.unwatchAll()
	}
	x.w.OK()
}

// cmdExec runs the queued commands as one execution: it locks the shards
// of every key they name (and of the watched keys) in the fixed order,
// checks WATCH, runs each command with the EXEC's now, commits all their
// effects at once, then releases the shards.
func cmdExec(x *Ctx) {
	c := x.c
	if c.multi == nil {
		x.w.Error("ERR EXEC without MULTI")
		return
	}
	m := c.multi
	c.setMulti(nil)
	if m.dirty {
		c.unwatchAll()
		x.w.Error(errExecAbort)
		return
	}
	s := x.s
	ex := &c.exMulti
	ex.reset(execMulti, x.now)
	s.execLockSet(&ex.locks, c, m.cmds)
	for _, q := range m.cmds {
		if q.cmd.Has(command.Scripting) { // the script lock comes before any shard (EVAL, SCRIPT LOAD...)
			s.scripts.mu.Lock()
			defer s.scripts.mu.Unlock()
			break
		}
	}
	ex.locks.lock(s)
	room := s.roomError(c.memFull, &ex.locks, ex.now, c.db, m.cmds)
	switch {
	case room != "":
		x.w.Error("EXECABORT Transaction discarded because of: " + room)
	case c.watchBroken(ex.now):
		x.w.NullArray()
	default:
		x.w.Array(len(m.cmds))
		y := &c.ctxMulti
		for _, q := range m.cmds {
			if r := c.userOrDefault().get(); !r.open {
				// As Redis: checked again, the rules may have changed
				// since the command was queued.
				if reason := s.aclDenied(c, r, q.cmd, q.args, "multi"); reason != aclOK {
					x.w.Error(execNoPermError(reason))
					continue
				}
			}
			y.init(s, c, q.cmd, q.args, ex)
			// Timed for INFO commandstats one command in timingSample, as
			// outside MULTI (the commands themselves all see ex.now).
			var start int64
			all := s.ops.timeAll.Load() // the slow log or the latency monitor: every command (ops.go)
			sample := c.calls%timingSample == 0
			if c.calls++; all || sample {
				start = s.clock.Now()
			}
			failed := s.run(y)
			var usec int64
			if all || sample {
				usec = s.observe(c, q.cmd, q.args, start, s.clock.Now()-start, all, sample)
			}
			s.stats.record(q.cmd, usec, failed)
			if s.ops.monitors.n.Load() != 0 {
				s.feedMonitors(c, q.cmd, q.args, false)
			}
		}
	}
	s.end(c, ex)
	c.recycleMulti(m)
	c.unwatchAll() // needs the shards released
	c.runExecSaves()
}

// eachQueued calls f for every queued command with the database it will
// run against (following valid SELECTs), starting from db; ndb is the
// number of databases.
func eachQueued(db, ndb int, cmds []queued, f func(*Command, [][]byte, int)) {
	for _, q := range cmds {
		if q.cmd.Name == "select" {
			if n, ok := resp.ParseInt(q.args[1]); ok && n >= 0 && n < int64(ndb) {
				db = int(n)
			}
			continue
		}
		f(q.cmd, q.args, db)
	}
}

// execLockSet computes the shards a transaction needs, following SELECTs
// inside the block, plus the shards of the watched keys.
func (s *Server) execLockSet(ls *lockSet, c *client, cmds []queued) {
	eachQueued(c.db, len(s.dbs), cmds, func(cmd *Command, args [][]byte, db int) {
		if cmd.Has(command.Keyspace) { // KEYS, FLUSHDB...: atomic with the rest
			ls.all = true
		}
		s.addCommandLocks(ls, cmd, args, db)
	})
	if ls.all {
		return
	}
	if c.watch != nil {
		for wk := range c.watch.set {
			ls.add(wk.db, s.dbs[wk.db].ShardOf([]byte(wk.key)))
		}
	}
}

// watchBroken reports whether a watched key changed or expired since WATCH.
// Requires the watched keys' shards locked.
func (c *client) watchBroken(now int64) bool {
	if c.watch == nil {
		return false
	}
	if c.watch.w.Dirty.Load() {
		return true
	}
	for _, exp := range c.watch.set {
		if exp != 0 && exp <= now {
			return true
		}
	}
	return false
}

// runExecSaves runs the snapshot for the SAVEs an EXEC queued (cmdSave),
// now that the EXEC holds no shard: one snapshot serves them all, since
// each would save the state the EXEC left. If it fails, its error reply
// replaces each SAVE's "+OK" in the EXEC's reply.
func (c *client) runExecSaves() {
	if len(c.execSaves) == 0 {
		return
	}
	c.s.persist.saves.Add(1)
	if err := c.s.save(false); err != nil {
		for i := len(c.execSaves) - 1; i >= 0; i-- { // from the last: earlier offsets stay valid
			off := c.execSaves[i]
			tail := append([]byte(nil), c.w.Bytes()[off+len("+OK\r\n"):]...)
			c.w.Truncate(off)
			c.w.Error("ERR " + err.Error())
			c.w.Append(tail)
		}
	}
	c.execSaves = c.execSaves[:0]
}
