package shards

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// TestTableAgainstModel runs random puts, overwrites and deletes of every
// representation (int, GCRA int with implied expiry, int with stored
// expiry, short and big byte values, objects) against a Go map, checking
// every key after each step, through growth, backward-shift deletion and
// arena compaction.
func TestTableAgainstModel(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		r := rand.New(rand.NewPCG(seed, 99))
		var tb table
		model := map[string]Entry{}
		keys := make([]string, 300)
		for i := range keys {
			keys[i] = fmt.Sprintf("key:%d:%s", i, bytes.Repeat([]byte("x"), r.IntN(40)))
		}
		keys[0] = string(bytes.Repeat([]byte("K"), 2000)) // a key too big for the arena
		for step := 0; step < 20000; step++ {
			k := keys[r.IntN(len(keys))]
			tag := tagOf(xxhash.Sum64String(k))
			if r.IntN(4) == 0 {
				if i := tb.find([]byte(k), tag); i >= 0 {
					tb.del(i)
				}
				delete(model, k)
			} else {
				e := randomEntry(r)
				_, existed := tb.put([]byte(k), tag, e)
				if _, had := model[k]; had != existed {
					t.Fatalf("seed %d step %d: existed=%v, model %v", seed, step, existed, had)
				}
				model[k] = e
			}
			if tb.n != len(model) {
				t.Fatalf("seed %d step %d: n=%d, model %d", seed, step, tb.n, len(model))
			}
			if step%97 == 0 {
				checkTable(t, &tb, model, keys)
			}
		}
		checkTable(t, &tb, model, keys)
	}
}

func randomEntry(r *rand.Rand) Entry {
	switch r.IntN(6) {
	case 0:
		return IntEntry(r.Int64(), 0)
	case 1:
		n := r.Int64N(1 << 62)
		return IntEntry(n, n) // GCRA form
	case 2:
		return IntEntry(r.Int64(), r.Int64N(1<<62)+1)
	case 3:
		return Entry{Kind: KindBytes, Str: bytes.Repeat([]byte{byte(r.IntN(256))}, r.IntN(50)), Exp: r.Int64N(2) * 12345}
	case 4:
		return Entry{Kind: KindBytes, Str: bytes.Repeat([]byte("B"), 1000+r.IntN(2000))}
	}
	return Entry{Kind: Kind(9), Obj: r.IntN(1000), Exp: r.Int64N(2) * 777}
}

func checkTable(t *testing.T, tb *table, model map[string]Entry, keys []string) {
	t.Helper()
	for _, k := range keys {
		i := tb.find([]byte(k), tagOf(xxhash.Sum64String(k)))
		want, ok := model[k]
		if (i >= 0) != ok {
			t.Fatalf("key %.20q: found=%v, model %v", k, i >= 0, ok)
		}
		if !ok {
			continue
		}
		got := tb.entry(i)
		if got.Kind != want.Kind || got.Int != want.Int || got.Exp != want.Exp ||
			!bytes.Equal(got.Str, want.Str) || got.Obj != want.Obj {
			t.Fatalf("key %.20q: got %+v, want %+v", k, got, want)
		}
	}
	if tb.garbage > len(tb.arena) {
		t.Fatalf("garbage %d > arena %d", tb.garbage, len(tb.arena))
	}
}

// TestTableStrStaysValid checks that a value handed out by entry stays the
// same after the key is overwritten, deleted and the arena compacted.
func TestTableStrStaysValid(t *testing.T) {
	var tb table
	k := []byte("k")
	tag := tagOf(xxhash.Sum64(k))
	tb.put(k, tag, Entry{Kind: KindBytes, Str: []byte("first")})
	v := tb.entry(tb.find(k, tag)).Str
	for i := 0; i < 5000; i++ {
		key := []byte(fmt.Sprint("other", i))
		tb.put(key, tagOf(xxhash.Sum64(key)), Entry{Kind: KindBytes, Str: []byte("value-value")})
		tb.del(tb.find(key, tagOf(xxhash.Sum64(key))))
	}
	tb.put(k, tag, Entry{Kind: KindBytes, Str: []byte("second")})
	if string(v) != "first" {
		t.Fatalf("old view changed to %q", v)
	}
}

// BenchmarkTablePutGCRA measures the hot write: overwriting a GCRA entry.
func BenchmarkTablePutGCRA(b *testing.B) {
	var tb table
	keys := make([][]byte, 4096)
	tags := make([]uint32, len(keys))
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("user:%011d", i))
		tags[i] = tagOf(xxhash.Sum64(keys[i]))
		tb.put(keys[i], tags[i], IntEntry(1, 1))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j := i & 4095
		n := int64(i + 2)
		tb.put(keys[j], tags[j], IntEntry(n, n))
	}
}

