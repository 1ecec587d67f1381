package shards

import (
	"bytes"
	"errors"
	"math/bits"
	"sync"
	"sync/atomic"

	"math/rand/v2"

	"github.com/cespare/xxhash/v2"
)

// MaxShards bounds the shard count so that a SCAN cursor can carry the shard
// index in its top 16 bits.
const MaxShards = 1 << 16

// MaxKeysPerShard is the most keys one shard can hold: a shard's table has
// at most 2^24 slots (the 24-bit hash tag must tell every slot apart) and
// grows once more than 85% of them are used. NewWithLimit can set a lower
// limit.
const MaxKeysPerShard = maxSlots * loadNum / loadDen

// ErrFull is returned by PutChecked when the key is new and its shard holds
// as many keys as it can (Room is 0). It is the keyspace's out-of-memory
// condition: a server replies with an error (Redis's "-OOM ...") instead of
// storing the key; more shards raise the limit.
var ErrFull = errors.New("shards: the key's shard is full (no room for another key; configure more shards)")

// Map is one database: a lock-striped map of keys. It is safe for concurrent
// use under the locking rules in the package documentation.
type Map struct {
	shards []shard
	mask   uint64
	seed   uint64 // random per Map: see hash
	limit  int    // most keys one shard may hold (Room)

	expiredKeys atomic.Int64     // keys removed because their expiry passed
	onExpire    func(key []byte) // SetExpireHook's function, or nil
	keepExpired atomic.Bool      // SetKeepExpired: expired keys are hidden, never removed
	expireNext  atomic.Uint64    // next shard the active expiry cycle visits
	mapped      atomic.Int64     // bytes of slot arrays mapped outside the Go heap
	bytes       atomic.Int64     // the shards' accounted bytes (memory.go)
	tight       atomic.Bool      // SetTightArena; every table points at it

	// Access tracking and eviction (access.go, evict.go).
	tracking  atomic.Uint32 // a Tracking
	lruClock  atomic.Uint32 // seconds, set by SetAccessClock
	lfuFactor atomic.Uint32 // lfu-log-factor
	lfuDecay  atomic.Uint32 // lfu-decay-time, minutes
	evicted   atomic.Int64  // keys removed by EvictLocked
}

// shard is one stripe. Fields other than the atomics are guarded by mu.
//
// mark sits right after mu, so that a command reading or stamping it after
// taking the lock finds it in the same cache line. frozen, touched only by
// snapshots, comes last: with the padding after it, at least 64 bytes that
// no command writes separate the fields a command uses from the next
// shard's lock. (The struct is 384 bytes on 64-bit platforms.)
type shard struct {
	mu   sync.Mutex
	mark int64 // log position of the last effect on this shard (Mark)
	t    table

	watch map[string][]*Watch // nil until the first WATCH
	keys  atomic.Int64        // live slots, readable without mu

	snapPending bool // a snapshot began and this shard is not frozen yet

	expires   atomic.Int64 // entries with Exp != 0, readable without mu
	expCursor int          // slot where the next active-expiry sample starts
	reported  int64        // acct() as last added to Map.bytes (memory.go)
	rng       uint64       // eviction sampling's random state (access.go)
	hint      slotHint     // where t.slots is, readable without mu

	frozen *Frozen  // this shard at the snapshot's instant, until taken
	_      [56]byte // keep neighbouring shards' locks off one cache line
}

// New returns a Map with n shards; n is rounded up to a power of two and
// clamped to [1, MaxShards]. A shard holds up to MaxKeysPerShard keys.
func New(n int) *Map { return NewWithLimit(n, 0) }

// NewWithLimit is New with at most maxKeysPerShard keys per shard, so that
// tests can fill a shard with a few keys. 0 (or less) means the natural
// limit, MaxKeysPerShard, which is also the most a limit can be.
func NewWithLimit(n int, maxKeysPerShard int) *Map {
	if n < 1 {
		n = 1
	}
	if n > MaxShards {
		n = MaxShards
	}
	n = 1 << bits.Len(uint(n-1))
	limit := MaxKeysPerShard
	if maxKeysPerShard > 0 && maxKeysPerShard < limit {
		limit = maxKeysPerShard
	}
	m := &Map{shards: make([]shard, n), mask: uint64(n - 1), seed: rand.Uint64(), limit: limit}
	for i := range m.shards {
		s := &m.shards[i]
		s.t.alloc = slotAlloc{mapped: &m.mapped, hint: &s.hint}
		s.t.tight = &m.tight
	}
	return m
}

