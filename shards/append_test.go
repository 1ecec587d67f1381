package shards

import (
	"bytes"
	"strings"
	"testing"
)

// appendLocked runs AppendBytes on key under its shard's lock.
func appendLocked(m *Map, key string, add string) (Entry, bool) {
	k := []byte(key)
	i := m.ShardOf(k)
	m.Lock(i)
	defer m.Unlock(i)
	_, r, found := m.Find(k)
	if !found {
		return Entry{}, false
	}
	return m.AppendBytes(r, []byte(add))
}

// TestAppendBytesInPlace: a big value grows in place; every view handed
// out before an append still shows the value it showed; the expiry is
// kept; the value is copied only a logarithmic number of times.
func TestAppendBytesInPlace(t *testing.T) {
	m := New(1)
	want := strings.Repeat("v", 2*bigRecord)
	put(m, "big", Entry{Kind: KindBytes, Str: []byte(want), Exp: 1 << 62})
	var views [][]byte
	var copies int
	last := ownRecord(m, "big")
	for i := 0; i < 2000; i++ {
		e, _ := get(m, "big", 0)
		views = append(views, e.Str)
		add := strings.Repeat(string(rune('a'+i%26)), 1+i%50)
		got, ok := appendLocked(m, "big", add)
		if !ok {
			t.Fatalf("append %d not in place", i)
		}
		want += add
		if string(got.Str) != want || got.Exp != 1<<62 || got.Kind != KindBytes {
			t.Fatalf("append %d: %d bytes, exp %d; want %d bytes", i, len(got.Str), got.Exp, len(want))
		}
		if rec := ownRecord(m, "big"); &rec[0] != &last[0] {
			copies++
			last = rec
		}
	}
	for i, v := range views { // each view still shows the value as it was
		if len(v) != 2*bigRecord+sumLen(i) || !strings.HasPrefix(want, string(v)) {
			t.Fatalf("view %d changed: %d bytes", i, len(v))
		}
		if cap(v) != len(v) {
			t.Fatalf("view %d has room after it (cap %d, len %d): an append to it could reach the record", i, cap(v), len(v))
		}
	}
	// 2 KiB grew to about 53 KiB: with a quarter more room each time,
	// about log(26)/log(1.25) ≈ 15 copies, not 2000.
	if copies > 20 {
		t.Fatalf("the value was copied %d times in 2000 appends", copies)
	}
	if n := m.Bytes(); n < int64(len(want)) {
		t.Fatalf("Bytes %d below the value's %d bytes", n, len(want))
	}
}

// ownRecord returns the record of key, kept as its own []byte.
func ownRecord(m *Map, key string) []byte {
	s, tag := m.locate([]byte(key))
	return s.t.objs[s.t.slots[s.t.find([]byte(key), tag)].off].([]byte)
}

// sumLen is the bytes the first i appends of TestAppendBytesInPlace added.
func sumLen(i int) int {
	n := 0
	for j := 0; j < i; j++ {
		n += 1 + j%50
	}
	return n
}

// TestAppendBytesNotInPlace: a short value (in the arena), an integer, a
// collection or a missing key are left alone (false): the caller stores a
// new value instead.
func TestAppendBytesNotInPlace(t *testing.T) {
	m := New(1)
	put(m, "short", Entry{Kind: KindBytes, Str: []byte("abc")})
	put(m, "int", IntEntry(5, 0))
	for _, k := range []string{"short", "int"} {
		if _, ok := appendLocked(m, k, "x"); ok {
			t.Errorf("%s: appended in place", k)
		}
	}
	k := []byte("missing")
	m.Lock(0)
	_, r, _ := m.Find(k)
	if _, ok := m.AppendBytes(r, []byte("x")); ok {
		t.Error("missing key: appended")
	}
	m.Unlock(0)
	if e, _ := get(m, "short", 0); string(e.Str) != "abc" {
		t.Fatalf("short changed: %q", e.Str)
	}
}

// TestAppendBytesSnapshotAndWatch: a snapshot begun before an append dumps
// the value as it was, and the key's watchers are marked.
func TestAppendBytesSnapshotAndWatch(t *testing.T) {
	m := New(1)
	before := bytes.Repeat([]byte("s"), 3*bigRecord)
	put(m, "big", Entry{Kind: KindBytes, Str: before})
	var w Watch
	m.Lock(0)
	m.Watch([]byte("big"), &w)
	m.BeginSnapshotLocked()
	m.Unlock(0)
	if _, ok := appendLocked(m, "big", "after"); !ok {
		t.Fatal("not in place")
	}
	if !w.Dirty.Load() {
		t.Fatal("watcher not marked")
	}
	var dumped []byte
	m.SnapshotShard(0).ForEach(0, func(k []byte, e Entry) error {
		dumped = bytes.Clone(e.Str)
		return nil
	})
	if !bytes.Equal(dumped, before) {
		t.Fatalf("snapshot shows %d bytes, want the %d before the append", len(dumped), len(before))
	}
	if e, _ := get(m, "big", 0); string(e.Str) != string(before)+"after" {
		t.Fatalf("live value: %d bytes", len(e.Str))
	}
}

// TestAppendBytesWhileDumping: appends in place while a frozen copy is
// read on another goroutine (as a snapshot is written): the race detector
// sees no shared byte, and the dump has the value of the snapshot's instant.
func TestAppendBytesWhileDumping(t *testing.T) {
	m := New(1)
	before := bytes.Repeat([]byte("d"), 4*bigRecord)
	put(m, "big", Entry{Kind: KindBytes, Str: before})
	appendLocked(m, "big", "x") // its record now has room after it
	m.Lock(0)
	m.BeginSnapshotLocked()
	m.Unlock(0)
	frozen := m.SnapshotShard(0)
	done := make(chan []byte)
	go func() {
		var got []byte
		for range 50 {
			frozen.ForEach(0, func(k []byte, e Entry) error {
				got = bytes.Clone(e.Str)
				return nil
			})
		}
		done <- got
	}()
	for range 200 {
		appendLocked(m, "big", "y")
	}
	if got := <-done; string(got) != string(before)+"x" {
		t.Fatalf("the dump shows %d bytes, want %d", len(got), len(before)+1)
	}
}
