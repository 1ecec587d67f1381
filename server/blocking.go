package server

import (
	"math"
	"math/big"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnstile/turnstile/shards"
)

// Blocking commands: BLPOP, BRPOP, BRPOPLPUSH, BLMOVE, BLMPOP (lists),
// BZPOPMIN, BZPOPMAX, BZMPOP (sorted sets) and XREAD with BLOCK (streams,
// which it reads and does not take: see cmd_stream_read.go).
//
// A blocking command whose keys hold data acts at once, like its
// non-blocking form. Otherwise, when blocking is allowed (a plain command:
// not inside EXEC, not from a script, where the command answers as if its
// timeout had passed at once), the handler calls Ctx.block, which, while
// the execution still holds the keys' shards, registers the client as a
// waiter on each (database, key, kind) in the server's blockRegistry and
// keeps a copy of the command and its arguments (client.blocked). No
// reply is written; end releases the locks as usual.
//
// The connection goroutine does not wait anywhere special: process stops
// taking requests while the client is blocked (the replies before the
// blocking command are flushed, the requests after it stay in the input
// buffer), and the connection loop goes back to waiting for input, with a
// read deadline at the block's timeout. A wake-up comes the way outbound
// messages come (outq.go): the waker sets client.bwake and expires the read
// deadline; the loop then calls process, which runs the blocked command
// again as a new execution (its own now, its own locks and effects) through
// call. The command either answers (a pop, or an error such as WRONGTYPE
// for BLMOVE's destination), which ends the block, or finds nothing and
// stays registered, keeping its place. A passed deadline answers the
// timeout reply (a null array, as Redis), CLIENT UNBLOCK answers the
// timeout reply or an UNBLOCKED error. A blocked client that disconnects,
// is killed, or whose server closes, leaves the loop like any connection,
// and its teardown unregisters it: no goroutine and no timer is kept per
// blocked client.
//
// Who wakes whom:
//
//   - Writers. Ctx.record notes every changed key while Server.hooks is
//     not 0 (a client tracks or is blocked: the hot path's one atomic
//     load), and end, still holding the shards, calls signal, which wakes
//     the first waiter of each changed key (any change: the woken client
//     re-checks), or every XREAD waiting on a changed stream. That covers
//     every command, EXEC, scripts, RENAME/COPY/RESTORE into a key and the
//     push of an LMOVE or of a served BLMOVE.
//   - Order. Waiters on one key are served first come, first served: a
//     blocked command takes an element from a key only if it is the first
//     waiter of that key's queue, and a blocking command that arrives while
//     others wait on its key queues behind them. Whenever a waiter leaves a
//     queue (served, timed out, unblocked, gone), the new first waiter is
//     woken, so an element a waiter did not take is offered to the next.
//   - Types. The queues are kept per kind (list, sorted set). While a
//     client is blocked, a key of another type counts as empty (Redis 7.0
//     keeps such a client blocked); on the first run it is WRONGTYPE.
//
// Cost to others: while any client is blocked, Ctx.record notes every
// change (an append to a reused slice), and end looks at per-shard waiter
// counts (atomics) of the shards it holds; only a unit holding a shard
// that has waiters takes the registry's mutex.
//
// Locking: the registry's mutex is taken while holding shard locks (block,
// signal, mayServe), never the other way round; wake only sets a flag and
// a deadline.
//
// Differences from Redis, all within races: Redis serves a waiter inside
// the writing command, so nothing can run between a push and the pop of
// the client it wakes; here the woken client pops in its own execution
// right after, and a non-blocking pop (LPOP) or a second push from another
// connection may come in between.

// blockRegistry is the server's set of blocked clients, by the keys they
// wait on.
type blockRegistry struct {
	n     atomic.Int32 // blocked clients (INFO blocked_clients)
	timed atomic.Int32 // those with a timeout (INFO clients_in_timeout_table)
	// waiting counts the registered (key, client) pairs per shard, at
	// db*shardsPerDB+shard: end and mayServe skip the mutex for shards
	// without waiters.
	waiting     []atomic.Int32
	shardsPerDB int
	mu          sync.Mutex
	queues      map[blockKey][]*client // waiters in arrival order
}

// blockKey is one key a client waits on, with the kind of value it waits
// for.
type blockKey struct {
	db    int
	key   string
	kind  shards.Kind
	shard int // the key's shard in db
}

// init sizes the per-shard counts for the server's databases.
func (r *blockRegistry) init(dbs []*shards.Map) {
	r.shardsPerDB = dbs[0].NumShards()
	r.waiting = make([]atomic.Int32, len(dbs)*r.shardsPerDB)
}

// waiters is the number of waiters on keys of shard (db, shard).
func (r *blockRegistry) waiters(db, shard int) int32 {
	return r.waiting[db*r.shardsPerDB+shard].Load()
}

// waitingOn reports whether a shard the lock set holds has waiters.
func (r *blockRegistry) waitingOn(l *lockSet) bool {
	for _, it := range l.items {
		if r.waiters(it.db, it.shard) != 0 {
			return true
		}
	}
	return false
}

