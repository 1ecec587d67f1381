package server

import (
	"fmt"
	"runtime/debug"
	"slices"

	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/persistence"
	"github.com/turnstile/turnstile/ratelimit"
)

// execKind is what one atomic unit of execution is.
type execKind uint8

const (
	execCommand execKind = iota // one command outside MULTI
	execMulti                   // the queued commands of one EXEC
)

// execution is one atomic unit: a command, an EXEC, or (later) a script.
// It owns the two things whose order matters (doc.go, "The execution
// contract"): which shard locks are held, from begin to end, and when
// the unit's effects reach the durability log, in end, while those locks
// are still held. Every command of the unit sees the same now.
type execution struct {
	kind    execKind
	now     int64
	locks   lockSet
	effects []persistence.Effect // recorded by Ctx's keyspace methods, committed by end
	// readsAll is set by Ctx's keyspace-wide reads (KEYS, SCAN, DBSIZE,
	// RANDOMKEY), which visit shards without holding them to the end: the
	// reply waits for everything appended so far, not only for the marks
	// of the shards the unit holds.
	readsAll bool
	// wrote is set by Ctx.record: the unit has changed the keyspace.
	wrote bool
	// scriptErrs counts the error replies of commands scripts called in
	// this unit: a script's error reply that comes from one is not
	// counted again in INFO errorstats (run), as Redis counts it once.
	scriptErrs int
	// changed lists the keys the unit changed, for client-side caching
	// invalidation (tracking.go) and for waking blocked clients
	// (blocking.go); noted by Ctx.record only while a client tracks or is
	// blocked, acted on by end.
	changed []changed
	lockBuf [8]lockItem // backing store of locks.items for small units
	// opArgs and opBytes hold the arguments handlers build for the ops
	// they log (Ctx.opArgs): they live until end has appended the effects,
	// and are reused by the next unit, so building an op allocates nothing.
	// opBytes grows by append: the bytes earlier ops point at stay valid
	// in the array they were written in, which is never written again.
	opArgs  [][]byte
	opBytes []byte
	// derived holds the keys of commands whose row derives them from the
	// arguments (Command.DeriveKeys: RL.CHECK), built in derivedBuf;
	// derivedFor is the arguments the one-command path (call) derived
	// them from, for the locks, so that the handler reads them instead of
	// deriving them again (Ctx.derivedKeys). Kept until end, like opBytes,
	// and reused by the next unit.
	derived    [][]byte
	derivedBuf []byte
	derivedFor [][]byte
	// derivedHashes[i] is derived[i]'s hash in the database it was
	// derived for, computed once for its lock and its lookup.
	derivedHashes []uint64
	// rlEntries is the buffer RL.LIMIT decodes a LOG state's entries
	// into (rlApply), reused from call to call: each call is done with
	// them before it returns.
	rlEntries []ratelimit.Entry
	// rlChecks is RL.CHECK's per-rule working space (cmdRLCheck), reused
	// from call to call.
	rlChecks []rlChecked
}

// reset prepares a reused execution for a new unit.
func (ex *execution) reset(kind execKind, now int64) {
	ex.kind, ex.now, ex.readsAll, ex.wrote = kind, now, false, false
	ex.locks = lockSet{items: ex.lockBuf[:0]}
	ex.derived, ex.derivedBuf, ex.derivedFor = ex.derived[:0], ex.derivedBuf[:0], nil
	ex.derivedHashes = ex.derivedHashes[:0]
}

// lockSet is the sorted, de-duplicated set of (database, shard) pairs one
// unit holds.
//
// A set that needs every shard (all) lists every shard in items once it is
// locked, so the methods after lock need no case of their own for it.
type lockSet struct {
	items []lockItem
	all   bool // every shard of every database
	grow  int  // keys the unit may create (see roomForNew)
	// hashed is the last key whose hash the locks were worked out from
	// on the hot paths (a command's one key, a script's first declared
	// key), for the lookups of the same argument (Ctx.hashOf).
	hashed keyHash
}

// keyHash is a key's hash in database db, remembered by the address and
// length of the key's bytes: the request's argument, which does not
// change while its unit runs.
type keyHash struct {
	p     *byte
	n, db int
	h     uint64
}

