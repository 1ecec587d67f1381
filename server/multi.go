package server

import "github.com/turnstile/turnstile/shards"

// multiState is an open MULTI block.
type multiState struct {
	cmds  []queued
	dirty bool // a command was rejected while queueing: EXEC aborts
}

type queued struct {
	cmd  *Command
	args [][]byte // owned copies
}

func transactionCommands() []*Command {
	return []*Command{
		{Name: "multi", Arity: 1, Flags: FlagNoQueue | FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagAllowBusy, Group: "transactions", Since: "1.2.0",
			Summary: "Starts a transaction.", Handler: cmdMulti},
		{Name: "exec", Arity: 1, Flags: FlagNoQueue | FlagNoScript | FlagLoading | FlagStale, Group: "transactions", Since: "1.2.0",
			Summary: "Executes all commands in a transaction.", Handler: cmdExec},
		{Name: "discard", Arity: 1, Flags: FlagNoQueue | FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagAllowBusy, Group: "transactions", Since: "2.0.0",
			Summary: "Discards a transaction.", Handler: cmdDiscard},
		{Name: "watch", Arity: -2, Flags: FlagNoQueue | FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagAllowBusy, FirstKey: 1, LastKey: -1, Step: 1, Group: "transactions", Since: "2.2.0",
			Summary: "Monitors changes to keys to determine the execution of a transaction.", Handler: cmdWatch},
		{Name: "unwatch", Arity: 1, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagAllowBusy, Group: "transactions", Since: "2.2.0",
			Summary: "Forgets about watched keys of a transaction.", Handler: cmdUnwatch},
	}
}

// copyArgs deep-copies request arguments into one allocation.
func copyArgs(args [][]byte) [][]byte {
	n := 0
	for _, a := range args {
		n += len(a)
	}
	buf := make([]byte, 0, n)
	out := make([][]byte, len(args))
	for i, a := range args {
		start := len(buf)
		buf = append(buf, a...)
		out[i] = buf[start:len(buf):len(buf)]
	}
	return out
}

func cmdMulti(x *Ctx) {
	if x.c.multi != nil {
		x.w.Error("ERR MULTI calls can not be nested")
		return
	}
	x.c.multi = &multiState{}
	x.w.OK()
}

func cmdDiscard(x *Ctx) {
	if x.c.multi == nil {
		x.w.Error("ERR DISCARD without MULTI")
		return
	}
	x.c.multi = nil
	x.c.unwatchAll()
	x.w.OK()
}

func cmdWatch(x *Ctx) {
	c := x.c
	if c.multi != nil {
		x.w.Error("ERR WATCH inside MULTI is not allowed")
		return
	}
	if c.watch == nil {
		c.watch = &watchState{}
	}
outer:
	for _, k := range x.args[1:] {
		for _, wk := range c.watch.keys {
			if wk.db == c.db && wk.key == string(k) {
				continue outer
			}
		}
		var exp int64
		if e, ok := x.db.Get(k, x.now); ok {
			exp = e.Exp
		}
		x.db.Watch(k, &c.watch.w)
		c.watch.keys = append(c.watch.keys, watchedKey{db: c.db, key: string(k), exp: exp})
	}
	x.w.OK()
}

func cmdUnwatch(x *Ctx) {
	if !x.inExec { // inside EXEC the shards are held; EXEC unwatches after
		x.c.unwatchAll()
	}
	x.w.OK()
}

// cmdExec runs the queued commands atomically: it locks the shards of every
// key they name (and of the watched keys) in the fixed order, checks WATCH,
// runs each command, then releases the shards.
func cmdExec(x *Ctx) {
	c := x.c
	if c.multi == nil {
		x.w.Error("ERR EXEC without MULTI")
		return
	}
	m := c.multi
	c.multi = nil
	if m.dirty {
		c.unwatchAll()
		x.w.Error(errExecAbort)
		return
	}
	defer c.unwatchAll() // runs after the shards are released below
	ls := x.s.execLockSet(c, m.cmds)
	ls.lock(x.s)
	defer ls.unlock(x.s)
	defer x.s.commitEffects(c) // before the unlock above: effects in lock order
	if c.watchBroken(x.now) {
		x.w.NullArray()
		return
	}
	x.w.Array(len(m.cmds))
	for _, q := range m.cmds {
		x.s.execQueued(c, q, ls.all)
	}
}

// execQueued runs one queued command inside EXEC; its shards are held.
func (s *Server) execQueued(c *client, q queued, allLocked bool) {
	y := &Ctx{s: s, c: c, cmd: q.cmd, args: q.args, now: s.clock.Now(), db: s.dbs[c.db], w: &c.w, allLocked: allLocked, inExec: true}
	s.run(y, nil) // a panic becomes this command's error element
	s.stats.record(q.cmd, (s.clock.Now()-y.now)/1000)
}

// execLockSet computes the shards a transaction needs, following SELECTs
// inside the block. A keyspace-wide command takes every shard.
func (s *Server) execLockSet(c *client, cmds []queued) *lockSet {
	ls := &lockSet{}
	db := c.db
	var pos []int
	for _, q := range cmds {
		if q.cmd.Has(FlagKeyspace) {
			ls.all = true
			return ls
		}
		if q.cmd.Name == "select" {
			if n, ok := shards.ParseCanonicalInt(q.args[1]); ok && n >= 0 && n < int64(len(s.dbs)) {
				db = int(n)
			}
			continue
		}
		if q.cmd.Locks != nil {
			q.cmd.Locks(q.args, db, len(s.dbs), func(d int, key []byte) { ls.add(d, s.dbs[d].ShardOf(key)) })
			continue
		}
		pos = q.cmd.keyPositions(q.args, pos[:0])
		for _, p := range pos {
			ls.add(db, s.dbs[db].ShardOf(q.args[p]))
		}
	}
	if c.watch != nil {
		for _, wk := range c.watch.keys {
			ls.add(wk.db, s.dbs[wk.db].ShardOf([]byte(wk.key)))
		}
	}
	return ls
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
	for _, wk := range c.watch.keys {
		if wk.exp != 0 && wk.exp <= now {
			return true
		}
	}
	return false
}
