package server

import (
	"github.com/turnstile/turnstile/persistence"
	"github.com/turnstile/turnstile/resp"
	"github.com/turnstile/turnstile/shards"
)

// Ctx is what a handler sees: the request, the connection, the execution
// it runs in (its one now, its held locks, its effects) and the reply
// writer. A handler reaches the keyspace only through Ctx's methods below
// (never through the Server's shards.Map values): the writes record their
// effects for the durability log, and in lockcheck builds every access
// panics unless the execution holds the key's shard.
type Ctx struct {
	s    *Server
	c    *client
	cmd  *Command
	args [][]byte
	now  int64 // the execution's now: one per command, per EXEC, per script
	w    *resp.Writer
	ex   *execution
	ks   *shards.Map // the selected database; only this file's methods use it
	// leftExpired: the expired keys lookupForSetInto left in place that no set
	// or discard has followed yet (kept and checked after the handler in
	// lockcheck builds only: run).
	leftExpired int
}

func (x *Ctx) init(s *Server, c *client, cmd *Command, args [][]byte, ex *execution) {
	*x = Ctx{s: s, c: c, cmd: cmd, args: args, now: ex.now, w: &c.w, ex: ex, ks: s.dbs[c.db]}
}

// retarget points x, set up by init for the execution it still serves, at
// another command of that execution (a native script's direct calls): the
// command, its arguments, the selected database and the execution's now
// are set again; the server, the client, the writer and the execution
// stay.
func (x *Ctx) retarget(cmd *Command, args [][]byte) {
	x.cmd, x.args, x.now, x.ks = cmd, args, x.ex.now, x.s.dbs[x.c.db]
}

// keyspace returns database db after checking, in lockcheck builds, that
// the execution holds key's shard. For the selected database, x.ks is the
// same map, saved for the hot path.
func (x *Ctx) keyspace(db int, key []byte) *shards.Map {
	m := x.s.dbs[db]
	if lockCheck {
		x.checkHeld(db, m.ShardOf(key))
	}
	return m
}

// selected is keyspace for the selected database, small enough to inline.
func (x *Ctx) selected(key []byte) *shards.Map {
	if lockCheck {
		x.checkHeld(x.c.db, x.ks.ShardOf(key))
	}
	return x.ks
}

// shardOf is the index of key's shard in the selected database (no
// access to the shard itself).
func (x *Ctx) shardOf(key []byte) int { return x.ks.ShardOf(key) }

// get returns the live entry of key in the selected database.
func (x *Ctx) get(key []byte) (shards.Entry, bool) {
	return x.selected(key).Get(key, x.now)
}

// accessInfo reads key's access stamp without touching it (OBJECT
// IDLETIME and FREQ): idle seconds, LFU counter, and whether key is live.
func (x *Ctx) accessInfo(key []byte) (idle int64, freq int, ok bool) {
	return x.selected(key).AccessInfo(key, x.now)
}

// getDB returns the live entry of key in database db.
func (x *Ctx) getDB(db int, key []byte) (shards.Entry, bool) {
	return x.keyspace(db, key).Get(key, x.now)
}

// lookup is get plus a Ref through which set writes the key without a
// second probe.
// (Written out rather than through selected, so that it stays small
// enough to inline: CL.THROTTLE's path.)
func (x *Ctx) lookup(key []byte) (shards.Entry, shards.Ref, bool) {
	if lockCheck {
		x.checkHeld(x.c.db, x.ks.ShardOf(key))
	}
	return x.ks.Lookup(key, x.now)
}

// lookupInto is lookup writing the entry and the Ref through e and r, for
// the hash hashOf gives (shards.Map.LookupIntoHash).
func (x *Ctx) lookupInto(key []byte, e *shards.Entry, r *shards.Ref) bool {
	if lockCheck {
		x.checkHeld(x.c.db, x.ks.ShardOf(key))
	}
	return x.ks.LookupIntoHash(key, x.hashOf(key), x.now, e, r)
}

// lookupForSetInto is lookupInto for a handler that stores key through the
// Ref (set) or calls discard before it changes anything else in key's
// shard: an expired key stays in its slot for the set to rewrite in place
// (shards.Map.LookupForSet).
func (x *Ctx) lookupForSetInto(key []byte, e *shards.Entry, r *shards.Ref) bool {
	return x.lookupForSetIntoHash(key, x.hashOf(key), e, r)
}

