package shards

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

const sec = int64(1e9)

// Helpers that take the key's shard lock around one call, as a command does.

func put(m *Map, key string, e Entry) {
	i := m.ShardOf([]byte(key))
	m.Lock(i)
	m.Put([]byte(key), e)
	m.Unlock(i)
}

func get(m *Map, key string, now int64) (Entry, bool) {
	i := m.ShardOf([]byte(key))
	m.Lock(i)
	defer m.Unlock(i)
	return m.Get([]byte(key), now)
}

func del(m *Map, key string, now int64) bool {
	i := m.ShardOf([]byte(key))
	m.Lock(i)
	defer m.Unlock(i)
	return m.Delete([]byte(key), now)
}

func TestNewRoundsShards(t *testing.T) {
	for _, c := range []struct{ in, want int }{
		{-5, 1}, {0, 1}, {1, 1}, {2, 2}, {3, 4}, {64, 64}, {65, 128}, {MaxShards, MaxShards}, {MaxShards + 1, MaxShards}, {math.MaxInt32, MaxShards},
	} {
		if got := New(c.in).NumShards(); got != c.want {
			t.Errorf("New(%d).NumShards() = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestGetPutDelete(t *testing.T) {
	m := New(8)
	const now = 100 * sec
	if _, ok := get(m, "a", now); ok {
		t.Fatal("Get on an empty map found a key")
	}
	if del(m, "a", now) {
		t.Fatal("Delete of a missing key reported true")
	}
	put(m, "a", IntEntry(42, 0))
	e, ok := get(m, "a", now)
	if !ok || e.Kind != KindInt || e.Int != 42 || e.Exp != 0 {
		t.Fatalf("Get = %+v, %v", e, ok)
	}
	put(m, "a", BytesEntry([]byte("hello"), now+sec))
	e, ok = get(m, "a", now)
	if !ok || e.Kind != KindBytes || string(e.Bytes()) != "hello" || e.Exp != now+sec {
		t.Fatalf("Get after overwrite = %+v, %v", e, ok)
	}
	if m.Len() != 1 || m.Expires() != 1 {
		t.Fatalf("Len, Expires = %d, %d; want 1, 1", m.Len(), m.Expires())
	}
	// Put copies the key: changing the caller's buffer afterwards is harmless.
	kb := []byte("buf")
	i := m.ShardOf(kb)
	m.Lock(i)
	m.Put(kb, IntEntry(1, 0))
	m.Unlock(i)
	kb[0] = 'X'
	if _, ok := get(m, "buf", now); !ok {
		t.Fatal("key stored by Put changed with the caller's buffer")
	}
	if !del(m, "a", now) {
		t.Fatal("Delete of a live key reported false")
	}
	if _, ok := get(m, "a", now); ok {
		t.Fatal("deleted key still present")
	}
	if del(m, "a", now) {
		t.Fatal("second Delete reported true")
	}
	if m.Len() != 1 || m.Expires() != 0 {
		t.Fatalf("Len, Expires = %d, %d; want 1, 0", m.Len(), m.Expires())
	}
	// The empty key is a key like any other.
	put(m, "", IntEntry(0, 0))
	if _, ok := get(m, "", now); !ok {
		t.Fatal("empty key not found")
	}
}

func TestLazyExpiry(t *testing.T) {
	m := New(4)
	const t0 = 1000 * sec
	put(m, "k", IntEntry(1, t0+sec))
	put(m, "forever", IntEntry(2, 0))
	if _, ok := get(m, "k", t0+sec-1); !ok {
		t.Fatal("key gone 1ns before its expiry")
	}
	if m.Len() != 2 || m.Expires() != 1 {
		t.Fatalf("Len, Expires = %d, %d", m.Len(), m.Expires())
	}
	// Len counts an expired key until something removes it, as DBSIZE does.
	if _, ok := get(m, "forever", t0+sec); !ok {
		t.Fatal("key without expiry expired")
	}
	if m.Len() != 2 {
		t.Fatalf("Len = %d before the expired key is touched, want 2", m.Len())
	}
	if _, ok := get(m, "k", t0+sec); ok {
		t.Fatal("key alive at its expiry instant")
	}
	if m.Len() != 1 || m.Expires() != 0 || m.ExpiredKeys() != 1 {
		t.Fatalf("after lazy expiry Len, Expires, ExpiredKeys = %d, %d, %d; want 1, 0, 1", m.Len(), m.Expires(), m.ExpiredKeys())
	}
	// Delete of an expired key removes it but reports it as missing.
	put(m, "k2", IntEntry(1, t0))
	if del(m, "k2", t0) {
		t.Fatal("Delete of an expired key reported true")
	}
	if m.Len() != 1 || m.Expires() != 0 || m.ExpiredKeys() != 2 {
		t.Fatalf("Len, Expires, ExpiredKeys = %d, %d, %d; want 1, 0, 2", m.Len(), m.Expires(), m.ExpiredKeys())
	}
	// Time is whatever the caller says: an earlier now revives nothing
	// removed, but a key not yet touched is judged by the given now.
	put(m, "k3", IntEntry(1, t0))
	if _, ok := get(m, "k3", t0-1); !ok {
		t.Fatal("key dead before its expiry")
	}
}

// TestKeepExpired: a follower's map hides expired keys but removes none,
// by reads or by the active cycle, until told it may again.
func TestKeepExpired(t *testing.T) {
	m := New(4)
	const t0 = 1000 * sec
	put(m, "k", IntEntry(1, t0))
	m.SetKeepExpired(true)
	if _, ok := get(m, "k", t0); ok {
		t.Fatal("an expired key is visible")
	}
	if n, _ := m.ExpireShards(t0, 4, nil); n != 0 || m.Len() != 1 || m.ExpiredKeys() != 0 {
		t.Fatalf("kept: cycle removed %d, Len %d, ExpiredKeys %d", n, m.Len(), m.ExpiredKeys())
	}
	m.SetKeepExpired(false)
	if _, ok := get(m, "k", t0); ok || m.Len() != 0 || m.ExpiredKeys() != 1 {
		t.Fatalf("released: visible %v, Len %d, ExpiredKeys %d", ok, m.Len(), m.ExpiredKeys())
	}
}

func TestExpireCycle(t *testing.T) {
	m := New(4)
	const now = 1000 * sec
	const n = 1000
	for i := 0; i < n; i++ {
		put(m, fmt.Sprintf("dead:%d", i), IntEntry(int64(i), now-int64(i))) // expiry <= now
		put(m, fmt.Sprintf("live:%d", i), IntEntry(int64(i), now+1))
		put(m, fmt.Sprintf("keep:%d", i), IntEntry(int64(i), 0))
	}
	if m.Len() != 3*n || m.Expires() != 2*n {
		t.Fatalf("Len, Expires = %d, %d", m.Len(), m.Expires())
	}
	removed := 0
	for round := 0; m.Expires() > n; round++ {
		if round > 10000 {
			t.Fatalf("ExpireCycle does not converge: Expires = %d", m.Expires())
		}
		removed += m.ExpireCycle(now, m.NumShards())
	}
	if removed != n || m.ExpiredKeys() != n {
		t.Fatalf("removed %d, ExpiredKeys %d; want %d", removed, m.ExpiredKeys(), n)
	}
	if m.Len() != 2*n || m.Expires() != n {
		t.Fatalf("Len, Expires = %d, %d; want %d, %d", m.Len(), m.Expires(), 2*n, n)
	}
	for i := 0; i < n; i++ {
		if _, ok := get(m, fmt.Sprintf("live:%d", i), now); !ok {
			t.Fatalf("live:%d removed", i)
		}
		if _, ok := get(m, fmt.Sprintf("keep:%d", i), now); !ok {
			t.Fatalf("keep:%d removed", i)
		}
	}
	// Nothing more is due: further cycles remove nothing.
	for i := 0; i < 10; i++ {
		if r := m.ExpireCycle(now, m.NumShards()); r != 0 {
			t.Fatalf("cycle removed %d live keys", r)
		}
	}
	// Visiting fewer shards than exist still gets round to all of them.
	later := now + 1
	for round := 0; m.Expires() > 0; round++ {
		if round > 100000 {
			t.Fatalf("partial cycles do not converge: Expires = %d", m.Expires())
		}
		m.ExpireCycle(later, 1)
	}
	if m.Len() != n {
		t.Fatalf("Len = %d, want %d", m.Len(), n)
	}
	// An empty map, or one without expiring keys, is a no-op.
	if r := New(8).ExpireCycle(now, 100); r != 0 {
		t.Fatalf("empty map cycle removed %d", r)
	}
}

// scanKeys runs a full Scan with count and returns how often each key came.
func scanKeys(t *testing.T, m *Map, count int, now int64) map[string]int {
	t.Helper()
	seen := make(map[string]int)
	var cursor uint64
	for calls := 0; ; calls++ {
		if calls > 10_000_000 {
			t.Fatal("Scan does not terminate")
		}
		cursor = m.Scan(cursor, count, now, false, func(k string, _ Entry) { seen[k]++ })
		if cursor == 0 {
			return seen
		}
	}
}

func TestScanExactlyOnce(t *testing.T) {
	for _, nShards := range []int{1, 2, 16, 256} {
		m := New(nShards)
		const n = 1500
		for i := 0; i < n; i++ {
			put(m, fmt.Sprintf("k%d", i), IntEntry(int64(i), 0))
		}
		for _, count := range []int{0, 1, 3, 10, 1000, n, 10 * n} {
			seen := scanKeys(t, m, count, 0)
			if len(seen) != n {
				t.Fatalf("%d shards, count %d: %d keys, want %d", nShards, count, len(seen), n)
			}
			for k, c := range seen {
				if c != 1 {
					t.Fatalf("%d shards, count %d: %q seen %d times", nShards, count, k, c)
				}
			}
		}
	}
}

// TestScanStepSize checks that one Scan call visits at least count keys
// unless the keyspace ends, so a caller can page through with COUNT.
func TestScanStepSize(t *testing.T) {
	m := New(4)
	for i := 0; i < 100; i++ {
		put(m, fmt.Sprintf("k%d", i), IntEntry(0, 0))
	}
	var cursor uint64
	total := 0
	for {
		got := 0
		cursor = m.Scan(cursor, 7, 0, false, func(string, Entry) { got++ })
		total += got
		if cursor == 0 {
			break
		}
		if got < 7 {
			t.Fatalf("a non-final Scan step visited %d keys, want >= 7", got)
		}
	}
	if total != 100 {
		t.Fatalf("visited %d keys, want 100", total)
	}
	// A cursor past the last shard ends the scan at once.
	if c := m.Scan(math.MaxUint64, 10, 0, false, func(string, Entry) { t.Fatal("visited a key") }); c != 0 {
		t.Fatalf("cursor = %d", c)
	}
}

func TestScanSkipsExpired(t *testing.T) {
	m := New(2)
	put(m, "dead", IntEntry(0, 5))
	put(m, "live", IntEntry(0, 6))
	put(m, "keep", IntEntry(0, 0))
	seen := scanKeys(t, m, 10, 5)
	if len(seen) != 2 || seen["dead"] != 0 {
		t.Fatalf("Scan at now=5 saw %v", seen)
	}
}

// TestScanUnderChurn scans while other goroutines insert and delete keys,
// all in one shard and across shards: every key present for the whole scan
// is returned exactly once, and no key is ever returned twice.
func TestScanUnderChurn(t *testing.T) {
	for _, nShards := range []int{1, 8} {
		m := New(nShards)
		const stable = 1000
		for i := 0; i < stable; i++ {
			put(m, fmt.Sprintf("s%d", i), IntEntry(0, 0))
		}
		var stop atomic.Bool
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(w), 1))
				for !stop.Load() {
					k := fmt.Sprintf("c%d:%d", w, r.IntN(300))
					if r.IntN(2) == 0 {
						put(m, k, IntEntry(1, 0))
					} else {
						del(m, k, 0)
					}
				}
			}(w)
		}
		for round := 0; round < 3; round++ {
			seen := scanKeys(t, m, 5, 0)
			for i := 0; i < stable; i++ {
				if c := seen[fmt.Sprintf("s%d", i)]; c != 1 {
					t.Fatalf("%d shards: stable key s%d seen %d times", nShards, i, c)
				}
			}
			for k, c := range seen {
				if c != 1 {
					t.Fatalf("%d shards: %q seen %d times", nShards, k, c)
				}
			}
		}
		stop.Store(true)
		wg.Wait()
	}
}

