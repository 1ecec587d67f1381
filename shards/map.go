package shards

import (
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
)

// MaxShards bounds the shard count so that a SCAN cursor can carry the shard
// index in its top 16 bits.
const MaxShards = 1 << 16

// Map is one database: a lock-striped map of keys. It is safe for concurrent
// use under the locking rules in the package documentation.
type Map struct {
	shards []shard
	mask   uint64

	expiredKeys atomic.Int64  // keys removed because their expiry passed
	expireNext  atomic.Uint64 // next shard the active expiry cycle visits
}

// shard is one stripe. Fields other than the atomics are guarded by mu.
type shard struct {
	mu      sync.Mutex
	m       map[string]Entry // nil until the first insert
	watch   map[string][]*Watch
	keys    atomic.Int64 // len(m), readable without mu
	expires atomic.Int64 // entries with Exp != 0, readable without mu
	_       [64]byte     // keep neighbouring shards' locks off one cache line
}

// New returns a Map with n shards; n is rounded up to a power of two and
// clamped to [1, MaxShards].
func New(n int) *Map {
	if n < 1 {
		n = 1
	}
	if n > MaxShards {
		n = MaxShards
	}
	n = 1 << bits.Len(uint(n-1))
	return &Map{shards: make([]shard, n), mask: uint64(n - 1)}
}

// Hash returns the hash that places key.
func Hash(key []byte) uint64 { return xxhash.Sum64(key) }

// NumShards returns the number of shards.
func (m *Map) NumShards() int { return len(m.shards) }

// ShardOf returns the index of the shard that holds key.
func (m *Map) ShardOf(key []byte) int { return int(xxhash.Sum64(key) & m.mask) }

// Lock locks shard i.
func (m *Map) Lock(i int) { m.shards[i].mu.Lock() }

// Unlock unlocks shard i.
func (m *Map) Unlock(i int) { m.shards[i].mu.Unlock() }

func (m *Map) shardFor(key []byte) *shard { return &m.shards[xxhash.Sum64(key)&m.mask] }

// Get returns the live entry for key. A key whose expiry is at or before now
// is deleted (lazy expiry) and reported missing. Requires key's shard locked.
func (m *Map) Get(key []byte, now int64) (Entry, bool) {
	s := m.shardFor(key)
	e, ok := s.m[string(key)]
	if !ok {
		return Entry{}, false
	}
	if e.Exp != 0 && e.Exp <= now {
		s.deleteLocked(string(key), e)
		m.expiredKeys.Add(1)
		return Entry{}, false
	}
	return e, true
}

// Put stores e under key, replacing any previous value. The key bytes are
// copied when the key is new; e's contents are stored as they are.
// Requires key's shard locked.
func (m *Map) Put(key []byte, e Entry) {
	s := m.shardFor(key)
	if s.m == nil {
		s.m = make(map[string]Entry)
	}
	old, existed := s.m[string(key)]
	s.m[string(key)] = e
	if !existed {
		s.keys.Add(1)
	}
	if d := expDelta(old.Exp, e.Exp, existed); d != 0 {
		s.expires.Add(d)
	}
	s.touchLocked(key)
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
	s := m.shardFor(key)
	e, ok := s.m[string(key)]
	if !ok {
		return false
	}
	s.deleteLocked(string(key), e)
	if e.Exp != 0 && e.Exp <= now {
		m.expiredKeys.Add(1)
		return false
	}
	return true
}

func (s *shard) deleteLocked(key string, e Entry) {
	delete(s.m, key)
	s.keys.Add(-1)
	if e.Exp != 0 {
		s.expires.Add(-1)
	}
	s.touchLocked([]byte(key))
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
	// Like Redis, a flush breaks only the WATCHes of keys that existed.
	for k, ws := range s.watch {
		if _, ok := s.m[k]; ok {
			for _, w := range ws {
				w.Dirty.Store(true)
			}
		}
	}
	s.m = nil
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
