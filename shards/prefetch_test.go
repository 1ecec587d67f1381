package shards

import (
	"bytes"
	"fmt"
	"testing"
)

// TestPrefetchChangesNothing runs the prefetch hints on an empty map, on
// present and absent keys, and on keys whose records live outside the
// arena: no panic, and every key reads back unchanged.
func TestPrefetchChangesNothing(t *testing.T) {
	m := New(4)
	m.PrefetchSlot(m.Hash([]byte("nothing")))
	m.PrefetchRecord(m.Hash([]byte("nothing")))
	big := bytes.Repeat([]byte("b"), 2*bigRecord)
	for i := range 1000 {
		k := fmt.Appendf(nil, "k%d", i)
		s := m.ShardOf(k)
		m.Lock(s)
		if i%10 == 0 {
			m.Put(k, BytesEntry(big, 0))
		} else {
			m.Put(k, IntEntry(int64(i), 0))
		}
		m.Unlock(s)
	}
	for i := range 2000 {
		k := fmt.Appendf(nil, "k%d", i)
		m.PrefetchSlot(m.Hash(k))
		m.PrefetchRecord(m.Hash(k))
	}
	for i := range 1000 {
		k := fmt.Appendf(nil, "k%d", i)
		s := m.ShardOf(k)
		m.Lock(s)
		e, ok := m.Get(k, 0)
		m.Unlock(s)
		switch {
		case !ok:
			t.Fatalf("key %d lost", i)
		case i%10 == 0 && !bytes.Equal(e.Str, big):
			t.Fatalf("key %d: big value changed", i)
		case i%10 != 0 && e.Int != int64(i):
			t.Fatalf("key %d = %d", i, e.Int)
		}
	}
}
