package shards

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
)

// mustPanicWith runs f and checks that it panics with a message containing
// want.
func mustPanicWith(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("no panic, want one mentioning %q", want)
		}
		if msg := fmt.Sprint(r); !strings.Contains(msg, want) {
			t.Fatalf("panic %q does not mention %q", msg, want)
		}
	}()
	f()
}

func TestNewWithLimit(t *testing.T) {
	for _, c := range []struct {
		limit, want int
	}{
		{0, MaxKeysPerShard},
		{-3, MaxKeysPerShard},
		{1, 1},
		{1000, 1000},
		{MaxKeysPerShard, MaxKeysPerShard},
		{MaxKeysPerShard + 1, MaxKeysPerShard},
		{math.MaxInt, MaxKeysPerShard},
	} {
		m := NewWithLimit(3, c.limit)
		if m.NumShards() != 4 {
			t.Fatalf("NewWithLimit(3, %d) has %d shards", c.limit, m.NumShards())
		}
		for i := range m.NumShards() {
			m.Lock(i)
			got := m.Room(i)
			m.Unlock(i)
			if got != c.want {
				t.Errorf("NewWithLimit(3, %d): Room(%d) = %d, want %d", c.limit, i, got, c.want)
			}
		}
	}
	m := New(1)
	m.Lock(0)
	defer m.Unlock(0)
	if got := m.Room(0); got != MaxKeysPerShard {
		t.Fatalf("New(1).Room(0) = %d, want %d", got, MaxKeysPerShard)
	}
}

// The natural limit is exactly what a table of maxSlots slots holds
// without growing: one key more would need a bigger table than the tags
// can address.
func TestMaxKeysPerShardFitsTable(t *testing.T) {
	if overLoad(MaxKeysPerShard, maxSlots) {
		t.Fatalf("%d keys overload %d slots", MaxKeysPerShard, maxSlots)
	}
	if !overLoad(MaxKeysPerShard+1, maxSlots) {
		t.Fatalf("%d keys fit %d slots: the limit could be higher", MaxKeysPerShard+1, maxSlots)
	}
}

// TestFullShard fills one shard up to a small limit and checks that Room
// counts down to 0 and stays there, that keys present (even expired ones)
// can still be replaced, that new keys get ErrFull from PutChecked and make
// Put panic, and that deleting, lazy expiry, active expiry and flushing
// give room back.
func TestFullShard(t *testing.T) {
	const limit = 50
	const now = 1000 * sec
	m := NewWithLimit(1, limit)
	key := func(i int) []byte { return fmt.Appendf(nil, "key:%d", i) }
	m.Lock(0)
	for i := range limit {
		if got := m.Room(0); got != limit-i {
			t.Fatalf("after %d keys, Room = %d, want %d", i, got, limit-i)
		}
		var exp int64
		if i%10 == 0 {
			exp = now - sec // already expired: still holds its slot
		}
		if i%2 == 0 {
			m.Put(key(i), IntEntry(int64(i), exp))
		} else if err := m.PutChecked(key(i), BytesEntry([]byte("value"), exp)); err != nil {
			t.Fatalf("PutChecked of key %d with room %d: %v", i, m.Room(0), err)
		}
	}
	if got := m.Room(0); got != 0 {
		t.Fatalf("full shard: Room = %d", got)
	}
	if got := m.Len(); got != limit {
		t.Fatalf("full shard: Len = %d", got)
	}

	// Replacing present keys works when full, by every path.
	for i := range limit {
		if err := m.PutChecked(key(i), IntEntry(int64(-i), 0)); err != nil {
			t.Fatalf("PutChecked replacing key %d in a full shard: %v", i, err)
		}
		m.Put(key(i), BytesEntry([]byte("again"), now+sec))
		_, r, ok := m.Lookup(key(i), now)
		if !ok {
			t.Fatalf("key %d missing", i)
		}
		m.Set(r, IntEntry(int64(i), 0))
	}
	if got := m.Room(0); got != 0 {
		t.Fatalf("after replacing keys: Room = %d", got)
	}

	// New keys are refused.
	if err := m.PutChecked([]byte("new"), IntEntry(1, 0)); !errors.Is(err, ErrFull) {
		t.Fatalf("PutChecked of a new key into a full shard: %v, want ErrFull", err)
	}
	mustPanicWith(t, "Room", func() { m.Put([]byte("new"), IntEntry(1, 0)) })
	_, r, ok := m.Lookup([]byte("new"), now)
	if ok {
		t.Fatal("a refused key was stored")
	}
	mustPanicWith(t, "Room", func() { m.Set(r, IntEntry(1, 0)) })
	if got := m.Len(); got != limit {
		t.Fatalf("after refusals: Len = %d, want %d", got, limit)
	}
	if _, ok := m.Get([]byte("new"), now); ok {
		t.Fatal("a refused key was stored")
	}

	// Deleting gives room back, and only as much as it removes.
	if !m.Delete(key(1), now) {
		t.Fatal("Delete(key 1) = false")
	}
	if got := m.Room(0); got != 1 {
		t.Fatalf("after one delete: Room = %d", got)
	}
	if err := m.PutChecked([]byte("new"), IntEntry(1, 0)); err != nil {
		t.Fatalf("PutChecked after a delete: %v", err)
	}
	if got := m.Room(0); got != 0 {
		t.Fatalf("refilled: Room = %d", got)
	}
	if err := m.PutChecked([]byte("newer"), IntEntry(1, 0)); !errors.Is(err, ErrFull) {
		t.Fatalf("PutChecked into the refilled shard: %v, want ErrFull", err)
	}

	// A key found expired on access is removed and its slot freed.
	m.Put(key(2), IntEntry(2, now-1))
	if _, ok := m.Get(key(2), now); ok {
		t.Fatal("expired key 2 found")
	}
	if got := m.Room(0); got != 1 {
		t.Fatalf("after lazy expiry: Room = %d", got)
	}
	m.Put(key(2), IntEntry(2, 0))

	// Active expiry frees the slots of the keys it removes.
	for i := 3; i < 13; i++ {
		m.Put(key(i), IntEntry(int64(i), now-1))
	}
	m.Unlock(0)
	for range 10 {
		m.ExpireCycle(now, 1)
	}
	m.Lock(0)
	if got := m.Room(0); got != 10 {
		t.Fatalf("after active expiry of 10 keys: Room = %d", got)
	}
	m.FlushLocked(0)
	if got := m.Room(0); got != limit {
		t.Fatalf("after FLUSH: Room = %d", got)
	}
	m.Unlock(0)
}

