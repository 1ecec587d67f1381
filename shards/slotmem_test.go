package shards

import (
	"fmt"
	"testing"
)

// TestMappedSlots grows one shard past mappedMin, so its slot array moves
// into a huge-page mapping, then deletes, flushes and snapshots it: every
// key stays readable, and every mapped byte is given back.
func TestMappedSlots(t *testing.T) {
	m := New(1)
	const n = 120000 // ~1.8 MiB of slots at 70% load
	key := func(i int) []byte { return fmt.Appendf(nil, "mapped:%d", i) }
	m.Lock(0)
	defer m.Unlock(0)
	for i := range n {
		m.Put(key(i), IntEntry(int64(i), 0))
	}
	mapped := m.MappedBytes()
	if want := len(m.shards[0].t.slots) * slotBytes; mapped == 0 && mapSupported {
		t.Fatalf("%d slots (%d bytes) and nothing mapped", len(m.shards[0].t.slots), want)
	}
	if mapped%hugePage != 0 {
		t.Fatalf("mapped %d bytes, not whole huge pages", mapped)
	}
	if mapped > 0 && int64(cap(m.shards[0].t.slots)*slotBytes) != mapped {
		t.Fatalf("the table uses %d slots of a %d-byte mapping", cap(m.shards[0].t.slots), mapped)
	}

	// A snapshot's frozen copy lives on the heap and outlives the mapping.
	m.BeginSnapshotLocked()
	m.Put(key(0), IntEntry(-1, 0)) // freezes the shard
	frozen := *m.shards[0].frozen

	for i := range n {
		e, ok := m.Get(key(i), 0)
		want := int64(i)
		if i == 0 {
			want = -1
		}
		if !ok || e.Int != want {
			t.Fatalf("key %d: %v %v", i, e, ok)
		}
	}
	// Deleting most keys shrinks the table back onto the heap.
	for i := 100; i < n; i++ {
		if !m.Delete(key(i), 0) {
			t.Fatalf("delete %d", i)
		}
	}
	if got := m.MappedBytes(); got != 0 {
		t.Fatalf("after shrinking to 100 keys, %d bytes still mapped", got)
	}
	for i := range n {
		m.Put(key(i), IntEntry(int64(i), 0))
	}
	m.FlushLocked(0)
	if got := m.MappedBytes(); got != 0 {
		t.Fatalf("after FLUSH, %d bytes still mapped", got)
	}
	count := 0
	if err := frozen.ForEach(0, func(k []byte, e Entry) error {
		count++
		return nil
	}); err != nil || count != n {
		t.Fatalf("frozen copy holds %d keys (%v), want %d", count, err, n)
	}
}