// MappedBytes returns the bytes of slot arrays held outside the Go heap
// (slotmem.go); they count towards the process's memory like the heap does.
func (m *Map) MappedBytes() int64 { return m.mapped.Load() }

// NumShards returns the number of shards.
func (m *Map) NumShards() int { return len(m.shards) }

// ShardOf returns the index of the shard that holds key.
func (m *Map) ShardOf(key []byte) int { return int(m.hash(key) & m.mask) }

// hash is xxhash64 of the key mixed with the map's random seed (the
// finalizer of SplitMix64). The seed makes placement differ from process to
// process: loading a snapshot written in one table's slot order does not
// arrive sorted for the next table (which would pile keys into long probe
// runs while the table grows), and a client cannot choose keys that collide
// in shard and slot.
func (m *Map) hash(key []byte) uint64 {
	h := xxhash.Sum64(key) ^ m.seed
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}

// Lock locks shard i.
func (m *Map) Lock(i int) { m.shards[i].mu.Lock() }

// TryLock locks shard i if it is free, and reports whether it did.
func (m *Map) TryLock(i int) bool { return m.shards[i].mu.TryLock() }

// Unlock unlocks shard i, first adding the change of its memory figure to
// the Map's total (memory.go).
func (m *Map) Unlock(i int) {
	s := &m.shards[i]
	m.report(s)
	s.mu.Unlock()
}

// Hash returns the hash that places key in m, for the prefetch hints.
func (m *Map) Hash(key []byte) uint64 { return m.hash(key) }

// ShardOfHash is ShardOf for a key whose Hash is h.
func (m *Map) ShardOfHash(h uint64) int { return int(h & m.mask) }

// locate hashes key once: its shard (low bits) and its tag (top bits).
func (m *Map) locate(key []byte) (*shard, uint32) { return m.locateHash(m.hash(key)) }

// locateHash is locate for a key whose hash is h.
func (m *Map) locateHash(h uint64) (*shard, uint32) { return &m.shards[h&m.mask], tagOf(h) }

// Ref is a key located in its shard by Lookup, so that Set can write it
// without hashing and probing again. A Ref is valid only until the next
// change to its shard by anything else.
type Ref struct {
	s   *shard
	key []byte
	tag uint32
	i   int // slot index; -1 when the key is absent
	// expired: slot i holds the key, expired and already counted as such,
	// left in place by LookupForSet for a Set (or Discard) through r.
	expired bool
}

// SameShard reports whether r and o locate keys in one shard, where a
// change through either (or any other change to the shard) may leave the
// other stale.
func (r Ref) SameShard(o Ref) bool { return r.s == o.s }

// Refind returns r located again, valid after changes to its shard since
// r was made (a key inserted, moved or removed). Requires r's shard locked.
func (r Ref) Refind() Ref {
	r.i = r.s.t.find(r.key, r.tag)
	r.expired = r.expired && r.i >= 0
	return r
}

// Holds reports, without hashing or probing, whether r's slot still holds
// r's key, so that r is still valid: a Ref to a present key stays usable
// through changes to its shard that did not move the key. It is false for
// a Ref to an absent key (Lookup or Refind then locates it), and for one
// holding an expired key left in place. It says nothing of the key's
// expiry. Requires r's shard locked.
func (r Ref) Holds() bool {
	t := &r.s.t
	if r.i < 0 || r.expired || r.i >= len(t.slots) {
		return false
	}
	if m := t.slots[r.i].meta; m == 0 || m&^0xff != r.tag<<tagShift {
		return false
	}
	k, _, _ := t.keyAt(r.i)
	return bytes.Equal(k, r.key)
}

// Key returns the key r locates (the bytes given to the lookup).
func (r Ref) Key() []byte { return r.key }

// Expired reports whether r holds an expired key LookupForSet left in
// place, which a Set or Discard through r must follow.
func (r Ref) Expired() bool { return r.expired }

// Current reports whether r is still valid: its slot holds its key, or
// the key is still absent. For checks (the server's lockcheck builds): a
// Set through a stale Ref writes over another key. Requires r's shard
// locked.
func (r Ref) Current() bool { return r.s.t.find(r.key, r.tag) == r.i }

