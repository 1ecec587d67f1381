package shards

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestSnapshotIsPointInTime changes, deletes and flushes keys of every
// representation after a snapshot begins, and checks that the snapshot
// holds exactly the contents at the instant it began.
func TestSnapshotIsPointInTime(t *testing.T) {
	m := New(8)
	r := rand.New(rand.NewPCG(7, 7))
	want := map[string]Entry{}
	put := func(k string, e Entry) {
		i := m.ShardOf([]byte(k))
		m.Lock(i)
		m.Put([]byte(k), e)
		m.Unlock(i)
	}
	for i := 0; i < 3000; i++ {
		k := fmt.Sprint("key", i)
		e := randomEntry(r)
		if e.Kind == Kind(9) {
			e = IntEntry(int64(i), 0)
		}
		if e.Exp != 0 {
			e.Exp = 1 << 62 // far future: nothing expires in this test
		}
		if e.Kind == KindInt && e.Exp != 0 && r.IntN(2) == 0 {
			e.Exp = e.Int // GCRA form needs Exp == Int > now
			if e.Exp <= 0 {
				e.Exp, e.Int = 1<<62, 1<<62
			}
		}
		put(k, e)
		want[k] = e
	}
	for i := 0; i < m.NumShards(); i++ {
		m.Lock(i)
	}
	m.BeginSnapshotLocked()
	for i := 0; i < m.NumShards(); i++ {
		m.Unlock(i)
	}
	// Take shard 0 first, untouched; then change everything else.
	got := map[string]Entry{}
	collect := func(f Frozen) {
		f.ForEach(0, func(k []byte, e Entry) error {
			e.Str = bytes.Clone(e.Str)
			got[string(k)] = e
			return nil
		})
	}
	collect(m.SnapshotShard(0))
	for i := 0; i < 3000; i++ {
		k := []byte(fmt.Sprint("key", i))
		s := m.ShardOf(k)
		m.Lock(s)
		switch i % 4 {
		case 0:
			m.Delete(k, 0)
		case 1:
			m.Put(k, IntEntry(-1, 1<<62+5))
		case 2:
			m.Put(k, Entry{Kind: KindBytes, Str: bytes.Repeat([]byte("z"), 2000)})
		}
		m.Unlock(s)
	}
	m.Lock(3)
	m.FlushLocked(3)
	m.Unlock(3)
	for i := 1; i < m.NumShards(); i++ {
		collect(m.SnapshotShard(i))
	}
	if len(got) != len(want) {
		t.Fatalf("snapshot has %d keys, want %d", len(got), len(want))
	}
	for k, w := range want {
		g := got[k]
		if g.Kind != w.Kind || g.Int != w.Int || g.Exp != w.Exp || !bytes.Equal(g.Str, w.Str) {
			t.Fatalf("%s: snapshot %+v, want %+v", k, g, w)
		}
	}
	// A second snapshot sees the changes.
	for i := 0; i < m.NumShards(); i++ {
		m.Lock(i)
	}
	m.BeginSnapshotLocked()
	for i := 0; i < m.NumShards(); i++ {
		m.Unlock(i)
	}
	n := 0
	for i := 0; i < m.NumShards(); i++ {
		m.SnapshotShard(i).ForEach(0, func([]byte, Entry) error { n++; return nil })
	}
	if int64(n) != m.Len() {
		t.Fatalf("second snapshot has %d keys, map has %d", n, m.Len())
	}
}

// TestLoadInDumpOrderStaysShort loads one map's keys, in the order a dump
// of it emits them, into a fresh map: the regression here was keys arriving
// sorted by their slot position, which piles them into one long probe run
// while the table grows (minutes to load 10^7 keys). With per-map hash
// seeds the order is random for the new map, so probe runs stay short.
func TestLoadInDumpOrderStaysShort(t *testing.T) {
	a, b := New(4), New(4)
	for i := 0; i < 200000; i++ {
		k := []byte(fmt.Sprint("user:", i))
		a.Put(k, IntEntry(1<<62, 1<<62))
	}
	for i := 0; i < a.NumShards(); i++ {
		a.Lock(i)
	}
	a.BeginSnapshotLocked()
	for i := 0; i < a.NumShards(); i++ {
		a.Unlock(i)
	}
	// Load the first half of every shard's dump: the harm shows while the
	// table is still growing.
	for i := 0; i < a.NumShards(); i++ {
		f := a.SnapshotShard(i)
		half := f.t.n / 2
		f.ForEach(0, func(k []byte, e Entry) error {
			if half--; half >= 0 {
				b.Put(k, e)
			}
			return nil
		})
	}
	total, n := 0, 0
	for si := range b.shards {
		t := &b.shards[si].t
		for i, s := range t.slots {
			if s.meta != 0 {
				total += (i - t.ideal(s.meta) + len(t.slots)) % len(t.slots)
				n++
			}
		}
	}
	t.Logf("mean displacement %.2f", float64(total)/float64(n))
	// Random insertion at this load averages about one or two slots.
	if mean := float64(total) / float64(n); mean > 8 {
		t.Fatalf("keys sit %.1f slots past their ideal slot on average after loading in dump order", mean)
	}
}
