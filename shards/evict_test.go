package shards

import (
	"fmt"
	"testing"
)

// sumAcct is the accounted bytes recomputed from every table.
func sumAcct(m *Map) int64 {
	var n int64
	for i := range m.shards {
		m.Lock(i)
		n += m.shards[i].t.acct()
		m.Unlock(i)
	}
	return n
}

// sizedObj is an Object whose size the test sets.
type sizedObj struct{ size int }

func (o *sizedObj) CloneObject() any { c := *o; return &c }
func (o *sizedObj) MemoryUsage() int { return o.size }

func TestBytesFollowsChanges(t *testing.T) {
	m := New(4)
	if m.Bytes() != 0 {
		t.Fatalf("empty map: %d bytes", m.Bytes())
	}
	const now = 1000 * sec
	for i := range 5000 {
		put(m, fmt.Sprintf("key:%08d", i), IntEntry(now+sec, now+sec))
	}
	put(m, "big", BytesEntry(make([]byte, 50000), 0))
	full := m.Bytes()
	if full != sumAcct(m) || full < 5000*(16+13)+50000 {
		t.Fatalf("after 5000 keys and a 50 kB value: Bytes %d, tables %d", full, sumAcct(m))
	}
	del(m, "big", now)
	if b := m.Bytes(); b > full-50000 {
		t.Fatalf("deleting a 50 kB value left %d bytes of %d", b, full)
	}
	for i := range 1000 {
		del(m, fmt.Sprintf("key:%08d", i), now)
	}
	if b := m.Bytes(); b != sumAcct(m) {
		t.Fatalf("after deletes: Bytes %d, tables %d", b, sumAcct(m))
	}

	// A collection value is measured again when it changes in place.
	key := []byte("h")
	i := m.ShardOf(key)
	m.Lock(i)
	r, err := m.AddObject(key, Entry{Kind: KindHash, Obj: &sizedObj{size: 10}})
	if err != nil {
		t.Fatal(err)
	}
	m.Unlock(i)
	before := m.Bytes()
	m.Lock(i)
	_, r, _ = m.Find(key)
	m.Mutable(r).(*sizedObj).size = 1_000_010
	m.Touched(r)
	m.Unlock(i)
	if d := m.Bytes() - before; d != 1_000_000 {
		t.Fatalf("growing a value by 10^6 bytes moved Bytes by %d", d)
	}
	m.Flush()
	if b := m.Bytes(); b != 0 {
		t.Fatalf("after Flush: %d bytes", b)
	}
}

// evictAll evicts from every shard in turn until n keys are gone and
// returns the keys removed.
func evictAll(t *testing.T, m *Map, p Policy, now int64, n int) map[string]bool {
	t.Helper()
	gone := map[string]bool{}
	for misses := 0; len(gone) < n; {
		for i := range m.NumShards() {
			m.Lock(i)
			ok := m.EvictLocked(i, p, now, func(k []byte, dead bool) { gone[string(k)] = true })
			m.Unlock(i)
			if !ok {
				misses++
			}
			if len(gone) == n {
				break
			}
		}
		if misses > 100*m.NumShards() {
			t.Fatalf("could evict only %d of %d keys", len(gone), n)
		}
	}
	return gone
}

func TestEvictLRUKeepsRecentKeys(t *testing.T) {
	m := New(2)
	m.SetTracking(TrackLRU)
	now := 10_000 * sec
	m.SetAccessClock(now)
	for i := range 2000 {
		put(m, fmt.Sprintf("old:%d", i), IntEntry(1, 0))
	}
	now += 100 * sec
	m.SetAccessClock(now)
	for i := range 2000 {
		put(m, fmt.Sprintf("new:%d", i), IntEntry(1, 0))
	}
	// Touch some old keys: they become recent.
	for i := range 200 {
		get(m, fmt.Sprintf("old:%d", i), now)
	}
	gone := evictAll(t, m, Policy{Kind: EvictLRU, Samples: 10}, now, 500)
	recent := 0
	for k := range gone {
		var n int
		if _, err := fmt.Sscanf(k, "new:%d", &n); err == nil {
			recent++
		} else if _, err := fmt.Sscanf(k, "old:%d", &n); err == nil && n < 200 {
			recent++
		}
	}
	// With 10 samples, a recent key is chosen only when all 10 are recent:
	// (2200/4000)^10 = 0.25% of the time at first, 1% at the end.
	if recent > 25 {
		t.Fatalf("LRU evicted %d recently used keys out of 500", recent)
	}
	if m.Evicted() != 500 || m.Len() != 3500 {
		t.Fatalf("Evicted %d, Len %d", m.Evicted(), m.Len())
	}
	// Stamps move with their keys when the table shrinks and grows.
	idle, _, ok := accessInfo(m, "old:5", now)
	if !ok || idle != 0 {
		t.Fatalf("a key touched now: idle %d, present %v", idle, ok)
	}
}

