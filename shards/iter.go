package shards

import (
	"math/rand/v2"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// A SCAN cursor is shard<<48 | pos, where pos is the top 48 bits of a key's
// hash. Within a shard, keys are returned in order of pos, so a key present
// for the whole scan is returned exactly once, whatever else changes.
const posBits = 48

type scanItem struct {
	pos uint64
	key string
	e   Entry
}

// Scan visits live keys from cursor on, at least count of them (more when
// several keys share a position) unless the keyspace ends first, and returns
// the next cursor (0 when the scan is complete). fn runs with the shard lock
// held and must not call back into the Map. If allLocked, the caller already
// holds every shard; otherwise Scan locks one shard at a time.
func (m *Map) Scan(cursor uint64, count int, now int64, allLocked bool, fn func(key string, e Entry)) uint64 {
	if count < 1 {
		count = 1
	}
	si := int(cursor >> posBits)
	pos := cursor & (1<<posBits - 1)
	var items []scanItem
	for ; si < len(m.shards); si, pos = si+1, 0 {
		if !allLocked {
			m.Lock(si)
		}
		items = m.shards[si].collectLocked(items[:0], pos, now)
		slices.SortFunc(items, func(a, b scanItem) int {
			switch {
			case a.pos < b.pos:
				return -1
			case a.pos > b.pos:
				return 1
			}
			return 0
		})
		n := len(items)
		if n > count {
			n = count
			for n < len(items) && items[n].pos == items[n-1].pos {
				n++
			}
		}
		for _, it := range items[:n] {
			fn(it.key, it.e)
		}
		if !allLocked {
			m.Unlock(si)
		}
		count -= n
		if n < len(items) {
			return uint64(si)<<posBits | (items[n-1].pos + 1)
		}
		if count <= 0 {
			if si+1 == len(m.shards) {
				return 0
			}
			return uint64(si+1) << posBits
		}
	}
	return 0
}

func (s *shard) collectLocked(dst []scanItem, from uint64, now int64) []scanItem {
	for k, e := range s.m {
		if e.Exp != 0 && e.Exp <= now {
			continue
		}
		p := xxhash.Sum64String(k) >> (64 - posBits)
		if p >= from {
			dst = append(dst, scanItem{pos: p, key: k, e: e})
		}
	}
	return dst
}

// ForEach calls fn for every live key until fn returns false. fn runs with
// the shard lock held and must not call back into the Map. If allLocked, the
// caller already holds every shard.
func (m *Map) ForEach(now int64, allLocked bool, fn func(key string, e Entry) bool) {
	for i := range m.shards {
		if !allLocked {
			m.Lock(i)
		}
		ok := true
		for k, e := range m.shards[i].m {
			if e.Exp != 0 && e.Exp <= now {
				continue
			}
			if ok = fn(k, e); !ok {
				break
			}
		}
		if !allLocked {
			m.Unlock(i)
		}
		if !ok {
			return
		}
	}
}

// RandomKey returns a random live key, or false when there is none. The
// choice is uniform over shards, then over a map's iteration start.
func (m *Map) RandomKey(now int64, allLocked bool) (string, bool) {
	n := len(m.shards)
	start := rand.IntN(n)
	for j := 0; j < n; j++ {
		i := (start + j) % n
		if m.shards[i].keys.Load() == 0 {
			continue
		}
		if !allLocked {
			m.Lock(i)
		}
		var key string
		found := false
		for k, e := range m.shards[i].m {
			if e.Exp != 0 && e.Exp <= now {
				continue
			}
			key, found = k, true
			break
		}
		if !allLocked {
			m.Unlock(i)
		}
		if found {
			return key, true
		}
	}
	return "", false
}