// remember notes that key (non-empty) in database db hashes to h.
func (l *lockSet) remember(db int, key []byte, h uint64) {
	if len(key) > 0 {
		l.hashed = keyHash{p: &key[0], n: len(key), db: db, h: h}
	}
}

type lockItem struct{ db, shard int }

func (l *lockSet) add(db, shard int) { l.items = append(l.items, lockItem{db, shard}) }

// addCommandLocks adds the shards cmd needs when run with args against
// database db: every shard for a write to the whole keyspace (FLUSHDB,
// FLUSHALL), else the shards of the keys eachKey names. Keys of commands
// that may create keys (command.AddsKeys) are counted in l.grow.
func (s *Server) addCommandLocks(l *lockSet, cmd *Command, args [][]byte, db int) {
	if cmd.Has(command.Write | command.Keyspace) {
		l.all = true
		return
	}
	before := len(l.items)
	if cmd.Locks != nil {
		cmd.Locks(args, db, len(s.dbs), func(d int, key []byte) { l.add(d, s.dbs[d].ShardOf(key)) })
	} else if k := cmd.FirstKey; k > 0 && k == cmd.LastKey && k < len(args) { // the hot path: one key
		m := s.dbs[db]
		h := m.Hash(args[k])
		l.add(db, m.ShardOfHash(h))
		l.remember(db, args[k], h)
	} else { // no closure, no allocation
		var buf [8]int
		for _, p := range cmd.KeyPositions(args, buf[:0]) {
			l.add(db, s.dbs[db].ShardOf(args[p]))
		}
	}
	if cmd.Has(command.AddsKeys) {
		l.grow += len(l.items) - before
	}
	if cmd.AllShards != nil && cmd.AllShards(args) {
		l.all = true
	}
}

// addDerivedLocks is addCommandLocks for the one command of the unit
// when its row derives its keys (cmd.DeriveKeys): they are derived into
// the execution, where the handler finds them (Ctx.derivedKeys), so that
// each key is built once per call and without allocating.
func (ex *execution) addDerivedLocks(s *Server, cmd *Command, args [][]byte, db int) {
	ex.derivedBuf, ex.derived = cmd.DeriveKeys(args, ex.derivedBuf, ex.derived)
	ex.derivedFor = args
	m := s.dbs[db]
	for _, k := range ex.derived {
		h := m.Hash(k)
		ex.derivedHashes = append(ex.derivedHashes, h)
		ex.locks.add(db, m.ShardOfHash(h))
	}
	if cmd.Has(command.AddsKeys) {
		ex.locks.grow += len(ex.derived)
	}
}

// derivedKeys returns the keys the command's row derives from x.args
// (Command.DeriveKeys) and their hashes in the selected database: those
// derived for the locks when the command is the unit's one command
// (addDerivedLocks), else (inside EXEC or a script) derived and hashed
// now into the execution's buffers. They live until the unit ends.
func (x *Ctx) derivedKeys() (keys [][]byte, hashes []uint64) {
	ex := x.ex
	if len(ex.derivedFor) > 0 && len(x.args) > 0 && &ex.derivedFor[0] == &x.args[0] {
		return ex.derived, ex.derivedHashes
	}
	start := len(ex.derived)
	ex.derivedBuf, ex.derived = x.cmd.DeriveKeys(x.args, ex.derivedBuf, ex.derived)
	for _, k := range ex.derived[start:] {
		ex.derivedHashes = append(ex.derivedHashes, x.hashOf(k))
	}
	end := len(ex.derived)
	return ex.derived[start:end:end], ex.derivedHashes[start:end:end]
}

// addKeyLocks adds the shards of keys in database db (a script's
// declared keys).
func (s *Server) addKeyLocks(l *lockSet, db int, keys [][]byte) {
	m := s.dbs[db]
	for i, k := range keys {
		h := m.Hash(k)
		l.add(db, m.ShardOfHash(h))
		if i == 0 {
			l.remember(db, k, h)
		}
	}
}