func TestForEachAndRandomKey(t *testing.T) {
	m := New(8)
	if _, ok := m.RandomKey(0, false); ok {
		t.Fatal("RandomKey on an empty map")
	}
	put(m, "dead", IntEntry(0, 10))
	if _, ok := m.RandomKey(10, false); ok {
		t.Fatal("RandomKey returned an expired key")
	}
	want := map[string]bool{}
	for i := 0; i < 50; i++ {
		k := fmt.Sprintf("k%d", i)
		want[k] = true
		put(m, k, IntEntry(0, 0))
	}
	got := map[string]bool{}
	m.ForEach(10, false, func(k string, _ Entry) bool { got[k] = true; return true })
	if len(got) != len(want) || got["dead"] {
		t.Fatalf("ForEach saw %d keys (dead: %v)", len(got), got["dead"])
	}
	calls := 0
	m.ForEach(10, false, func(string, Entry) bool { calls++; return calls < 3 })
	if calls != 3 {
		t.Fatalf("ForEach ran %d times after returning false at 3", calls)
	}
	picked := map[string]bool{}
	for i := 0; i < 2000; i++ {
		k, ok := m.RandomKey(10, false)
		if !ok || !want[k] {
			t.Fatalf("RandomKey = %q, %v", k, ok)
		}
		picked[k] = true
	}
	if len(picked) < 8 {
		t.Fatalf("RandomKey picked only %d distinct keys of 50", len(picked))
	}
	// The Locked variants with every shard held by the caller.
	for i := 0; i < m.NumShards(); i++ {
		m.Lock(i)
	}
	if _, ok := m.RandomKey(10, true); !ok {
		t.Fatal("RandomKey(allLocked) found nothing")
	}
	n := 0
	m.ForEach(10, true, func(string, Entry) bool { n++; return true })
	c := m.Scan(0, 1000, 10, true, func(string, Entry) { n++ })
	for i := 0; i < m.NumShards(); i++ {
		m.Unlock(i)
	}
	if n != 100 || c != 0 {
		t.Fatalf("allLocked ForEach+Scan saw %d keys (cursor %d), want 100", n, c)
	}
}