// hashOf is key's hash in the selected database: the one its lock was
// worked out from when key is that argument itself (lockSet.hashed),
// else computed.
func (x *Ctx) hashOf(key []byte) uint64 {
	if hk := &x.ex.locks.hashed; len(key) > 0 && &key[0] == hk.p && len(key) == hk.n && hk.db == x.c.db {
		if lockCheck && hk.h != x.ks.Hash(key) {
			panic("lockcheck: " + x.cmd.FullName() + ": the remembered hash of a key is not its hash")
		}
		return hk.h
	}
	return x.ks.Hash(key)
}

// lookupForSetIntoHash is lookupForSetInto for a key whose hash in the
// selected database the caller has (Ctx.derivedKeys; lockcheck builds
// verify it).
func (x *Ctx) lookupForSetIntoHash(key []byte, h uint64, e *shards.Entry, r *shards.Ref) bool {
	if lockCheck {
		if h != x.ks.Hash(key) {
			panic("lockcheck: " + x.cmd.FullName() + " looks a key up by another key's hash")
		}
		x.checkHeld(x.c.db, x.ks.ShardOf(key))
	}
	found := x.ks.LookupForSetIntoHash(key, h, x.now, e, r)
	if lockCheck && r.Expired() {
		x.leftExpired++
	}
	return found
}

// discard removes the expired key a lookupForSetInto left in place, for a
// handler that does not store key after all.
func (x *Ctx) discard(r shards.Ref) {
	if lockCheck && r.Expired() {
		x.leftExpired--
	}
	x.ks.Discard(r)
}

// put stores e under key in the selected database. The effect logged for
// it holds e's bytes until the execution ends, so they must not change
// before then: request arguments and opBytes do not; bytes read from the
// keyspace may (owned).
func (x *Ctx) put(key []byte, e shards.Entry) { x.putDB(x.c.db, key, e) }

// putDB stores e under key in database db.
func (x *Ctx) putDB(db int, key []byte, e shards.Entry) {
	if lockCheck {
		x.checkOwned(e)
	}
	x.keyspace(db, key).Put(key, e)
	x.record(&persistence.Effect{Op: persistence.OpSet, DB: db, Key: key, Entry: e})
}

// owned returns e with its string bytes copied to memory that lives, and
// stays unchanged, until the execution ends (opBytes), for a value read
// from the keyspace and stored again (COPY, RENAME, MOVE, GETEX): by the
// time its effect is encoded, a later write of the execution may have
// rewritten the record it was read from in place (a same-length value).
func (x *Ctx) owned(e shards.Entry) shards.Entry {
	if e.Kind == shards.KindBytes && x.s.dur.Load() != nil {
		e.Str = x.opBytes(e.Str)
	}
	return e
}

// set stores e at a key found by lookup (saving a second probe).
func (x *Ctx) set(r shards.Ref, key []byte, e shards.Entry) {
	if lockCheck {
		x.checkOwned(e)
		if !r.Current() {
			panic("lockcheck: " + x.cmd.FullName() + " stores a key through a stale shards.Ref (its shard changed since the lookup)")
		}
		if r.Expired() {
			x.leftExpired--
		}
	}
	x.selected(key).Set(r, e)
	x.record(&persistence.Effect{Op: persistence.OpSet, DB: x.c.db, Key: key, Entry: e})
}

// del removes key and reports whether a live key was removed.
func (x *Ctx) del(key []byte) bool {
	if !x.selected(key).Delete(key, x.now) {
		return false // nothing live was there: no effect to log
	}
	x.record(&persistence.Effect{Op: persistence.OpDel, DB: x.c.db, Key: key})
	return true
}

// signal marks the WATCHes of key in the selected database broken, and
// tells tracking clients of a change, without changing the key: a write
// that leaves nothing behind (SET ... PXAT in the past on a missing key)
// is still a modification in Redis. No effect is logged.
func (x *Ctx) signal(key []byte) {
	x.selected(key).Signal(key)
	if x.s.hooks.Load() != 0 {
		x.noteChange(persistence.OpDel, x.c.db, key)
	}
}

// watch registers the client's WATCH of key in the selected database and
// returns the key's expiry (0: none, or no such key).
func (x *Ctx) watch(key []byte, w *shards.Watch) int64 {
	m := x.selected(key)
	var exp int64
	if e, ok := m.Get(key, x.now); ok {
		exp = e.Exp
	}
	m.Watch(key, w)
	return exp
}

// flushDB empties database db. The execution holds every shard (the
// dispatcher locks them all for write commands flagged command.Keyspace).
func (x *Ctx) flushDB(db int) {
	if lockCheck && !x.ex.locks.all {
		panic("lockcheck: " + x.cmd.FullName() + " flushes without holding every shard")
	}
	m := x.s.dbs[db]
	for i := 0; i < m.NumShards(); i++ {
		m.FlushLocked(i)
	}
	x.record(&persistence.Effect{Op: persistence.OpFlushDB, DB: db})
}