// TestTableShrinks checks that deleting most keys shrinks the slot array
// and the arena, that the survivors are still found, and that an emptied
// table holds no memory.
func TestTableShrinks(t *testing.T) {
	var tb table
	key := func(i int) []byte { return []byte(fmt.Sprint("key-", i)) }
	for i := 0; i < 10000; i++ {
		tb.put(key(i), tagOf(xxhash.Sum64(key(i))), Entry{Kind: KindBytes, Str: []byte("some value")})
	}
	big, bigArena := len(tb.slots), cap(tb.arena)
	for i := 10; i < 10000; i++ {
		tb.del(tb.find(key(i), tagOf(xxhash.Sum64(key(i)))))
	}
	if len(tb.slots) > big/100 || cap(tb.arena) > bigArena/100 {
		t.Fatalf("after deleting 9990 of 10000: %d slots (was %d), arena cap %d (was %d)", len(tb.slots), big, cap(tb.arena), bigArena)
	}
	for i := 0; i < 10; i++ {
		j := tb.find(key(i), tagOf(xxhash.Sum64(key(i))))
		if j < 0 || string(tb.entry(j).Str) != "some value" {
			t.Fatalf("survivor %d lost", i)
		}
		tb.del(j)
	}
	if tb.slots != nil || tb.arena != nil || tb.n != 0 {
		t.Fatalf("empty table still holds %d slots, %d arena bytes", len(tb.slots), cap(tb.arena))
	}
}

// maxRun returns the longest distance of a key from its ideal slot.
func (t *table) maxRun() int {
	most := 0
	for i := range t.slots {
		if m := t.slots[i].meta; m != 0 {
			most = max(most, (i-t.ideal(m)+len(t.slots))%len(t.slots))
		}
	}
	return most
}

// Deleting keys in slot order (as active expiry's sweep does) leaves the
// survivors in a narrow range of tags; a shrink must not pack them into
// one long probe run. Before maybeShrink checked the runs it builds, a
// shrink packed the 3,268 survivors of this test into 6,536 slots with a
// key 2,178 slots from its ideal slot.
func TestTableShrinkAfterSweep(t *testing.T) {
	var tb table
	key := func(i int) []byte { return []byte(fmt.Sprint("key-", i)) }
	const n = 20000
	for i := 0; i < n; i++ {
		tb.put(key(i), tagOf(xxhash.Sum64(key(i))), IntEntry(1, 1))
	}
	shrinks := 0
	for i := len(tb.slots) - 1; tb.n > 0; i-- {
		if tb.slots[i].meta == 0 {
			continue
		}
		size := len(tb.slots)
		tb.del(i)
		if len(tb.slots) == size || tb.slots == nil {
			continue
		}
		shrinks++
		if r := tb.maxRun(); r > 32 {
			t.Fatalf("%d keys left in %d slots: a key sits %d slots from its ideal slot", tb.n, len(tb.slots), r)
		}
		i = len(tb.slots) // go on from the end
	}
	t.Logf("%d shrinks on the way down", shrinks)
	if tb.slots != nil {
		t.Fatalf("empty table still holds %d slots", len(tb.slots))
	}
}

// After a sweep that removed keys spread over the whole table, the table
// shrinks once the sweep's pass ends.
func TestTableShrinksAfterSpreadDeletes(t *testing.T) {
	var tb table
	key := func(i int) []byte { return []byte(fmt.Sprint("key-", i)) }
	const n = 20000
	for i := 0; i < n; i++ {
		tb.put(key(i), tagOf(xxhash.Sum64(key(i))), IntEntry(int64(1+i%20), int64(1+i%20)))
	}
	big := len(tb.slots)
	for i := len(tb.slots) - 1; i >= 0; i-- {
		if tb.slots[i].meta == 0 || tb.entry(i).Int == 1 {
			continue
		}
		size := len(tb.slots)
		tb.del(i)
		if len(tb.slots) != size {
			i = len(tb.slots) // shrunk: indexes changed, go on from the end
		}
	}
	if tb.n != n/20 {
		t.Fatalf("%d keys left, want %d", tb.n, n/20)
	}
	// The sweep's pass ended: the survivors are spread out.
	tb.sweptAll()
	if len(tb.slots) > big/4 {
		t.Fatalf("%d keys left in %d slots (was %d): did not shrink", tb.n, len(tb.slots), big)
	}
	if r := tb.maxRun(); r > 32 {
		t.Fatalf("a key sits %d slots from its ideal slot", r)
	}
}