// TestCounters runs random operations against a model and checks that Len
// and Expires stay exact through Put, Delete, lazy and active expiry and
// Flush.
func TestCounters(t *testing.T) {
	m := New(4)
	type mv struct{ exp int64 }
	model := map[string]mv{}
	r := rand.New(rand.NewPCG(9, 9))
	now := int64(1000)
	check := func(step int, op string) {
		t.Helper()
		var keys, expires int64
		for _, v := range model {
			keys++
			if v.exp != 0 {
				expires++
			}
		}
		if m.Len() != keys || m.Expires() != expires {
			t.Fatalf("step %d (%s): Len, Expires = %d, %d; model %d, %d", step, op, m.Len(), m.Expires(), keys, expires)
		}
	}
	for step := 0; step < 20000; step++ {
		k := fmt.Sprintf("k%d", r.IntN(200))
		var op string
		switch x := r.IntN(100); {
		case x < 40:
			op = "put"
			var exp int64
			if r.IntN(2) == 0 {
				exp = now + int64(r.IntN(20)) - 5 // some already dead
				if exp <= 0 {
					exp = 1
				}
			}
			put(m, k, IntEntry(1, exp))
			model[k] = mv{exp}
		case x < 60:
			op = "delete"
			del(m, k, now)
			delete(model, k)
		case x < 80:
			op = "get"
			_, ok := get(m, k, now)
			v, in := model[k]
			alive := in && (v.exp == 0 || v.exp > now)
			if ok != alive {
				t.Fatalf("step %d: Get(%s) = %v, model alive %v", step, k, ok, alive)
			}
			if in && !alive {
				delete(model, k)
			}
		case x < 95:
			op = "cycle"
			for round := 0; round < 50; round++ {
				m.ExpireCycle(now, m.NumShards())
			}
			// Sampling may leave some dead keys; remove exactly those the
			// map no longer has.
			for mk := range model {
				i := m.ShardOf([]byte(mk))
				m.Lock(i)
				s, tag := m.locate([]byte(mk))
				in := s.t.find([]byte(mk), tag) >= 0
				m.Unlock(i)
				if !in {
					if v := model[mk]; v.exp == 0 || v.exp > now {
						t.Fatalf("step %d: ExpireCycle removed live key %s", step, mk)
					}
					delete(model, mk)
				}
			}
		case x < 97:
			op = "flush"
			if r.IntN(2) == 0 {
				m.Flush()
				clear(model)
			} else {
				i := r.IntN(m.NumShards())
				m.Lock(i)
				m.FlushLocked(i)
				m.Unlock(i)
				for mk := range model {
					if m.ShardOf([]byte(mk)) == i {
						delete(model, mk)
					}
				}
			}
		default:
			op = "tick"
			now += int64(r.IntN(5))
		}
		check(step, op)
	}
}