// eachKey calls fn for every key cmd names in args, with its database:
// the row's Locks function where it names keys of other databases (COPY
// ... DB), else the key positions in db.
func (s *Server) eachKey(cmd *Command, args [][]byte, db int, fn func(db int, key []byte)) {
	if cmd.Locks != nil {
		cmd.Locks(args, db, len(s.dbs), fn)
		return
	}
	var buf [8]int
	for _, p := range cmd.KeyPositions(args, buf[:0]) {
		fn(db, args[p])
	}
}

// roomForNew is the check, made after locking, that a unit creating keys
// (lockSet.grow > 0) fits in shards whose roomForAll failed: it counts, per
// shard, the keys that do not exist yet among those that cmds, run from
// database db, may create, so that updating existing keys, a limiter's
// everyday work, goes on in a full shard. A unit that does not fit is
// refused before anything changes, instead of failing half-way.
func (s *Server) roomForNew(now int64, db int, cmds []queued) bool {
	for it, n := range s.freshKeys(now, db, cmds) {
		if s.dbs[it.db].Room(it.shard) < n {
			return false
		}
	}
	return true
}

// freshKeys counts, per shard, the keys that do not exist yet among those
// that cmds, run from database db, may create.
func (s *Server) freshKeys(now int64, db int, cmds []queued) map[lockItem]int {
	type dbKey struct {
		db  int
		key string
	}
	fresh := make(map[lockItem]int)
	seen := make(map[dbKey]bool)
	eachQueued(db, len(s.dbs), cmds, func(cmd *Command, args [][]byte, db int) {
		if !cmd.Has(command.AddsKeys) {
			return
		}
		s.eachKey(cmd, args, db, func(d int, key []byte) {
			if k := (dbKey{d, string(key)}); !seen[k] {
				seen[k] = true
				if _, ok := s.dbs[d].Get(key, now); !ok {
					fresh[lockItem{d, s.dbs[d].ShardOf(key)}]++
				}
			}
		})
	})
	return fresh
}

// createsKey reports whether cmds, run from database db, may create a key
// that does not exist now.
func (s *Server) createsKey(now int64, db int, cmds []queued) bool {
	found := false
	eachQueued(db, len(s.dbs), cmds, func(cmd *Command, args [][]byte, db int) {
		if found || !cmd.Has(command.AddsKeys) {
			return
		}
		s.eachKey(cmd, args, db, func(d int, key []byte) {
			if !found {
				_, ok := s.dbs[d].Get(key, now)
				found = !ok
			}
		})
	})
	return found
}

// roomError is the error a unit that may create keys (l.grow > 0) gets,
// after locking, when it would create one that does not fit: at the memory
// limit (memFull: no new key at all, errOOM) or in a full shard
// (errShardFull). Units that only update existing keys always run: a
// limiter's everyday work goes on at the limit.
func (s *Server) roomError(memFull bool, l *lockSet, now int64, db int, cmds []queued) string {
	switch {
	case l.grow == 0:
		return ""
	case memFull:
		if s.createsKey(now, db, cmds) {
			return errOOM
		}
		return ""
	case !l.roomForAll(s) && !s.roomForNew(now, db, cmds):
		return errShardFull
	}
	return ""
}

// errShardFull answers a command refused for want of room.
const errShardFull = "OOM command not allowed: a shard of the keyspace is full; restart with more shards (--shards)"

// lock takes the set's locks without ever waiting for one while holding
// another: it waits for one shard, then only tries the others, and when
// one is taken it lets everything go and waits for that one. A unit that
// runs a script (holding the script lock) may then wait for a shard in any
// order while holding others (escalate): nobody it waits for waits for it.
// The items are sorted, so that an uncontended set is taken in the one
// global order (database, then shard index).
func (l *lockSet) lock(s *Server) {
	switch {
	case l.all: // every shard, already in order
		l.items = l.items[:0]
		for d, db := range s.dbs {
			for i := range db.NumShards() {
				l.add(d, i)
			}
		}
	case len(l.items) > 1:
		slices.SortFunc(l.items, compareLockItems)
		l.items = slices.Compact(l.items)
	}
	wait := 0 // the item to wait for
	for len(l.items) > 0 {
		first := l.items[wait]
		s.dbs[first.db].Lock(first.shard)
		taken := -1
		for i, it := range l.items {
			if i != wait && !s.dbs[it.db].TryLock(it.shard) {
				taken = i
				break
			}
		}
		if taken < 0 {
			return
		}
		for i, it := range l.items[:taken] {
			if i != wait {
				s.dbs[it.db].Unlock(it.shard)
			}
		}
		s.dbs[first.db].Unlock(first.shard)
		wait = taken
	}
}

