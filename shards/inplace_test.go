package shards

import (
	"bytes"
	"strconv"
	"testing"
)

// TestSameLengthStringInPlace: a string replaced by one of the same length
// (with an expiry where there was one) is rewritten where it is: the arena
// does not grow and no garbage is left; while a snapshot shares the arena
// it is written anew, so the snapshot keeps the old value.
func TestSameLengthStringInPlace(t *testing.T) {
	m := New(1)
	key := []byte("rl:{u1}:login")
	put := func(v string, exp int64) {
		m.Lock(0)
		m.Put(key, BytesEntry([]byte(v), exp))
		m.Unlock(0)
	}
	get := func() Entry {
		m.Lock(0)
		defer m.Unlock(0)
		e, _ := m.Get(key, 0)
		e.Str = bytes.Clone(e.Str)
		return e
	}
	put("\x00state-aaaa", 1<<60)
	arena := len(m.shards[0].t.arena)
	for _, v := range []string{"\x00state-bbbb", "\x00state-cccc"} {
		put(v, 1<<60+1)
		if e := get(); string(e.Str) != v || e.Exp != 1<<60+1 {
			t.Fatalf("got %q exp %d, want %q", e.Str, e.Exp, v)
		}
		if n := len(m.shards[0].t.arena); n != arena {
			t.Fatalf("arena grew from %d to %d bytes for a same-length value", arena, n)
		}
	}
	// A snapshot shares the arena: the value is written anew.
	m.Lock(0)
	m.BeginSnapshotLocked()
	m.Unlock(0)
	put("\x00state-dddd", 1<<60+2)
	var frozen string
	m.SnapshotShard(0).ForEach(0, func(k []byte, e Entry) error { frozen = string(e.Str); return nil })
	m.EndSnapshot()
	if frozen != "\x00state-cccc" {
		t.Fatalf("the snapshot saw %q, want the value at its start", frozen)
	}
	if e := get(); string(e.Str) != "\x00state-dddd" {
		t.Fatalf("after the snapshot: %q", e.Str)
	}
	// Another length, or no expiry where there was one: a new record.
	put("\x00longer-state-eeee", 1<<60)
	put("\x00longer-state-ffff", 0)
	if e := get(); string(e.Str) != "\x00longer-state-ffff" || e.Exp != 0 {
		t.Fatalf("got %q exp %d", e.Str, e.Exp)
	}
}

// TestInPlaceResumesAfterSnapshot: once the arena has moved to a new array
// (grown or compacted), a frozen copy taken earlier no longer shares it,
// so same-length values are rewritten in place again, and the frozen copy
// still reads what it held.
func TestInPlaceResumesAfterSnapshot(t *testing.T) {
	m := New(1)
	key := []byte("rl:{u1}:login")
	put := func(k []byte, v string) {
		m.Lock(0)
		m.Put(k, BytesEntry([]byte(v), 1<<60))
		m.Unlock(0)
	}
	put(key, "\x00state-aaaa")
	m.Lock(0)
	m.BeginSnapshotLocked()
	m.Unlock(0)
	frozen := m.SnapshotShard(0) // kept: as a dump still reading it
	m.EndSnapshot()
	tb := &m.shards[0].t
	arena := len(tb.arena)
	put(key, "\x00state-bbbb")
	if len(tb.arena) == arena {
		t.Fatal("a value shared with a frozen copy was rewritten in place")
	}
	for i := 0; tb.sharedArena; i++ { // other keys until the arena moves
		if i > 100_000 {
			t.Fatal("the arena never moved")
		}
		put([]byte("filler:"+strconv.Itoa(i)), "v")
	}
	arena = len(tb.arena)
	put(key, "\x00state-cccc")
	if len(tb.arena) != arena {
		t.Fatalf("after the arena moved, a same-length value still took new space (%d -> %d bytes)", arena, len(tb.arena))
	}
	var old string
	frozen.ForEach(0, func(k []byte, e Entry) error {
		if bytes.Equal(k, key) {
			old = string(e.Str)
		}
		return nil
	})
	if old != "\x00state-aaaa" {
		t.Fatalf("the frozen copy reads %q, want the value at the snapshot", old)
	}
	m.Lock(0)
	e, _ := m.Get(key, 0)
	m.Unlock(0)
	if string(e.Str) != "\x00state-cccc" {
		t.Fatalf("live value %q", e.Str)
	}
}

// TestLookupForSetReusesExpiredSlot: a key whose expiry passed is reported
// missing and counted as expired by LookupForSet, but stays in its slot;
// a Set through the Ref rewrites its record in place (no arena growth, no
// change in the key count), and Discard removes it instead. Lookup keeps
// deleting at once.
func TestLookupForSetReusesExpiredSlot(t *testing.T) {
	m := New(1)
	m.Lock(0)
	defer m.Unlock(0)
	key := []byte("rl:{u1}:login")
	for i := range 20 { // neighbours in the table
		m.Put([]byte("other"+strconv.Itoa(i)), BytesEntry([]byte("v"), 0))
	}
	m.Put(key, BytesEntry([]byte("\x00state-aaaa"), 100))
	keys, arena := m.Len(), len(m.shards[0].t.arena)

	e, r, found := m.LookupForSet(key, 100)
	if found || e.Kind != 0 || !r.Expired() || m.ExpiredKeys() != 1 || m.Len() != keys {
		t.Fatalf("expired key: found %v entry %+v expired ref %v, %d expired, %d keys (want %d)", found, e, r.Expired(), m.ExpiredKeys(), m.Len(), keys)
	}
	m.Set(r, BytesEntry([]byte("\x00state-bbbb"), 200))
	if got, ok := m.Get(key, 150); !ok || string(got.Str) != "\x00state-bbbb" || got.Exp != 200 {
		t.Fatalf("after the Set: %q exp %d found %v", got.Str, got.Exp, ok)
	}
	if m.Len() != keys || len(m.shards[0].t.arena) != arena {
		t.Fatalf("the Set was not in place: %d keys (want %d), arena %d bytes (was %d)", m.Len(), keys, len(m.shards[0].t.arena), arena)
	}

	// Not stored after all: Discard removes it, counted once.
	if _, r, found = m.LookupForSet(key, 200); found || !r.Expired() {
		t.Fatalf("second expiry: found %v, expired ref %v", found, r.Expired())
	}
	m.Discard(r)
	if _, _, ok := m.Find(key); ok || m.Len() != keys-1 || m.ExpiredKeys() != 2 {
		t.Fatalf("after Discard: present %v, %d keys (want %d), %d expired", ok, m.Len(), keys-1, m.ExpiredKeys())
	}
	for i := range 20 {
		if _, ok := m.Get([]byte("other"+strconv.Itoa(i)), 0); !ok {
			t.Fatalf("other%d lost", i)
		}
	}

	// A live key, or a missing one: a plain Ref, and Discard does nothing.
	m.Put(key, BytesEntry([]byte("\x00state-cccc"), 300))
	if _, r, found = m.LookupForSet(key, 250); !found || r.Expired() {
		t.Fatalf("live key: found %v, expired ref %v", found, r.Expired())
	}
	m.Discard(r)
	if _, _, r2 := m.Find(key); !r2 {
		t.Fatal("Discard removed a live key")
	}
}