// TestConcurrentReadModifyWrite has many goroutines increment few keys
// under the shard lock: no update may be lost. Run with -race.
func TestConcurrentReadModifyWrite(t *testing.T) {
	m := New(4)
	const goroutines, increments = 32, 500
	keys := []string{"a", "b", "c"}
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < increments; i++ {
				k := []byte(keys[(g+i)%len(keys)])
				s := m.ShardOf(k)
				m.Lock(s)
				e, _ := m.Get(k, 0)
				m.Put(k, IntEntry(e.Int+1, 0))
				m.Unlock(s)
				if i%50 == 0 {
					// Readers that lock their own shards run alongside.
					m.Len()
					m.RandomKey(0, false)
					m.Scan(0, 2, 0, false, func(string, Entry) {})
				}
			}
		}(g)
	}
	wg.Wait()
	var total int64
	for _, k := range keys {
		e, ok := get(m, k, 0)
		if !ok {
			t.Fatalf("key %q missing", k)
		}
		total += e.Int
	}
	if total != goroutines*increments {
		t.Fatalf("total = %d, want %d: updates were lost", total, goroutines*increments)
	}
}

// TestShardDistribution checks that keys spread evenly over the shards,
// including keys that differ only in a counter suffix.
func TestShardDistribution(t *testing.T) {
	const shards, keys = 64, 200_000
	m := New(shards)
	counts := make([]int, shards)
	for i := 0; i < keys; i++ {
		counts[m.ShardOf([]byte(fmt.Sprintf("user:%d", i)))]++
	}
	mean := float64(keys) / shards
	var chi2 float64
	for i, c := range counts {
		d := float64(c) - mean
		chi2 += d * d / mean
		if math.Abs(d) > 0.1*mean {
			t.Errorf("shard %d holds %d keys, mean %.0f", i, c, mean)
		}
	}
	// 63 degrees of freedom: chi2 above 120 has probability < 1e-5.
	if chi2 > 120 {
		t.Errorf("chi-square %.1f over %d shards: not uniform", chi2, shards)
	}
	// ShardOf agrees with where Put stores the key.
	put(m, "x", IntEntry(1, 0))
	i := m.ShardOf([]byte("x"))
	if m.shards[i].keys.Load() != 1 {
		t.Fatal("key not in the shard ShardOf names")
	}
}