// swapDB exchanges the contents of databases a and b: both are flushed,
// then each gets the other's live keys (values, expiries). Through
// flushDB and putDB the log gets effects it can replay, WATCHes of a key
// that existed in either database break (as in Redis), and blocked and
// tracking clients hear of the changes. The execution holds every shard
// (SWAPDB is flagged Write|Keyspace). A key's string bytes stay valid
// after the flush: a flushed table drops its arena, it does not reuse it.
func (x *Ctx) swapDB(a, b int) {
	if lockCheck && !x.ex.locks.all {
		panic("lockcheck: " + x.cmd.FullName() + " swaps without holding every shard")
	}
	if a == b {
		return
	}
	collect := func(db int) []dbEntry {
		var out []dbEntry
		x.s.dbs[db].ForEach(x.now, true, func(k string, e shards.Entry) bool {
			out = append(out, dbEntry{key: []byte(k), e: e})
			return true
		})
		return out
	}
	inA, inB := collect(a), collect(b)
	x.flushDB(a)
	x.flushDB(b)
	for _, kv := range inB {
		x.putDB(a, kv.key, kv.e)
	}
	for _, kv := range inA {
		x.putDB(b, kv.key, kv.e)
	}
}

// Keyspace-wide reads of the selected database. They lock one shard at a
// time, unless the execution already holds every shard (an EXEC with a
// keyspace-wide command), and make the reply wait for everything appended
// to the log so far.

func (x *Ctx) forEach(fn func(key string, e shards.Entry) bool) {
	x.ex.readsAll = true
	x.s.dbs[x.c.db].ForEach(x.now, x.ex.locks.all, fn)
}

func (x *Ctx) randomKey() (string, bool) {
	x.ex.readsAll = true
	return x.s.dbs[x.c.db].RandomKey(x.now, x.ex.locks.all)
}

func (x *Ctx) scan(cursor uint64, count int, fn func(key string, e shards.Entry)) uint64 {
	x.ex.readsAll = true
	return x.s.dbs[x.c.db].Scan(cursor, count, x.now, x.ex.locks.all, fn)
}

func (x *Ctx) dbSize() int64 {
	x.ex.readsAll = true
	return x.s.dbs[x.c.db].Len()
}

// record queues an effect on the execution, and counts the change.
func (x *Ctx) record(e *persistence.Effect) {
	x.s.dirty.Add(1)
	x.ex.wrote = true
	if x.s.hooks.Load() != 0 && e.DB != persistence.MetaDB { // a client tracks or is blocked: note the change (of a key, not of the server's state)
		x.noteChange(e.Op, e.DB, e.Key)
	}
	if x.s.dur.Load() != nil {
		x.ex.effects = append(x.ex.effects, *e)
	}
}

// checkOwned panics when e's string bytes lie in the memory of a shard
// the execution holds: its effect would hold them until the execution
// ends, and the keyspace may rewrite them before (owned copies them).
func (x *Ctx) checkOwned(e shards.Entry) {
	if e.Kind != shards.KindBytes || len(e.Str) == 0 || x.s.dur.Load() == nil {
		return // no effect is recorded without durability (record)
	}
	check := func(db, shard int) {
		if x.s.dbs[db].ArenaHolds(shard, e.Str) {
			panic("lockcheck: " + x.cmd.FullName() + " stores bytes of the keyspace (copy them with owned)")
		}
	}
	if x.ex.locks.all {
		for db, m := range x.s.dbs {
			for i := range m.NumShards() {
				check(db, i)
			}
		}
		return
	}
	for _, it := range x.ex.locks.items {
		check(it.db, it.shard)
	}
}

// checkHeld panics when the execution does not hold shard (db, shard):
// the handler would touch state another command may be changing, and
// its effect could reach the log out of lock order.
func (x *Ctx) checkHeld(db, shard int) {
	if !x.ex.locks.holds(db, shard) {
		panic("lockcheck: " + x.cmd.FullName() + " touches a shard it does not hold")
	}
}

// keyHash returns key's hash in the selected database, its shard and the
// number of shards (hot-key counting: hotkeys.go).
func (x *Ctx) keyHash(key []byte) (h uint64, shard, nShards int) {
	h = x.ks.Hash(key)
	return h, x.ks.ShardOfHash(h), x.ks.NumShards()
}

// withShard runs fn with shard i of the selected database locked, for a
// command that holds no shard (RL.HOTKEYS reads each shard's hot-key
// sketch under its lock).
func (x *Ctx) withShard(i int, fn func()) {
	m := x.s.dbs[x.c.db]
	m.Lock(i)
	defer m.Unlock(i)
	fn()
}