// blockState is a blocked client's command, owned by its connection
// goroutine.
type blockState struct {
	cmd      *Command
	args     [][]byte // a copy: the input buffer moves on while blocked
	keys     []blockKey
	deadline time.Time // zero: no timeout
}

// Client UNBLOCK requests (client.unblockReq).
const (
	unblockTimeout = 1
	unblockError   = 2
)

const errUnblocked = "UNBLOCKED client unblocked via CLIENT UNBLOCK"

// mayBlock reports whether the running command may block: a plain command
// of a connection, not a command of an EXEC or of a script.
func (x *Ctx) mayBlock() bool {
	return x.ex.kind == execCommand && x.c != x.s.scripts.host.fake
}

// retrying reports whether the command runs again for a blocked client
// (a key of another type then counts as empty).
func (x *Ctx) retrying() bool { return x.c.blocked != nil }

// mayServe reports whether the command may take an element from key (of
// kind k, in the selected database) now: when nobody waits for it, or the
// client is the first waiter. Inside EXEC and scripts, which cannot wait
// their turn, always. The execution holds key's shard.
func (x *Ctx) mayServe(key []byte, k shards.Kind) bool {
	r := &x.s.blocked
	if r.n.Load() == 0 || !x.mayBlock() {
		return true
	}
	shard := x.shardOf(key)
	if r.waiters(x.c.db, shard) == 0 {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock() // remove shifts the queue's elements in place
	q := r.queues[blockKey{x.c.db, string(key), k, shard}]
	return len(q) == 0 || q[0] == x.c
}

// block answers a blocking command that found nothing to take. Where the
// command may not block, it writes the command's immediate reply (null:
// a null bulk when nullBulk, as BRPOPLPUSH and BLMOVE inside MULTI, else
// a null array). Otherwise it registers the client on keys (kind k) with
// the timeout in milliseconds (0: none), unless it is registered already
// (a retry keeps its place), and writes nothing. The execution holds the
// keys' shards, so no change to them can come between the handler's look
// and the registration.
func (x *Ctx) block(keys [][]byte, k shards.Kind, timeoutMs int64, nullBulk bool) {
	c := x.c
	if c.blocked != nil {
		return
	}
	if !x.mayBlock() {
		if nullBulk {
			x.w.Null()
		} else {
			x.w.NullArray()
		}
		return
	}
	b := &blockState{cmd: x.cmd, args: make([][]byte, len(x.args))}
	n := 0
	for _, a := range x.args {
		n += len(a)
	}
	arena := make([]byte, 0, n)
	for i, a := range x.args {
		arena = append(arena, a...)
		b.args[i] = arena[len(arena)-len(a) : len(arena) : len(arena)]
	}
	if timeoutMs > 0 {
		d := time.Duration(math.MaxInt64) // some 292 years: past it, as good as forever
		if timeoutMs < math.MaxInt64/int64(time.Millisecond) {
			d = time.Duration(timeoutMs) * time.Millisecond
		}
		b.deadline = time.Now().Add(d)
	}
	for _, key := range keys {
		bk := blockKey{c.db, string(key), k, x.shardOf(key)}
		if !slices.Contains(b.keys, bk) {
			b.keys = append(b.keys, bk)
		}
	}
	x.s.blocked.add(c, b)
}

// add registers c, blocked with b.
func (r *blockRegistry) add(c *client, b *blockState) {
	r.mu.Lock()
	if r.queues == nil {
		r.queues = make(map[blockKey][]*client)
	}
	for _, bk := range b.keys {
		r.queues[bk] = append(r.queues[bk], c)
		r.waiting[bk.db*r.shardsPerDB+bk.shard].Add(1)
	}
	c.blocked = b
	c.bwake.Store(false)
	c.unblockReq.Store(0)
	c.isBlocked.Store(true)
	r.n.Add(1)
	if !b.deadline.IsZero() {
		r.timed.Add(1)
	}
	c.s.hooks.Add(1)
	r.mu.Unlock()
}

// remove unregisters c, which is blocked, and wakes the new first waiter
// of every queue it headed.
func (r *blockRegistry) remove(c *client) {
	b := c.blocked
	r.mu.Lock()
	for _, bk := range b.keys {
		q := r.queues[bk]
		i := slices.Index(q, c)
		if i < 0 {
			continue
		}
		q = slices.Delete(q, i, i+1)
		r.waiting[bk.db*r.shardsPerDB+bk.shard].Add(-1)
		if len(q) == 0 {
			delete(r.queues, bk)
			continue
		}
		r.queues[bk] = q
		if i == 0 {
			q[0].wake()
		}
	}
	c.blocked = nil
	c.unblockReq.Store(0)
	c.isBlocked.Store(false)
	r.n.Add(-1)
	if !b.deadline.IsZero() {
		r.timed.Add(-1)
	}
	c.s.hooks.Add(-1)
	r.mu.Unlock()
}

// signal wakes the first waiter of each changed key. Called by end while
// the execution holds the keys' shards (of which waitingOn found one with
// waiters).
func (r *blockRegistry) signal(s *Server, changes []changed) {
	r.mu.Lock()
	for _, ch := range changes {
		if ch.flush || len(r.queues) == 0 {
			continue
		}
		shard := s.dbs[ch.db].ShardOf(ch.key)
		if r.waiters(ch.db, shard) == 0 {
			continue
		}
		for _, k := range [...]shards.Kind{shards.KindList, shards.KindZSet} {
			if q := r.queues[blockKey{ch.db, string(ch.key), k, shard}]; len(q) > 0 {
				q[0].wake()
			}
		}
		// Readers of a stream take nothing, and each waits for entries past
		// its own ID: all of them look.
		for _, c := range r.queues[blockKey{ch.db, string(ch.key), shards.KindStream, shard}] {
			c.wake()
		}
	}
	r.mu.Unlock()
}

// unblock asks the blocked client c to stop waiting (CLIENT UNBLOCK), with
// the timeout reply or, for unblockError, an UNBLOCKED error. It reports
// whether c was blocked.
func (r *blockRegistry) unblock(c *client, how int32) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !c.isBlocked.Load() || !c.unblockReq.CompareAndSwap(0, how) {
		return false
	}
	c.wake()
	return true
}

