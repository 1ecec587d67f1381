package shards

import (
	"testing"
	"unsafe"
)

// TestMark checks that a shard's mark starts at 0, only moves forward, is
// kept per shard, and is not touched by changes to the keys.
func TestMark(t *testing.T) {
	m := New(4)
	for i := range m.NumShards() {
		m.Lock(i)
		if got := m.Mark(i); got != 0 {
			t.Fatalf("new shard %d: Mark = %d", i, got)
		}
		m.Unlock(i)
	}
	m.Lock(1)
	for _, c := range []struct{ set, want int64 }{
		{10, 10}, {5, 10}, {10, 10}, {11, 11}, {0, 11}, {-1, 11}, {1 << 62, 1 << 62},
	} {
		m.SetMark(1, c.set)
		if got := m.Mark(1); got != c.want {
			t.Fatalf("SetMark(1, %d): Mark = %d, want %d", c.set, got, c.want)
		}
	}
	m.FlushLocked(1)
	if got := m.Mark(1); got != 1<<62 {
		t.Fatalf("after FLUSH: Mark = %d", got)
	}
	m.Unlock(1)
	for _, i := range []int{0, 2, 3} {
		m.Lock(i)
		if got := m.Mark(i); got != 0 {
			t.Fatalf("shard %d: Mark = %d after setting shard 1's", i, got)
		}
		m.Unlock(i)
	}
}

// TestShardLayout checks what the shard struct's field order is for: the
// mark right after the mutex, and at least 64 bytes after the last field a
// command uses.
func TestShardLayout(t *testing.T) {
	var s shard
	if unsafe.Offsetof(s.mark) != unsafe.Offsetof(s.mu)+unsafe.Sizeof(s.mu) {
		t.Errorf("mark at offset %d, mutex at %d (%d bytes): not adjacent",
			unsafe.Offsetof(s.mark), unsafe.Offsetof(s.mu), unsafe.Sizeof(s.mu))
	}
	if end := unsafe.Offsetof(s.hint) + unsafe.Sizeof(s.hint); unsafe.Sizeof(s)-end < 64 {
		t.Errorf("%d bytes from the last hot field to the end of the shard, want at least 64", unsafe.Sizeof(s)-end)
	}
	if unsafe.Sizeof(uintptr(0)) == 8 && unsafe.Sizeof(s) != 384 {
		t.Errorf("shard is %d bytes, not 384 (update the comment on shard, and check the padding)", unsafe.Sizeof(s))
	}
}
