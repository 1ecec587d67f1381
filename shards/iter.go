package shards

import "math/rand/v2"

// A SCAN cursor is shard<<48 | pos, where pos is a key's 24-bit hash tag.
// Within a shard, a step returns the keys whose pos lies in a range
// [from, limit] and the next step starts at limit+1, so a key present for
// the whole scan is returned exactly once, whatever else changes.
const (
	posBits  = 48
	posLimit = 1<<24 - 1 // largest tag
)

// Scan visits live keys from cursor on, at least count of them (more when
// several keys share a position) unless the keyspace ends first, and returns
// the next cursor (0 when the scan is complete). fn runs with the shard lock
// held and must not call back into the Map. If allLocked, the caller already
// holds every shard; otherwise Scan locks one shard at a time.
//
// A step costs O(m log count) for a shard of m keys and allocates only
// O(count): it never collects or sorts the whole shard.
func (m *Map) Scan(cursor uint64, count int, now int64, allLocked bool, fn func(key string, e Entry)) uint64 {
	if count < 1 {
		count = 1
	}
	si := int(cursor >> posBits)
	from := cursor & (1<<posBits - 1)
	var h posHeap
	for ; si < len(m.shards); si, from = si+1, 0 {
		if !allLocked {
			m.Lock(si)
		}
		n, limit, more := m.shards[si].scanLocked(from, count, now, &h, fn)
		if !allLocked {
			m.Unlock(si)
		}
		if more {
			return uint64(si)<<posBits | (limit + 1)
		}
		count -= n
		if count <= 0 {
			if si+1 == len(m.shards) {
				return 0
			}
			return uint64(si+1) << posBits
		}
	}
	return 0
}

// scanLocked calls fn for the shard's live keys with from <= pos <= limit,
// where limit is the count-th smallest such pos (so every key sharing it is
// included), or for all keys from on when there are no more than count.
// more reports whether keys past limit remain. Requires the shard locked.
func (s *shard) scanLocked(from uint64, count int, now int64, h *posHeap, fn func(string, Entry)) (n int, limit uint64, more bool) {
	t := &s.t
	// Pass 1: the count smallest positions >= from, and how many there are.
	h.reset(min(count, t.n))
	total := 0
	for i := range t.slots {
		if p, ok := t.livePos(i, now); ok && p >= from {
			total++
			h.offer(p)
		}
	}
	if total == 0 {
		return 0, 0, false
	}
	limit = posLimit
	if total > count {
		limit = h.max()
	}
	// Pass 2: the keys in [from, limit].
	for i := range t.slots {
		if p, ok := t.livePos(i, now); ok && p >= from && p <= limit {
			k, _, _ := t.keyAt(i)
			fn(string(k), t.entry(i))
			n++
		}
	}
	return n, limit, n < total
}

// livePos returns the scan position (tag) of slot i if it holds a live key.
func (t *table) livePos(i int, now int64) (uint64, bool) {
	m := t.slots[i].meta
	if m == 0 {
		return 0, false
	}
	if exp := t.expAt(i); exp != 0 && exp <= now {
		return 0, false
	}
	return uint64(m >> tagShift), true
}

// posHeap keeps the k smallest positions offered: a max-heap of at most k.
type posHeap struct {
	a []uint64
	k int
}

func (h *posHeap) reset(k int) {
	h.a, h.k = h.a[:0], max(k, 1)
}

func (h *posHeap) max() uint64 { return h.a[0] }

func (h *posHeap) offer(p uint64) {
	if len(h.a) < h.k {
		h.a = append(h.a, p)
		for i := len(h.a) - 1; i > 0; { // sift up
			parent := (i - 1) / 2
			if h.a[parent] >= h.a[i] {
				break
			}
			h.a[parent], h.a[i] = h.a[i], h.a[parent]
			i = parent
		}
		return
	}
	if p >= h.a[0] {
		return
	}
	h.a[0] = p
	for i := 0; ; { // sift down
		l, r, big := 2*i+1, 2*i+2, i
		if l < len(h.a) && h.a[l] > h.a[big] {
			big = l
		}
		if r < len(h.a) && h.a[r] > h.a[big] {
			big = r
		}
		if big == i {
			break
		}
		h.a[i], h.a[big] = h.a[big], h.a[i]
		i = big
	}
}

// ForEach calls fn for every live key until fn returns false. fn runs with
// the shard lock held and must not call back into the Map. If allLocked, the
// caller already holds every shard.
func (m *Map) ForEach(now int64, allLocked bool, fn func(key string, e Entry) bool) {
	for si := range m.shards {
		if !allLocked {
			m.Lock(si)
		}
		ok := true
		m.shards[si].t.eachLive(now, func(k []byte, e Entry) bool {
			ok = fn(string(k), e)
			return ok
		})
		if !allLocked {
			m.Unlock(si)
		}
		if !ok {
			return
		}
	}
}

// RandomKey returns a random live key, or false when there is none: a
// random shard, then the first live slot from a random index.
func (m *Map) RandomKey(now int64, allLocked bool) (string, bool) {
	n := len(m.shards)
	start := rand.IntN(n)
	for j := 0; j < n; j++ {
		si := (start + j) % n
		if m.shards[si].keys.Load() == 0 {
			continue
		}
		if !allLocked {
			m.Lock(si)
		}
		key, found := m.shards[si].t.randomLive(now)
		if !allLocked {
			m.Unlock(si)
		}
		if found {
			return key, true
		}
	}
	return "", false
}

// randomLive returns the key of the first live slot at or after a random index.
func (t *table) randomLive(now int64) (string, bool) {
	if t.n == 0 {
		return "", false
	}
	start := rand.IntN(len(t.slots))
	for j := range t.slots {
		i := (start + j) % len(t.slots)
		if t.slots[i].meta == 0 {
			continue
		}
		if exp := t.expAt(i); exp != 0 && exp <= now {
			continue
		}
		k, _, _ := t.keyAt(i)
		return string(k), true
	}
	return "", false
}