// Lookup returns the live entry for key and a Ref to write it through. A key
// whose expiry is at or before now is deleted (lazy expiry) and reported
// missing. A KindBytes entry's Str is a read-only view that stays valid after
// later writes. Requires key's shard locked.
func (m *Map) Lookup(key []byte, now int64) (Entry, Ref, bool) {
	return m.lookup(key, now, false)
}

// LookupForSet is Lookup for a caller that, before anything else changes
// key's shard, either stores key through the Ref (Set) or calls Discard. A
// key whose expiry has passed is reported missing and counted as expired
// as Lookup does, but left in its slot: the Set rewrites its record in
// place (a limiter key that expired between two requests costs no delete,
// no insert and no garbage), and Discard removes it. Requires key's shard
// locked.
func (m *Map) LookupForSet(key []byte, now int64) (Entry, Ref, bool) {
	return m.lookup(key, now, true)
}

// LookupIntoHash is Lookup writing the entry and the Ref through e and r
// (both overwritten), which saves copying them back through the caller's
// calls (a hot path's lookup: CL.THROTTLE's, RL.*'s, the natives'), for a
// caller that has key's Hash already (its lock was worked out from it):
// h must be m.Hash(key).
func (m *Map) LookupIntoHash(key []byte, h uint64, now int64, e *Entry, r *Ref) bool {
	return m.lookupInto(key, h, now, false, e, r)
}

// LookupForSetIntoHash is LookupIntoHash for LookupForSet.
func (m *Map) LookupForSetIntoHash(key []byte, h uint64, now int64, e *Entry, r *Ref) bool {
	return m.lookupInto(key, h, now, true, e, r)
}

func (m *Map) lookup(key []byte, now int64, forSet bool) (e Entry, r Ref, found bool) {
	found = m.lookupInto(key, m.hash(key), now, forSet, &e, &r)
	return e, r, found
}

func (m *Map) lookupInto(key []byte, h uint64, now int64, forSet bool, e *Entry, r *Ref) bool {
	s, tag := m.locateHash(h)
	*r = Ref{s: s, key: key, tag: tag, i: s.t.find(key, tag)}
	if r.i < 0 {
		*e = Entry{}
		return false
	}
	*e = s.t.entry(r.i)
	if e.Exp != 0 && e.Exp <= now {
		switch {
		case m.keepExpired.Load():
			// hidden, not removed: a Set through r replaces it
		case forSet:
			m.expired(key)
			r.expired = true
		default:
			s.deleteAtLocked(r.i, key, e.Exp, false)
			m.expired(key)
			r.i = -1
		}
		*e = Entry{}
		return false
	}
	if m.tracking.Load() != 0 {
		m.touch(s, r.i, false)
	}
	return true
}

// Discard removes the expired key LookupForSet left in r's slot, for a
// caller that does not store it; for any other Ref it does nothing.
// Requires r's shard locked.
func (m *Map) Discard(r Ref) {
	if r.expired {
		r.s.deleteAtLocked(r.i, r.key, r.s.t.expAt(r.i), false)
	}
}

// SetExpireHook makes the Map call fn with the key of every key that a
// command's access (lazy expiry) or the active expiry cycle removes because
// its expiry passed, while the key's shard is locked; the key bytes are
// valid only during the call. fn must not use the Map. Set it before the
// Map is shared (the server invalidates client-side caches with it).
func (m *Map) SetExpireHook(fn func(key []byte)) { m.onExpire = fn }

// SetKeepExpired makes reads hide expired keys without removing them and
// stops active expiry (on), or restores both (off). A cluster follower
// keeps expired keys: only the leader decides that a key is gone (by its
// clock) and replicates the removal, so a follower whose clock runs ahead
// never drops a key the leader still changes.
func (m *Map) SetKeepExpired(on bool) { m.keepExpired.Store(on) }

// expired counts one key removed by expiry and calls the hook.
func (m *Map) expired(key []byte) {
	m.expiredKeys.Add(1)
	if m.onExpire != nil {
		m.onExpire(key)
	}
}

// Find is Lookup without expiry: it returns the entry for key even if its
// expiry has passed, and deletes nothing. Applying logged effects uses it,
// because replay decides nothing by the clock. Requires key's shard locked.
func (m *Map) Find(key []byte) (Entry, Ref, bool) {
	s, tag := m.locate(key)
	r := Ref{s: s, key: key, tag: tag, i: s.t.find(key, tag)}
	if r.i < 0 {
		return Entry{}, r, false
	}
	return s.t.entry(r.i), r, true
}

