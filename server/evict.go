package server

import (
	"bytes"
	"time"

	"github.com/turnstile/turnstile/persistence"
	"github.com/turnstile/turnstile/shards"
)

// Eviction (see maxmemory.go for when it runs).
//
// evict removes keys one at a time, visiting the shards of every database
// in turn (one shared cursor, so concurrent evictions spread over
// different shards), until used memory is under the limit or its time
// budget is spent. In each shard it visits, shards.Map.EvictLocked samples
// maxmemory-samples keys and removes the policy's victim; a sampled key
// that has already expired goes first, as an expiry. It holds one shard
// lock at a time and is called with none held.
//
// An evicted key is a change like a DEL: its delete is appended to the
// durability log (append-only file or Raft) under its shard's lock, the
// shard's mark is raised to it, watchers and client-side caches hear of
// it, and it counts for the save rules.

// evictBudget bounds the time one command spends evicting; if the limit is
// still not reached by then, the command runs anyway (memory is being
// freed: Redis's EVICT_RUNNING) and the next commands go on.
const evictBudget = time.Millisecond

// evict evicts by p until used memory is at most maxmem or deadline
// passes. It reports whether memory is under the limit or eviction is
// under way (some key was removed); false means nothing could be evicted.
func (s *Server) evict(maxmem int64, p *evictionPolicy, deadline time.Time) bool {
	pol := shards.Policy{Kind: p.kind, Volatile: p.volatile, Samples: int(s.mem.samples.Load())}
	now := s.clock.Now()
	nshards := uint64(s.dbs[0].NumShards())
	total := int(nshards) * len(s.dbs)
	freed, misses := false, 0
	for n := 0; s.usedMemory() > maxmem; n++ {
		if n%16 == 15 && time.Now().After(deadline) {
			return freed
		}
		k := s.mem.cursor.Add(1)
		d, i := int(k/nshards)%len(s.dbs), int(k%nshards)
		db := s.dbs[d]
		removed := false
		if db.Candidates(i, p.volatile) {
			db.Lock(i)
			removed = db.EvictLocked(i, pol, now, func(key []byte, dead bool) {
				if !dead {
					s.keyEvicted(d, i, key)
				}
			})
			db.Unlock(i)
		}
		if removed {
			freed, misses = true, 0
		} else if misses++; misses >= total {
			return freed
		}
	}
	return true
}

// keyEvicted logs and announces the eviction of key from shard i of
// database db, whose lock the caller holds; key is valid during the call.
func (s *Server) keyEvicted(db, i int, key []byte) {
	if s.dur != nil {
		pos := s.dur.Append([]persistence.Effect{{Op: persistence.OpDel, DB: db, Key: key}})
		s.dbs[db].SetMark(i, pos)
	}
	s.dirty.Add(1)
	if s.track.n.Load() != 0 {
		s.track.invalidate(nil, []changed{{key: bytes.Clone(key), db: db}})
	}
}

// evictedKeys is the number of keys evicted over every database.
func (s *Server) evictedKeys() int64 {
	var n int64
	for _, db := range s.dbs {
		n += db.Evicted()
	}
	return n
}
