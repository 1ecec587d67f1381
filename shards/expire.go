package shards

import "math/rand/v2"

// Active expiry parameters, after Redis's activeExpireCycle: look at up to
// sampleSize keys with a TTL, and look again while more than a quarter of
// them had expired, at most maxRounds times per shard visit. scanLimit bounds
// how many entries (with or without TTL) one sample may step over.
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
	if nShards > len(m.shards) {
		nShards = len(m.shards)
	}
	removed := 0
	for j := 0; j < nShards; j++ {
		i := int(m.expireNext.Add(1)-1) & int(m.mask)
		s := &m.shards[i]
		if s.expires.Load() == 0 {
			continue
		}
		m.Lock(i)
		for round := 0; round < maxRounds; round++ {
			sampled, expired := s.sampleExpireLocked(now)
			removed += expired
			if sampled == 0 || expired*4 <= sampled {
				break
			}
		}
		m.Unlock(i)
	}
	m.expiredKeys.Add(int64(removed))
	return removed
}

// sampleExpireLocked looks at up to sampleSize keys with a TTL, walking the
// slots from a random point, and deletes the expired ones.
func (s *shard) sampleExpireLocked(now int64) (sampled, expired int) {
	t := &s.t
	if t.n == 0 {
		return 0, 0
	}
	i := rand.IntN(len(t.slots))
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
			break // the table shrank: indexes changed; the next round starts afresh
		}
		// Deletion shifted a later slot into i: look at i again.
	}
	return sampled, expired
}