// With several shards, each has its own limit.
func TestRoomPerShard(t *testing.T) {
	const limit = 3
	m := NewWithLimit(4, limit)
	full := map[int]int{}
	allFull := func() bool {
		for si := range m.NumShards() {
			if full[si] < limit {
				return false
			}
		}
		return true
	}
	// Go on for 100 keys past the moment every shard is full.
	for i, past := 0, 0; past < 100; i++ {
		if allFull() {
			past++
		}
		k := fmt.Appendf(nil, "k%d", i)
		si := m.ShardOf(k)
		m.Lock(si)
		err := m.PutChecked(k, IntEntry(1, 0))
		room := m.Room(si)
		m.Unlock(si)
		if full[si] < limit {
			if err != nil {
				t.Fatalf("shard %d with %d keys: %v", si, full[si], err)
			}
			full[si]++
		} else if !errors.Is(err, ErrFull) {
			t.Fatalf("shard %d holds %d keys: PutChecked = %v", si, full[si], err)
		}
		if room != limit-full[si] {
			t.Fatalf("shard %d holds %d keys: Room = %d", si, full[si], room)
		}
		if i > 10000 {
			t.Fatal("keys never filled every shard")
		}
	}
	if got := m.Len(); got != int64(limit*m.NumShards()) {
		t.Fatalf("Len = %d", got)
	}
}

// TestNaturalLimit fills one shard to MaxKeysPerShard, the table's own
// limit, and checks the next key gets ErrFull instead of the table's panic.
// It takes about half a minute and 0.6 GB: set TURNSTILE_BIG_TESTS=1 to run
// it.
func TestNaturalLimit(t *testing.T) {
	if os.Getenv("TURNSTILE_BIG_TESTS") != "1" {
		t.Skip("set TURNSTILE_BIG_TESTS=1 to fill a shard to its natural limit")
	}
	m := New(1)
	m.Lock(0)
	defer m.Unlock(0)
	var k [4]byte
	for i := range MaxKeysPerShard {
		binary.LittleEndian.PutUint32(k[:], uint32(i))
		if err := m.PutChecked(k[:], IntEntry(1, 0)); err != nil {
			t.Fatalf("key %d: %v", i, err)
		}
	}
	if got := m.Room(0); got != 0 {
		t.Fatalf("Room = %d", got)
	}
	if got := len(m.shards[0].t.slots); got != maxSlots {
		t.Fatalf("%d slots, want %d", got, maxSlots)
	}
	binary.LittleEndian.PutUint32(k[:], MaxKeysPerShard)
	if err := m.PutChecked(k[:], IntEntry(1, 0)); !errors.Is(err, ErrFull) {
		t.Fatalf("PutChecked of one key too many: %v", err)
	}
	binary.LittleEndian.PutUint32(k[:], 7)
	if err := m.PutChecked(k[:], IntEntry(2, 0)); err != nil {
		t.Fatalf("replacing a key in the full shard: %v", err)
	}
}