func TestWatchMarksDirty(t *testing.T) {
	m := New(4)
	var w Watch
	k := []byte("k")
	i := m.ShardOf(k)
	m.Lock(i)
	m.Watch(k, &w)
	m.Unlock(i)
	for _, step := range []struct {
		name string
		f    func()
	}{
		{"put", func() { m.Put(k, IntEntry(1, 5)) }},
		{"delete", func() { m.Delete(k, 0) }},
		{"lazy expiry", func() { m.Put(k, IntEntry(1, 5)); w.Dirty.Store(false); m.Get(k, 5) }},
		{"active expiry", func() {
			m.Put(k, IntEntry(1, 5))
			w.Dirty.Store(false)
			m.Unlock(i)
			defer m.Lock(i)
			if m.ExpireCycle(5, m.NumShards()) != 1 {
				t.Error("active expiry did not remove the key")
			}
		}},
	} {
		w.Dirty.Store(false)
		m.Lock(i)
		step.f()
		m.Unlock(i)
		if !w.Dirty.Load() {
			t.Errorf("%s did not mark the watcher dirty", step.name)
		}
	}
	// Changes to other keys do not.
	w.Dirty.Store(false)
	put(m, "other", IntEntry(1, 0))
	if w.Dirty.Load() {
		t.Error("a change to another key marked the watcher dirty")
	}
	m.Lock(i)
	m.Unwatch(k, &w)
	m.Put(k, IntEntry(2, 0))
	m.Unlock(i)
	if w.Dirty.Load() {
		t.Error("an unwatched key marked the watcher dirty")
	}
}