// wake makes c's connection run its blocked command again soon: it sets
// the flag, then expires the read deadline the loop waits with (outq.go).
// It does not block.
func (c *client) wake() {
	if !c.bwake.Swap(true) {
		c.conn.SetReadDeadline(time.Unix(1, 0))
	}
}

// wakePending reports whether something asks the blocked client to look
// again.
func (c *client) wakePending() bool {
	return c.bwake.Load() || c.unblockReq.Load() != 0
}

// serveBlocked runs the client's blocked command again if it was woken,
// or answers its timeout or CLIENT UNBLOCK; it reports whether the block
// is over (its reply written). Called by process before the next request.
func (c *client) serveBlocked() bool {
	s, b := c.s, c.blocked
	switch c.unblockReq.Load() {
	case unblockTimeout:
		c.w.NullArray()
		s.endBlock(c, false)
		return true
	case unblockError:
		c.w.Error(errUnblocked)
		countError(s, errUnblocked)
		s.endBlock(c, true)
		return true
	}
	if c.bwake.Swap(false) {
		s.call(c, b.cmd, b.args)
		if c.blocked == nil {
			return true
		}
	}
	if !b.deadline.IsZero() && !time.Now().Before(b.deadline) {
		c.w.NullArray()
		s.endBlock(c, false)
		return true
	}
	return false
}

// endBlock unregisters c after its block was answered other than by the
// command itself, and counts the command.
func (s *Server) endBlock(c *client, failed bool) {
	cmd := c.blocked.cmd
	s.blocked.remove(c)
	s.stats.record(cmd, 0, failed)
}

// armBlocked sets the read deadline of a blocked client's connection: the
// block's timeout, or the raw loop's recheck if that comes first. A
// wake-up whose expired deadline this replaced is restored.
func (c *client) armBlocked() {
	d := c.blocked.deadline
	if !c.recheckAt.IsZero() && (d.IsZero() || c.recheckAt.Before(d)) {
		d = c.recheckAt
	}
	if d.IsZero() {
		return
	}
	c.conn.SetReadDeadline(d)
	c.restoreWake()
}

// restoreWake expires the read deadline again if a wake-up (a blocked
// client's, an outbound message's, kill's) may have had its expired
// deadline replaced by the caller's.
func (c *client) restoreWake() {
	if c.killed.Load() || c.out.has.Load() || (c.blocked != nil && c.wakePending()) {
		c.conn.SetReadDeadline(time.Unix(1, 0))
	}
}

// leaveBlocked unregisters a client whose connection ends while blocked.
func (c *client) leaveBlocked() {
	if c.blocked != nil {
		c.s.blocked.remove(c)
	}
}

// Timeouts.

const (
	errTimeoutFloat    = "ERR timeout is not a float or out of range"
	errTimeoutNegative = "ERR timeout is negative"
)

// parseTimeout reads a blocking command's timeout, in seconds, and returns
// it in milliseconds, rounded up (0: wait forever), or replies Redis's
// error. As Redis: strtold's syntax (parseLongDouble: hexadecimal too), the
// milliseconds computed in long double precision, then rounded up and
// converted to a 64-bit integer, which must not be negative; an infinity
// or 2^63 ms and more convert to the most negative integer, as on amd64.
func parseTimeout(x *Ctx, b []byte) (int64, bool) {
	ld, ok := parseLongDouble(b)
	if !ok {
		x.w.Error(errTimeoutFloat)
		return 0, false
	}
	if ld.inf {
		x.w.Error(errTimeoutNegative)
		return 0, false
	}
	ms := new(big.Float).SetPrec(ldPrec).Mul(ld.f, big.NewFloat(1000))
	n, acc := ms.Int(nil) // truncated toward zero
	if acc == big.Below { // a positive fraction: round up
		n.Add(n, big.NewInt(1))
	}
	if n.Sign() < 0 || !n.IsInt64() {
		x.w.Error(errTimeoutNegative)
		return 0, false
	}
	return n.Int64(), true
}