func compareLockItems(a, b lockItem) int {
	if a.db != b.db {
		return a.db - b.db
	}
	return a.shard - b.shard
}

// escalate adds shard (db, shard) to a set that is locked already, waiting
// for it if another unit holds it. Only a unit holding the script lock may
// do this (see lock).
func (l *lockSet) escalate(s *Server, db, shard int) {
	if l.all || l.holds(db, shard) {
		return
	}
	s.dbs[db].Lock(shard)
	l.add(db, shard)
}

// escalateAll adds every shard of every database to a locked set, as
// escalate does.
func (l *lockSet) escalateAll(s *Server) {
	if l.all {
		return
	}
	for d, db := range s.dbs {
		for i := range db.NumShards() {
			if !l.holds(d, i) {
				db.Lock(i)
			}
		}
	}
	l.items = l.items[:0]
	for d, db := range s.dbs {
		for i := range db.NumShards() {
			l.add(d, i)
		}
	}
	l.all = true
}

func (l *lockSet) unlock(s *Server) {
	for _, it := range l.items {
		s.dbs[it.db].Unlock(it.shard)
	}
}

// roomForAll reports whether every held shard has room for l.grow keys:
// the check every unit that may create keys makes, one comparison a shard.
func (l *lockSet) roomForAll(s *Server) bool {
	for _, it := range l.items {
		if s.dbs[it.db].Room(it.shard) < l.grow {
			return false
		}
	}
	return true
}

// stamp raises the durability mark of every held shard to pos.
func (l *lockSet) stamp(s *Server, pos int64) {
	for _, it := range l.items {
		s.dbs[it.db].SetMark(it.shard, pos)
	}
}

// mark returns the highest durability mark among the held shards.
func (l *lockSet) mark(s *Server) int64 {
	var m int64
	for _, it := range l.items {
		m = max(m, s.dbs[it.db].Mark(it.shard))
	}
	return m
}

// holds reports whether the set holds the shard (db, shard). Linear: used
// by the lock check (lockcheck builds) only.
func (l *lockSet) holds(db, shard int) bool {
	for _, it := range l.items {
		if it.db == db && it.shard == shard {
			return true
		}
	}
	return false
}

// call runs one command outside MULTI as its own execution.
func (s *Server) call(c *client, cmd *Command, args [][]byte) {
	ex := &c.ex
	ex.reset(execCommand, s.clock.Now())
	if !cmd.Has(command.Scripting) { // a script takes the script lock, then its shards (cmdEval)
		c.releaseScriptLock() // held from the scripts before in the batch; EXEC takes it itself
		if cmd.DeriveKeys != nil {
			ex.addDerivedLocks(s, cmd, args, c.db)
		} else {
			s.addCommandLocks(&ex.locks, cmd, args, c.db)
		}
		ex.locks.lock(s)
	}
	c.touch(ex.now)
	if ex.locks.grow > 0 { // may create keys: they must fit
		if e := s.roomError(c.memFull, &ex.locks, ex.now, c.db, []queued{{cmd, args}}); e != "" {
			c.w.Error(e)
			s.end(c, ex)
			if c.blocked != nil { // a blocked command's retry: the error ends the block
				s.blocked.remove(c)
			}
			s.stats.reject(cmd)
			countError(s, e)
			return
		}
	}
	x := &c.ctx
	x.init(s, c, cmd, args, ex)
	mark := c.w.Len()
	// MONITOR (monitor.go): a command is shown once it ran, a script
	// before (its redis.call lines follow it); a blocked command's retry
	// is not shown again.
	monitored := s.ops.monitors.n.Load() != 0 && c.blocked == nil
	if monitored && cmd.Has(command.Scripting) {
		s.feedMonitors(c, cmd, args, false)
	}
	failed := s.run(x)
	s.end(c, ex)
	if monitored && !cmd.Has(command.Scripting) {
		s.feedMonitors(c, cmd, args, false)
	}
	if c.blocked != nil { // blocking.go
		if c.w.Len() == mark {
			return // blocked, or still blocked: counted when the block ends
		}
		s.blocked.remove(c) // a blocked command answered: the block is over
	}
	// Command time for INFO commandstats is sampled (one call in
	// timingSample, scaled up): reading the clock twice per command costs
	// more than the fastest commands themselves. Every call is timed while
	// the slow log or the latency monitor needs it (ops.go).
	var usec int64
	c.calls++
	if all, sample := s.ops.timeAll.Load(), c.calls%timingSample == 0; all || sample {
		usec = s.observe(c, cmd, args, ex.now, s.clock.Now()-ex.now, all, sample)
	}
	s.stats.record(cmd, usec, failed)
}

