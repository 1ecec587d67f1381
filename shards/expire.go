package shards

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

// sampleExpireLocked looks at up to sampleSize keys with a TTL, starting at
// a random point of the map, and deletes the expired ones.
func (s *shard) sampleExpireLocked(now int64) (sampled, expired int) {
	steps := 0
	for k, e := range s.m {
		steps++
		if e.Exp != 0 {
			sampled++
			if e.Exp <= now {
				s.deleteLocked(k, e)
				expired++
			}
		}
		if sampled >= sampleSize || steps >= scanLimit {
			break
		}
	}
	return sampled, expired
}
