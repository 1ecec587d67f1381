package shards

// Active expiry parameters, after Redis's activeExpireCycle: look at up to
// sampleSize keys with a TTL, and look again while more than a quarter of
// them had expired, at most maxRounds times per shard visit. scanLimit bounds
// how many slots (empty, or holding keys with or without TTL) one sample may
// step over, so one visit does bounded work whatever the table holds.
const (
	sampleSize = 20
	maxRounds  = 16
	scanLimit  = 20 * sampleSize
)

// ExpireCycle visits up to nShards shards, continuing where the previous
// cycle stopped, and deletes keys whose expiry is at or before now. It
// returns the number of keys removed. It locks one shard at a time and
// requires that the caller holds none.
func (m *Map) ExpireCycle(now int64, nShards int) int {
	removed, _ := m.ExpireShards(now, nShards, nil)
	return removed
}

// ExpireShards is ExpireCycle for a caller that bounds its time. stop, if
// not nil, is called before every sampling round after the first of a
// visit (a round removes at most sampleSize keys and steps over at most
// scanLimit slots); once it returns true the cycle ends there. more reports
// that the caller should come back soon rather than wait for its next
// regular cycle: stop ended the cycle, or a visited shard is still stale
// (its last sample, after maxRounds rounds, still found more than a
// quarter of the keys it looked at expired).
func (m *Map) ExpireShards(now int64, nShards int, stop func() bool) (removed int, more bool) {
	if nShards > len(m.shards) {
		nShards = len(m.shards)
	}
	for j := 0; j < nShards; j++ {
		i := int(m.expireNext.Add(1)-1) & int(m.mask)
		s := &m.shards[i]
		if s.expires.Load() == 0 {
			continue
		}
		m.Lock(i)
		for round := 0; round < maxRounds && s.t.n > 0; round++ {
			if round > 0 && stop != nil && stop() {
				more = true
				break
			}
			sampled, expired := s.sampleExpireLocked(now)
			removed += expired
			if sampled == 0 {
				// scanLimit slots without a key with a TTL: a stretch that
				// earlier samples emptied, or keys without TTL. Go on
				// from there; the rounds bound the walk.
				continue
			}
			if expired*4 <= sampled {
				break
			}
			if round == maxRounds-1 {
				more = true
			}
		}
		m.Unlock(i)
		if more && stop != nil && stop() {
			break
		}
	}
	m.expiredKeys.Add(int64(removed))
	return removed, more
}

// sampleExpireLocked looks at up to sampleSize keys with a TTL and deletes
// the expired ones. It walks the slots from the shard's expiry cursor, where
// the previous sample stopped, and leaves the cursor where it stops: keys
// sit at hash-random places, so consecutive slots are a fair sample, and a
// sweep (unlike a random starting point) does not keep landing in the
// stretches earlier samples have already emptied when most keys are dead.
func (s *shard) sampleExpireLocked(now int64) (sampled, expired int) {
	t := &s.t
	if t.n == 0 {
		return 0, 0
	}
	i := s.expCursor
	if i >= len(t.slots) {
		i = 0 // the table shrank since
	}
	for steps := 0; steps < scanLimit && sampled < sampleSize; steps++ {
		if t.slots[i].meta == 0 {
			i = t.next(i)
			continue
		}
		exp := t.expAt(i)
		if exp == 0 {
			i = t.next(i)
			continue
		}
		sampled++
		if exp > now {
			i = t.next(i)
			continue
		}
		key, _, _ := t.keyAt(i)
		size := len(t.slots)
		s.deleteAtLocked(i, key, exp) // key bytes in the arena are never overwritten
		expired++
		if len(t.slots) != size || t.n == 0 {
			// The table shrank or was freed: indexes changed; start the
			// next sample from the beginning.
			i = 0
			break
		}
		// Deletion shifted a later slot into i: look at i again.
	}
	s.expCursor = i
	return sampled, expired
}

// MemoryBytes returns the bytes the keyspace's tables hold: slot arrays and
// arenas by capacity, and records kept outside the arena. It is what active
// expiry and deletions can give back. It locks one shard at a time and
// requires that the caller holds none.
func (m *Map) MemoryBytes() int64 {
	var total int64
	for i := range m.shards {
		m.Lock(i)
		total += m.shards[i].t.memoryBytes()
		m.Unlock(i)
	}
	return total
}