// run calls the handler and reports whether it answered an error. A panic
// is recovered: the partial reply is replaced by an error, and what the
// handler changed before it is still committed by the caller's end, so
// the log never disagrees with memory. run neither locks nor commits.
func (s *Server) run(x *Ctx) (failed bool) {
	mark := x.w.Len()
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("panic in command handler", "cmd", x.cmd.FullName(), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			x.w.Truncate(mark)
			x.w.Error(errInternal)
			countError(s, errInternal)
			failed = true
		}
	}()
	var scriptErrs int
	if x.cmd.Flags&command.Scripting != 0 {
		scriptErrs = x.ex.scriptErrs
	}
	x.cmd.Handler(x)
	if lockCheck && x.leftExpired != 0 {
		panic("lockcheck: " + x.cmd.FullName() + " left an expired key in place: a lookupForSetInto without a set or discard after it")
	}
	if x.c.trackOn && x.cmd.Has(command.Readonly) {
		s.track.remember(x) // still holding the keys' shards
	}
	if x.w.Len() > mark && x.w.Bytes()[mark] == '-' {
		if x.cmd.Flags&command.Scripting == 0 || x.ex.scriptErrs == scriptErrs {
			s.countReplyError(x.w.Bytes()[mark:]) // INFO errorstats
		}
		return true
	}
	return false
}

// end ends an execution, in this order and nowhere else: its effects
// go to the durability log (so per-key log order is lock order), the log
// position is stamped on every shard it holds, the connection's reply is
// made to wait for the marks of every shard it read (its own writes and
// anyone else's it saw), and only then are the locks released. The
// invalidations for client-side caching are queued before the unlock too,
// so a client that read a changed key before the change hears of it, and
// so are the wake-ups of clients blocked on a changed key (blocking.go),
// which registered under the same shard locks.
func (s *Server) end(c *client, ex *execution) {
	if len(ex.changed) > 0 {
		if s.track.n.Load() != 0 {
			s.track.invalidate(c, ex.changed)
		}
		if s.blocked.n.Load() != 0 && s.blocked.waitingOn(&ex.locks) {
			s.blocked.signal(s, ex.changed)
		}
		clear(ex.changed)
		ex.changed = ex.changed[:0]
	}
	if d := s.durability(); d != nil {
		if len(ex.effects) > 0 {
			pos := d.Append(ex.effects)
			clear(ex.effects) // drop references to request buffers
			ex.effects = ex.effects[:0]
			ex.locks.stamp(s, pos)
		}
		c.waitFor(ex.locks.mark(s))
		if ex.readsAll {
			c.waitFor(d.Tail())
		}
		if s.repl != nil && (len(ex.locks.items) > 0 || ex.readsAll) {
			c.replWait = true // Wait confirms leadership too (replwait.go)
		}
	}
	clear(ex.opArgs) // the effects are encoded: the op arguments may go
	ex.opArgs, ex.opBytes = ex.opArgs[:0], ex.opBytes[:0]
	ex.locks.unlock(s)
}