func TestPosHeapKeepsSmallest(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var h posHeap
	for trial := 0; trial < 200; trial++ {
		k := 1 + r.IntN(20)
		n := r.IntN(100)
		h.reset(k)
		var all []uint64
		for i := 0; i < n; i++ {
			p := uint64(r.IntN(50)) // many duplicates
			all = append(all, p)
			h.offer(p)
		}
		if n == 0 {
			continue
		}
		slices.Sort(all)
		want := all[min(k, n)-1]
		if got := h.max(); got != want {
			t.Fatalf("k=%d n=%d: max of the k smallest = %d, want %d", k, n, got, want)
		}
	}
}

// When every key has expired, each full cycle removes a full quota from
// every shard, to the last key: the sweep does not slow down as the tables
// empty (a random starting point kept landing in emptied stretches).
func TestExpireCycleMassExpiryDoesNotSlowDown(t *testing.T) {
	m := New(8)
	const now = 1000 * sec
	const n = 100000
	for i := 0; i < n; i++ {
		put(m, fmt.Sprintf("key:%012d", i), IntEntry(now-1, now-1))
	}
	perCycle := m.NumShards() * maxRounds * sampleSize
	cycles := 0
	for m.Len() > 0 {
		if cycles > n/perCycle+3 {
			t.Fatalf("%d keys left after %d cycles; %d cycles of %d should have done", m.Len(), cycles, n/perCycle+1, perCycle)
		}
		before := m.Len()
		removed, stale := m.ExpireShards(now, m.NumShards(), nil)
		cycles++
		if int64(removed) != before-m.Len() {
			t.Fatalf("removed %d, Len went %d -> %d", removed, before, m.Len())
		}
		// While some shard holds more dead keys than one visit removes,
		// the cycle says so.
		if before > int64(2*perCycle) && !stale {
			t.Fatalf("cycle %d: %d dead keys left, stale = false", cycles, m.Len())
		}
	}
	if _, stale := m.ExpireShards(now, m.NumShards(), nil); stale {
		t.Fatal("empty map reported stale")
	}
}