// Mutable returns the collection value (an Object) of the present key r
// refers to, for the caller to change in place. If a snapshot may still
// read the value, it is first replaced by a clone (copy on write), so a
// snapshot never sees a later change. Mutable does not mark the key's
// watchers: the caller calls Touched once it has changed the value.
// Requires the shard locked and r from a Lookup or Find that found an
// entry of a collection kind.
func (m *Map) Mutable(r Ref) any {
	r.s.beforeChangeLocked()
	return r.s.t.mutableObj(r.i)
}

// Touched marks the watchers of the key r refers to dirty, after its
// value was changed in place through Mutable. Requires the shard locked.
func (m *Map) Touched(r Ref) {
	r.s.t.measure(r.s.t.slots[r.i].num)
	r.s.touchLocked(r.key)
}

// Get is Lookup without the Ref.
func (m *Map) Get(key []byte, now int64) (Entry, bool) {
	e, _, ok := m.Lookup(key, now)
	return e, ok
}

// Set stores e at the key r refers to, replacing any previous value. Key
// and value bytes are copied, so they may alias a request buffer. e.Exp
// must not be negative (0 means no expiry). Requires the shard locked.
//
// Adding a key (r from a Lookup that found none) requires room in the
// shard: the caller checks Room (or uses PutChecked) first. Set panics if
// the key is new and the shard is full.
func (m *Map) Set(r Ref, e Entry) {
	s := r.s
	if r.i < 0 && s.t.n >= m.limit {
		panic("shards: Set or Put of a new key into a full shard: the caller did not check Room (or use PutChecked)")
	}
	s.beforeChangeLocked()
	oldExp, existed := s.t.putAt(r.i, r.key, r.tag, e)
	switch {
	case !existed:
		s.keys.Add(1)
		if m.tracking.Load() != 0 {
			m.touch(s, s.t.find(r.key, r.tag), true)
		}
	case r.expired && m.tracking.Load() != 0:
		m.touch(s, r.i, true) // a new key in an expired one's slot (LookupForSet)
	}
	if d := expDelta(oldExp, e.Exp, existed); d != 0 {
		s.expires.Add(d)
	}
	s.touchLocked(r.key)
}

// Put stores e under key (Lookup then Set). Requires key's shard locked.
// Like Set, it panics if key is new and the shard is full: the caller
// checks Room first, or uses PutChecked.
func (m *Map) Put(key []byte, e Entry) {
	s, tag := m.locate(key)
	m.Set(Ref{s: s, key: key, tag: tag, i: s.t.find(key, tag)}, e)
}

// PutChecked is Put for a caller that has not checked Room, such as code
// loading a snapshot or replaying a log: if key is new and its shard is
// full, it stores nothing and returns ErrFull. Replacing a key that is
// present (even expired, not yet removed) always works. Requires key's
// shard locked.
func (m *Map) PutChecked(key []byte, e Entry) error {
	s, tag := m.locate(key)
	i := s.t.find(key, tag)
	if i < 0 && s.t.n >= m.limit {
		return ErrFull
	}
	m.Set(Ref{s: s, key: key, tag: tag, i: i}, e)
	return nil
}

// AddObject stores e, whose Obj is a new collection value that nothing
// else refers to, under key, which must be absent, and returns a Ref to
// it. The table owns the value from then on: Mutable changes it in place
// without a first copy. ErrFull if the shard is full. Requires key's
// shard locked.
func (m *Map) AddObject(key []byte, e Entry) (Ref, error) {
	s, tag := m.locate(key)
	r := Ref{s: s, key: key, tag: tag, i: s.t.find(key, tag)}
	if r.i >= 0 {
		panic("shards: AddObject of a key that is present")
	}
	if s.t.n >= m.limit {
		return Ref{}, ErrFull
	}
	m.Set(r, e) // freezes a pending snapshot first: it cannot see the value
	r.i = s.t.find(key, tag)
	s.t.setMine(s.t.slots[r.i].num, true)
	return r, nil
}

