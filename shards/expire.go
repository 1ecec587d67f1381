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
	// sweepAhead is how many slots ahead of the sweep to prefetch records.
	sweepAhead = 8
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
// regular cycle: stop ended a visit that was removing keys, or a visited
// shard is still stale (its last sample, after maxRounds rounds, still
// found more than a quarter of the keys it looked at expired). A visit that
// stop ends while it finds nothing to remove does not ask for more.
func (m *Map) ExpireShards(now int64, nShards int, stop func() bool) (removed int, more bool) {
	if m.keepExpired.Load() {
		return 0, false
	}
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
		visit, stopped := 0, false
		for round := 0; round < maxRounds && s.t.n > 0; round++ {
			if round > 0 && stop != nil && stop() {
				stopped = true
				break
			}
			sampled, expired := s.sampleExpireLocked(now, m.onExpire)
			visit += expired
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
		removed += visit
		if stopped {
			more = more || visit > 0
			break
		}
		if more && stop != nil && stop() {
			break
		}
	}
	m.expiredKeys.Add(int64(removed))
	return removed, more
}

// sampleExpireLocked looks at up to sampleSize keys with a TTL and deletes
// the expired ones. It walks the slots backwards from the shard's expiry
// cursor, where the previous sample stopped, and leaves the cursor where it
// stops: keys sit at hash-random places, so consecutive slots are a fair
// sample, and a sweep (unlike a random starting point) does not keep
// landing in the stretches earlier samples have already emptied when most
// keys are dead.
//
// Backwards, because deletion shifts the rest of the key's probe run back
// by one slot (table.del): walking forwards through a run of dead keys
// deletes its first key each time and shifts all the others, quadratic in
// the run's length, while walking backwards deletes its last key, with
// nothing behind it to shift.
func (s *shard) sampleExpireLocked(now int64, onExpire func(key []byte)) (sampled, expired int) {
	t := &s.t
	if t.n == 0 {
		return 0, 0
	}
	i := s.expCursor
	if i < 0 || i >= len(t.slots) {
		i = len(t.slots) - 1 // the table shrank since, or a pass ended
	}
	for steps := 0; steps < scanLimit && sampled < sampleSize; steps++ {
		if i >= sweepAhead {
			// Deleting reads the record (its length, for the arena's
			// garbage count): start loading the one sweepAhead slots on.
			t.prefetchRec(i - sweepAhead)
		}
		if t.slots[i].meta != 0 {
			if exp := t.expAt(i); exp != 0 {
				sampled++
				if exp <= now {
					var key []byte
					if s.watch != nil || onExpire != nil { // only watchers and the hook need the key
						key, _, _ = t.keyAt(i) // arena key bytes are never overwritten
					}
					size := len(t.slots)
					s.deleteAtLocked(i, key, exp, true)
					if onExpire != nil {
						onExpire(key)
					}
					expired++
					if len(t.slots) != size || t.n == 0 {
						i = -1 // rebuilt or freed: indexes changed
						break
					}
					// A later slot of the run (already looked at) may
					// have shifted into i; go on before it.
				}
			}
		}
		if i > 0 {
			i--
			continue
		}
		// A pass over every slot ended: the keys left are spread over
		// the whole table again, so a shrink declined halfway through
		// the pass may fit now.
		if t.sweptAll() {
			i = -1
			break
		}
		i = len(t.slots) - 1
	}
	s.expCursor = i
	return sampled, expired
}

// DropExpired removes every key whose expiry is at or before now and
// returns how many it removed. It visits every slot of every shard, one
// shard locked at a time, so it is for loading (after a replay, which
// stores entries as written), not for the serving path. Requires that the
// caller holds no shard.
func (m *Map) DropExpired(now int64) int {
	removed := 0
	var dead [][]byte
	for i := range m.shards {
		s := &m.shards[i]
		if s.expires.Load() == 0 {
			continue
		}
		m.Lock(i)
		dead = dead[:0]
		for j := range s.t.slots {
			if s.t.slots[j].meta == 0 {
				continue
			}
			if exp := s.t.expAt(j); exp != 0 && exp <= now {
				k, _, _ := s.t.keyAt(j)
				dead = append(dead, append([]byte(nil), k...))
			}
		}
		for _, k := range dead {
			if j := s.t.find(k, tagOf(m.hash(k))); j >= 0 {
				s.deleteAtLocked(j, k, s.t.expAt(j), false)
				removed++
			}
		}
		m.Unlock(i)
	}
	m.expiredKeys.Add(int64(removed))
	return removed
}