// A shard visit walks a bounded number of slots even when no key with a
// TTL is dead, and a map of live keys is never stale.
func TestExpireShardsLiveKeysNotStale(t *testing.T) {
	m := New(4)
	const now = 1000 * sec
	for i := 0; i < 10000; i++ {
		put(m, fmt.Sprintf("live:%d", i), IntEntry(now+sec, now+sec))
		put(m, fmt.Sprintf("keep:%d", i), IntEntry(1, 0))
	}
	for c := 0; c < 10; c++ {
		if removed, stale := m.ExpireShards(now, m.NumShards(), nil); removed != 0 || stale {
			t.Fatalf("removed %d stale %v, want 0 false", removed, stale)
		}
	}
	// One dead key among many live ones is found by repeated cycles.
	put(m, "dead", IntEntry(now-1, now-1))
	for c := 0; m.Len() > 20000; c++ {
		if c > 1000 {
			t.Fatal("the dead key was never found")
		}
		m.ExpireCycle(now, m.NumShards())
	}
}

func TestBytesGivenBackByExpiry(t *testing.T) {
	m := New(4)
	if b := m.Bytes(); b != 0 {
		t.Fatalf("empty map: %d bytes", b)
	}
	const now = 1000 * sec
	for i := 0; i < 10000; i++ {
		put(m, fmt.Sprintf("key:%012d", i), IntEntry(now-1, now-1))
	}
	put(m, "big", BytesEntry(make([]byte, 5000), now-1))
	if b := m.Bytes(); b < 10000*(16+17) || b > 10000*200 {
		t.Fatalf("10^4 keys: %d bytes", b)
	}
	for m.Len() > 0 {
		m.ExpireCycle(now, m.NumShards())
	}
	if b := m.Bytes(); b != 0 {
		t.Fatalf("after every key expired: %d bytes, want 0 (tables freed)", b)
	}
}

// stop ends a visit between sampling rounds: a caller's time budget bounds
// the work to about one round past it.
func TestExpireShardsStop(t *testing.T) {
	m := New(1)
	const now = 1000 * sec
	for i := 0; i < 10000; i++ {
		put(m, fmt.Sprintf("key:%d", i), IntEntry(now-1, now-1))
	}
	calls := 0
	removed, more := m.ExpireShards(now, 1, func() bool { calls++; return calls > 2 })
	if removed != 3*sampleSize || !more {
		t.Fatalf("removed %d more %v; want %d true (three rounds, then stopped)", removed, more, 3*sampleSize)
	}
	// The first round of a visit always runs, so a cycle makes progress
	// even when the budget is already spent.
	removed, more = m.ExpireShards(now, 1, func() bool { return true })
	if removed != sampleSize || !more {
		t.Fatalf("removed %d more %v; want %d true", removed, more, sampleSize)
	}
}

// Active expiry removes a mass of dead keys next to live ones with values:
// every live key keeps its value through the compactions and shrinks the
// sweep triggers, and the arena never holds more than four times its live
// records (delSwept's bound) plus the compaction minimum.
func TestExpireSweepKeepsLiveValues(t *testing.T) {
	m := New(1)
	const now = 1000 * sec
	const n = 50000
	val := func(i int) string { return fmt.Sprintf("value-%d-%s", i, strings.Repeat("x", i%40)) }
	for i := 0; i < n; i++ {
		exp := int64(now - 1) // dead
		if i%5 == 0 {
			exp = now + 3600*sec // live
		}
		put(m, fmt.Sprintf("key:%012d", i), BytesEntry([]byte(val(i)), exp))
	}
	s := &m.shards[0]
	for cycles := 0; m.Len() > n/5; cycles++ {
		if cycles > 10000 {
			t.Fatalf("%d keys left after %d cycles", m.Len(), cycles)
		}
		m.ExpireCycle(now, 1)
		m.Lock(0)
		live := 0
		for i := range s.t.slots {
			if s.t.slots[i].meta != 0 && s.t.slots[i].meta&flagOwnRec == 0 {
				live += s.t.recordLen(i)
			}
		}
		if g := len(s.t.arena) - live; g > 3*live+garbageMin {
			t.Fatalf("arena %d bytes for %d live bytes", len(s.t.arena), live)
		}
		m.Unlock(0)
	}
	for i := 0; i < n; i += 5 {
		e, ok := get(m, fmt.Sprintf("key:%012d", i), now)
		if !ok || string(e.Str) != val(i) {
			t.Fatalf("key %d: %q, %v; want %q", i, e.Str, ok, val(i))
		}
	}
}