func accessInfo(m *Map, key string, now int64) (int64, int, bool) {
	i := m.ShardOf([]byte(key))
	m.Lock(i)
	defer m.Unlock(i)
	return m.AccessInfo([]byte(key), now)
}

func TestAccessStampsSurviveResize(t *testing.T) {
	m := New(1)
	m.SetTracking(TrackLRU)
	now := 5000 * sec
	m.SetAccessClock(now)
	put(m, "first", IntEntry(1, 0))
	m.SetAccessClock(now + 77*sec)
	for i := range 10_000 { // grows the table many times
		put(m, fmt.Sprintf("k%d", i), IntEntry(1, 0))
	}
	for i := range 9_990 { // shrinks it, shifting slots back on the way
		del(m, fmt.Sprintf("k%d", i), now)
	}
	if idle, _, _ := accessInfo(m, "first", now); idle != 77 {
		t.Fatalf("idle time after resizes: %d s, want 77", idle)
	}
	if idle, _, _ := accessInfo(m, "k9995", now); idle != 0 {
		t.Fatalf("idle time of a recent key: %d s, want 0", idle)
	}
}

func TestEvictLFUKeepsHotKeys(t *testing.T) {
	m := New(2)
	m.SetTracking(TrackLFU)
	m.SetLFUParams(1, 1)
	now := 10_000 * sec
	m.SetAccessClock(now)
	for i := range 1000 {
		put(m, fmt.Sprintf("cold:%d", i), IntEntry(1, 0))
	}
	for i := range 100 {
		k := fmt.Sprintf("hot:%d", i)
		put(m, k, IntEntry(1, 0))
		for range 50 {
			get(m, k, now)
		}
	}
	if _, f, _ := accessInfo(m, "hot:3", now); f <= lfuInit+2 {
		t.Fatalf("a key read 50 times has counter %d", f)
	}
	// 500 of 1000 cold keys: a hot key goes only if all ten samples are
	// hot, at most (100/600)^10 per eviction even at the end.
	gone := evictAll(t, m, Policy{Kind: EvictLFU, Samples: 10}, now, 500)
	for k := range gone {
		if k[:3] == "hot" {
			t.Fatalf("LFU evicted hot key %s", k)
		}
	}
	// Counters decay: an hour later every counter is back to 0.
	m.SetAccessClock(now + 3600*sec)
	if _, f, _ := accessInfo(m, "hot:3", now+3600*sec); f != 0 {
		t.Fatalf("counter after 60 idle minutes: %d, want 0", f)
	}
}

func TestEvictVolatileTTL(t *testing.T) {
	m := New(1)
	now := 1000 * sec
	for i := range 100 {
		put(m, fmt.Sprintf("forever:%d", i), IntEntry(1, 0))
	}
	for i := range 100 {
		exp := now + int64(i+1)*sec
		put(m, fmt.Sprintf("ttl:%03d", i), IntEntry(exp, exp)) // GCRA-like
	}
	// Samples are drawn with replacement: 5000 of them see every key.
	p := Policy{Kind: EvictTTL, Volatile: true, Samples: 5000}
	gone := evictAll(t, m, p, now, 10)
	for i := range 10 {
		if k := fmt.Sprintf("ttl:%03d", i); !gone[k] {
			t.Fatalf("volatile-ttl with every key sampled did not evict %s first: %v", k, gone)
		}
	}
	// Volatile policies never touch keys without an expiry.
	gone = evictAll(t, m, Policy{Kind: EvictRandom, Volatile: true, Samples: 5}, now, 90)
	m.Lock(0)
	if m.EvictLocked(0, p, now, func([]byte, bool) {}) {
		t.Fatal("evicted a key without expiry under a volatile policy")
	}
	m.Unlock(0)
	if m.Len() != 100 {
		t.Fatalf("%d keys left, want the 100 without expiry", m.Len())
	}
	_ = gone
}

func TestEvictRemovesDeadKeysFirst(t *testing.T) {
	m := New(1)
	now := 1000 * sec
	put(m, "live", IntEntry(1, 0))
	put(m, "dead", IntEntry(now-sec, now-sec))
	m.Lock(0)
	var dead bool
	var key string
	ok := m.EvictLocked(0, Policy{Kind: EvictRandom, Samples: 200}, now, func(k []byte, d bool) { key, dead = string(k), d })
	m.Unlock(0)
	if !ok || key != "dead" || !dead || m.Evicted() != 0 || m.ExpiredKeys() != 1 {
		t.Fatalf("removed %q dead=%v; evicted %d expired %d", key, dead, m.Evicted(), m.ExpiredKeys())
	}
}
