package shards

// Eviction: removing keys to stay under a memory limit, like Redis's
// maxmemory policies.
//
// EvictLocked removes one key of one shard: it samples Samples keys, each
// the first key at or after a random slot of the shard's array, and
// removes the best victim for the policy. (Neighbouring slots would be a
// cheaper sample, but not an independent one: once evictions have taken
// the good victims of a stretch of the array, a sample drawn there would
// hold only keys worth keeping.) The
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

// evictWalk bounds the slots one sample looks at: a volatile policy in a
// shard with few keys with an expiry gives up on the sample rather than
// walk the whole array.
const evictWalk = 64

// sampleSlot returns the first slot at or after index r (modulo the array)
// that holds a key (with volatile: a key with an expiry), looking at most
// evictWalk slots, or -1.
func (t *table) sampleSlot(r uint64, volatile bool) int {
	j := int(r % uint64(len(t.slots)))
	for range min(evictWalk, len(t.slots)) {
		if t.slots[j].meta != 0 && (!volatile || t.slots[j].meta&(flagExp|flagExpIsInt) != 0) {
			return j
		}
		j = t.next(j)
	}
	return -1
}

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
	best, dead := -1, false
	var bestScore int64
	for range samples {
		j := t.sampleSlot(s.random(), p.Volatile)
		if j < 0 {
			continue
		}
		exp := t.expAt(j)
		if exp != 0 && exp <= now && !keep {
			best, dead = j, true
			break
		}
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
		if best < 0 || score > bestScore { // EvictRandom: the first sampled
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
