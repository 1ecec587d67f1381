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

// maxEvictSamples bounds the keys one eviction samples: maxmemory-samples
// takes what Redis takes (up to 2^31-1), but each sample is a cache miss
// under a shard lock, and past a few dozen they choose no better victim.
const maxEvictSamples = 64

// barrenPause is how long, after a full round over the shards found
// nothing to evict, commands skip eviction (and those that grow memory
// get the OOM error at once) instead of each walking every shard again.
const barrenPause = 10 * time.Millisecond

// evict evicts by p until used memory is at most maxmem or deadline
// passes. It reports whether memory is under the limit or being freed
// (the budget ran out while keys were being removed); false means there
// is nothing left to evict.
func (s *Server) evict(maxmem int64, p *evictionPolicy, deadline time.Time) bool {
	if time.Now().UnixNano() < s.mem.barren.Load() {
		return false
	}
	defer s.latencySince("eviction-cycle", time.Now()) // LATENCY (latency.go)
	pol := shards.Policy{Kind: p.kind, Volatile: p.volatile, Samples: min(int(s.mem.samples.Load()), maxEvictSamples)}
	now := s.clock.Now()
	var buf [16]int
	dbs := s.evictableDBs(p.volatile, buf[:0])
	for n := 1; s.usedMemory() > maxmem; n++ {
		if !s.evictOne(dbs, pol, now) {
			s.mem.barren.Store(time.Now().Add(barrenPause).UnixNano())
			return false
		}
		if n%16 == 0 && time.Now().After(deadline) {
			return true
		}
	}
	return true
}

// evictableDBs appends to dbs the databases that hold candidates: any key,
// or with volatile any key with an expiry.
func (s *Server) evictableDBs(volatile bool, dbs []int) []int {
	for d, db := range s.dbs {
		if (volatile && db.Expires() > 0) || (!volatile && db.Len() > 0) {
			dbs = append(dbs, d)
		}
	}
	return dbs
}

// evictOne removes one key of the databases dbs: it visits their shards in
// turn from the shared cursor (so concurrent evictions spread over
// different shards) until one gives a victim, and reports false after a
// whole round without one.
func (s *Server) evictOne(dbs []int, pol shards.Policy, now int64) bool {
	if len(dbs) == 0 {
		return false
	}
	nshards := uint64(s.dbs[0].NumShards())
	for range uint64(len(dbs)) * nshards {
		k := s.mem.cursor.Add(1)
		d, i := dbs[int(k/nshards)%len(dbs)], int(k%nshards)
		db := s.dbs[d]
		if !db.Candidates(i, pol.Volatile) {
			continue
		}
		db.Lock(i)
		removed := db.EvictLocked(i, pol, now, func(key []byte, dead bool) {
			if !dead {
				s.keyEvicted(d, i, key)
			}
		})
		db.Unlock(i)
		if removed {
			return true
		}
	}
	return false
}

// keyEvicted logs and announces the eviction of key from shard i of
// database db, whose lock the caller holds; key is valid during the call.
func (s *Server) keyEvicted(db, i int, key []byte) {
	if d := s.durability(); d != nil {
		pos := d.Append([]persistence.Effect{{Op: persistence.OpDel, DB: db, Key: key}})
		s.dbs[db].SetMark(i, pos)
	}
	s.dirty.Add(1)
	if s.track.n.Load() != 0 {
		s.track.invalidate(nil, []changed{{key: bytes.Clone(key), db: db}})
	}
}

// evictedKeys is the number of keys evicted over every database since the
// last CONFIG RESETSTAT.
func (s *Server) evictedKeys() int64 {
	var n int64
	for _, db := range s.dbs {
		n += db.Evicted()
	}
	return n - s.stats.evictedBase.Load()
}