// Mark returns shard i's durability mark: the log position (an offset in
// the append-only log, or a Raft index) of the last effect written to the
// shard, as SetMark recorded it; 0 if none was. The package does not
// interpret it (see "Durability marks" in the package documentation).
// Requires shard i locked.
func (m *Map) Mark(i int) int64 { return m.shards[i].mark }

// SetMark raises shard i's durability mark to pos; a pos below the current
// mark leaves it unchanged, so the mark never goes back. Requires shard i
// locked.
func (m *Map) SetMark(i int, pos int64) {
	s := &m.shards[i]
	s.mark = max(s.mark, pos)
}

// Room returns how many more keys shard i can take: its limit (see
// NewWithLimit) minus the keys it holds, counting expired keys not yet
// removed, never less than 0. A command that may add keys to a shard checks
// that Room covers them before it changes anything, and replies with an
// error (ErrFull) otherwise. Requires shard i locked.
func (m *Map) Room(i int) int {
	return max(0, m.limit-m.shards[i].t.n)
}

func expDelta(oldExp, newExp int64, existed bool) int64 {
	var d int64
	if existed && oldExp != 0 {
		d--
	}
	if newExp != 0 {
		d++
	}
	return d
}

// Delete removes key and reports whether it was present and live.
// Requires key's shard locked.
func (m *Map) Delete(key []byte, now int64) bool {
	s, tag := m.locate(key)
	i := s.t.find(key, tag)
	if i < 0 {
		return false
	}
	exp := s.t.expAt(i)
	if exp == 0 || exp > now {
		s.beforeChangeLocked() // an explicit delete, not an expiry
	}
	s.deleteAtLocked(i, key, exp, false)
	if exp != 0 && exp <= now {
		m.expired(key)
		return false
	}
	return true
}

// deleteAtLocked removes slot i, whose key is key and expiry exp. swept
// says active expiry's sweep is deleting (table.delSwept). Requires the
// shard locked.
func (s *shard) deleteAtLocked(i int, key []byte, exp int64, swept bool) {
	if swept {
		s.t.delSwept(i)
	} else {
		s.t.del(i)
	}
	s.keys.Add(-1)
	if exp != 0 {
		s.expires.Add(-1)
	}
	s.touchLocked(key)
}

// ArenaHolds reports whether b lies, even in part, in the memory where
// shard i keeps its records (for checks of the callers' invariants, such
// as the server's lockcheck builds). Requires shard i locked.
func (m *Map) ArenaHolds(i int, b []byte) bool {
	a := m.shards[i].t.arena
	return overlaps(a[:cap(a)], b)
}

// Len returns the number of keys, counting expired keys not yet removed (as
// Redis's DBSIZE does). It takes no lock.
func (m *Map) Len() int64 {
	var n int64
	for i := range m.shards {
		n += m.shards[i].keys.Load()
	}
	return n
}

// Expires returns the number of keys with an expiry. It takes no lock.
func (m *Map) Expires() int64 {
	var n int64
	for i := range m.shards {
		n += m.shards[i].expires.Load()
	}
	return n
}

// ExpiredKeys returns how many keys were removed because they expired.
func (m *Map) ExpiredKeys() int64 { return m.expiredKeys.Load() }

// FlushLocked removes every key of shard i. Requires shard i locked.
func (m *Map) FlushLocked(i int) {
	s := &m.shards[i]
	s.beforeChangeLocked()
	// Like Redis, a flush breaks only the WATCHes of keys that existed.
	for k, ws := range s.watch {
		if s.t.find([]byte(k), tagOf(m.hash([]byte(k)))) >= 0 {
			for _, w := range ws {
				w.Dirty.Store(true)
			}
		}
	}
	s.t.reset()
	s.keys.Store(0)
	s.expires.Store(0)
}

// Flush removes every key, locking one shard at a time. Requires no shard held.
func (m *Map) Flush() {
	for i := range m.shards {
		m.Lock(i)
		m.FlushLocked(i)
		m.Unlock(i)
	}
}

// Remove deletes key whatever its expiry, and reports whether it was
// there. It reads no time: applying a logged delete. Requires key's shard
// locked.
func (m *Map) Remove(key []byte) bool {
	s, tag := m.locate(key)
	i := s.t.find(key, tag)
	if i < 0 {
		return false
	}
	s.beforeChangeLocked()
	s.deleteAtLocked(i, key, s.t.expAt(i), false)
	return true
}
