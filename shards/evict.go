package shards

// Eviction: removing keys to stay under a memory limit, like Redis's
// maxmemory policies.
//
// EvictLocked removes one key of one shard: it samples up to Samples keys
// from a random place in the shard's slot array (neighbouring slots hold
// keys of unrelated hashes, so this is a random sample, as Redis's
// dictGetSomeKeys is) and removes the best victim for the policy. The
// server spreads evictions over the shards in turn; since keys spread over
// shards evenly, a victim chosen within a shard is as good as one chosen
// over the whole keyspace from the same number of samples.
//
// A sampled key whose expiry has passed is removed first, as an expiry:
// it frees memory without taking anything from anyone (for a GCRA key the
// expiry is the moment its bucket is full again).

// PolicyKind is how a victim is chosen among the sampled keys.
type PolicyKind uint8

const (
	EvictRandom PolicyKind = iota // any sampled key
	EvictLRU                      // the longest idle (needs TrackLRU)
	EvictLFU                      // the least frequently used (needs TrackLFU)
	EvictTTL                      // the nearest expiry (volatile only)
)

// Policy is an eviction policy.
type Policy struct {
	Kind     PolicyKind
	Volatile bool // only keys with an expiry are candidates
	Samples  int  // keys sampled per eviction (maxmemory-samples), at least 1
}

// evictWalk bounds the slots one eviction looks at, per sample wanted: a
// volatile policy in a shard with few keys with an expiry gives up rather
// than walk the whole array.
const evictWalk = 64

// EvictLocked removes one key of shard i chosen by p, as of now, and
// reports whether it removed one. It calls fn with the key first (the
// bytes are valid only during the call) and dead true when the key was
// removed because its expiry had passed (counted as expired, and the
// expire hook is called) rather than evicted (counted by Evicted).
// Requires shard i locked.
func (m *Map) EvictLocked(i int, p Policy, now int64, fn func(key []byte, dead bool)) bool {
	s := &m.shards[i]
	t := &s.t
	if t.n == 0 || (p.Volatile && s.expires.Load() == 0) {
		return false
	}
	samples := max(1, p.Samples)
	keep := m.keepExpired.Load()
	clock := m.lruClock.Load()
	best, seen, dead := -1, 0, false
	var bestScore int64
	j := int(s.random() % uint64(len(t.slots)))
	for step := 0; step < len(t.slots) && step < samples*evictWalk && seen < samples; step, j = step+1, t.next(j) {
		if t.slots[j].meta == 0 {
			continue
		}
		exp := t.expAt(j)
		if exp != 0 && exp <= now && !keep {
			best, dead = j, true
			break
		}
		if p.Volatile && exp == 0 {
			continue
		}
		seen++
		var score int64 // higher: a better victim
		switch p.Kind {
		case EvictLRU:
			if t.access != nil {
				score = int64(uint16(uint16(clock) - t.access[j]))
			}
		case EvictLFU:
			if t.access != nil {
				score = -int64(m.lfuDecr(t.access[j], uint8(clock/60)))
			}
		case EvictTTL:
			score = -exp
		}
		if best < 0 || score > bestScore { // EvictRandom: the first seen
			best, bestScore = j, score
		}
	}
	if best < 0 {
		return false
	}
	key, _, _ := t.keyAt(best)
	exp := t.expAt(best)
	fn(key, dead)
	if !dead {
		s.beforeChangeLocked()
	}
	s.deleteAtLocked(best, key, exp, false)
	if dead {
		m.expired(key)
	} else {
		m.evicted.Add(1)
	}
	return true
}

// Evicted returns how many keys EvictLocked removed by the policy (not
// counting those it removed because they had expired).
func (m *Map) Evicted() int64 { return m.evicted.Load() }

// Candidates reports whether shard i may hold a candidate for a policy:
// any key, or with volatile any key with an expiry. It takes no lock.
func (m *Map) Candidates(i int, volatile bool) bool {
	s := &m.shards[i]
	if volatile {
		return s.expires.Load() > 0
	}
	return s.keys.Load() > 0
}