// TestRefHolds: a Ref to a present key holds while its slot keeps the key
// and not once the key has moved (its table grew) or gone, whatever else
// happened in the shard; a Ref to an absent key never holds. Whenever it
// holds, it is current (a Set through it writes the key's slot).
func TestRefHolds(t *testing.T) {
	m := New(1)
	m.Lock(0)
	defer m.Unlock(0)
	key := func(i int) []byte { return []byte("key:" + strconv.Itoa(i)) }
	m.Put(key(0), IntEntry(1, 0))
	if _, r, _ := m.Lookup([]byte("absent"), 0); r.Holds() {
		t.Fatal("a Ref to an absent key holds")
	}
	_, r, found := m.Lookup(key(0), 0)
	if !found || !r.Holds() {
		t.Fatal("a fresh Ref to a present key does not hold")
	}
	moved := false
	for i := 1; i < 5000 && !moved; i++ {
		m.Put(key(i), IntEntry(int64(i), 0))
		holds, current := r.Holds(), r.Current()
		if holds != current {
			t.Fatalf("after %d more keys: Holds %v, Current %v", i, holds, current)
		}
		moved = !holds
	}
	if !moved {
		t.Fatal("the key never moved while the table grew")
	}
	_, r, _ = m.Lookup(key(0), 0)
	m.Set(r, IntEntry(7, 0)) // through a Ref that holds
	if !r.Holds() {
		t.Fatal("a Set through the Ref moved the key")
	}
	if e, _, _ := m.Lookup(key(0), 0); e.Int != 7 {
		t.Fatalf("key 0 = %d after the Set, want 7", e.Int)
	}
	m.Delete(key(0), 0)
	if r.Holds() {
		t.Fatal("a Ref to a deleted key holds")
	}
	// An expired key left in place for a Set (LookupForSet).
	m.Put(key(0), Entry{Kind: KindInt, Int: 1, Exp: 10})
	if _, r, _ := m.LookupForSet(key(0), 20); r.Holds() {
		t.Fatal("a Ref to an expired key left in place holds")
	} else {
		m.Discard(r)
	}
}

// TestLookupIntoHash: the lookups that take the key's hash and write
// through pointers find what Lookup and LookupForSet find, expired keys
// included, and leave the map as they do.
func TestLookupIntoHash(t *testing.T) {
	fill := func() *Map {
		m := New(1)
		m.Lock(0)
		for i := range 200 {
			m.Put([]byte("k"+strconv.Itoa(i)), IntEntry(int64(i), int64(i%3)*50)) // no expiry, or 50 or 100
		}
		return m
	}
	for _, forSet := range []bool{false, true} {
		m1, m2 := fill(), fill()
		for i := range 210 { // ten absent keys
			k := []byte("k" + strconv.Itoa(i))
			var want, e Entry
			var wantRef, r Ref
			var wantFound, found bool
			if forSet {
				want, wantRef, wantFound = m1.LookupForSet(k, 75)
				found = m2.LookupForSetIntoHash(k, m2.Hash(k), 75, &e, &r)
			} else {
				want, wantRef, wantFound = m1.Lookup(k, 75)
				found = m2.LookupIntoHash(k, m2.Hash(k), 75, &e, &r)
			}
			if found != wantFound || e.Kind != want.Kind || e.Int != want.Int || e.Exp != want.Exp || r.Expired() != wantRef.Expired() {
				t.Fatalf("forSet %v, key %s: %v %+v (expired %v), want %v %+v (expired %v)", forSet, k, found, e, r.Expired(), wantFound, want, wantRef.Expired())
			}
			m1.Discard(wantRef)
			m2.Discard(r)
		}
		if m1.Len() != m2.Len() || m1.Len() != 133 {
			t.Fatalf("forSet %v: %d and %d keys left, want 133", forSet, m1.Len(), m2.Len())
		}
		m1.Unlock(0)
		m2.Unlock(0)
	}
}
