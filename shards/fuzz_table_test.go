package shards

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// FuzzTable decodes its input into a sequence of operations on a Map of 1,
// 2 or 4 shards and checks every step against a model, a map of the keys a
// shard holds (live or expired but not yet removed, which Len counts) with
// the package's expiry rule: a key whose Exp != 0 && Exp <= now is absent
// to readers. Operations: puts of every representation (integers with and
// without expiry, GCRA integers whose expiry is their value, short byte
// values, values over 1 KiB that get their own records, objects) through
// Put, PutChecked and Lookup+Set; deletes; gets; a clock that moves
// forward; active expiry; snapshots (begin, take a shard, end, and reading
// frozen copies again after later writes); flushes; WATCH; bulk inserts,
// deletes and overwrites that make tables grow, shrink and compact their
// arenas; SCAN, ForEach and RandomKey; and, when the input picks a small
// per-shard limit, full shards. The key space is 300 keys, among them pairs
// that share shard and tag, an empty key and a key too big for the arena.
//
// After every step, every key of the pool is looked up (without lazy
// expiry) and compared with the model, as are Len, Expires, ExpiredKeys,
// Room, each shard's counters and slot invariants, and WATCH flags.
func FuzzTable(f *testing.F) {
	for _, s := range tableSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		runTableOps(t, data)
	})
}

// TestFuzzTableSeeds checks that the seed corpus reaches what FuzzTable is
// for: tables growing, shrinking and compacting, own records, shared tags,
// frozen copies read after later writes, full shards, expiry both ways.
func TestFuzzTableSeeds(t *testing.T) {
	var total tableOpStats
	for _, s := range tableSeeds() {
		st := runTableOps(t, s)
		total.add(st)
	}
	t.Logf("%+v", total)
	for name, n := range map[string]int{
		"grow": total.grew, "shrink": total.shrank, "compact": total.compacted,
		"own record": total.ownRecords, "shared tag": total.sharedTags,
		"frozen read after writes": total.frozenReads, "ErrFull": total.refused,
		"Put panic on a full shard": total.panics, "lazy expiry": total.lazyExpired,
		"active expiry": total.activeExpired, "dirty watch": total.dirtied,
	} {
		if n == 0 {
			t.Errorf("the seed corpus never reaches %s", name)
		}
	}
}

// Operations, chosen by an input byte modulo fzNumOps.
const (
	fzPutInt = iota
	fzPutGCRA
	fzPutBytes
	fzPutLong
	fzPutObj
	fzDelete
	fzGet
	fzTick
	fzExpire
	fzSnapBegin
	fzSnapTake
	fzSnapEnd
	fzFrozenRead
	fzFlushShard
	fzFlushAll
	fzFill
	fzDelRange
	fzOverwrite
	fzWatch
	fzUnwatch
	fzWatchReset
	fzScan
	fzForEach
	fzRandomKey
	fzNumOps
)

const (
	fzPoolSize   = 300
	fzSharedTags = 20 // pairs of pool keys with the same shard and tag
	fzMaxOps     = 1000
	fzMaxFrozen  = 4
	fzWatchers   = 4
)

// fzSeed is the hash seed of every fuzzed Map, so that the pool's shared
// tags are shared and a failing input replays the same way.
const fzSeed = 0x243f6a8885a308d3

var fzPool = sync.OnceValue(func() []string {
	m := New(1)
	m.seed = fzSeed
	pool := []string{"", strings.Repeat("K", 2000)}
	// Pairs whose hashes agree in the top 24 bits (tag) and the low 2 bits
	// (shard, for up to 4 shards): the table tells them apart only by
	// comparing keys.
	seen := map[uint64]string{}
	for j := 0; len(pool) < 2+2*fzSharedTags; j++ {
		k := "tag:" + strconv.Itoa(j)
		h := m.hash([]byte(k))
		id := h>>40<<2 | h&3
		if other, ok := seen[id]; ok {
			pool = append(pool, other, k)
			delete(seen, id)
			continue
		}
		seen[id] = k
	}
	for i := len(pool); i < fzPoolSize; i++ {
		k := "k:" + strconv.Itoa(i)
		if i%7 == 0 {
			k += strings.Repeat("x", 60)
		}
		pool = append(pool, k)
	}
	return pool
})

// fzHashes holds the hash of every pool key under fzSeed.
var fzHashes = sync.OnceValue(func() map[string]uint64 {
	m := New(1)
	m.seed = fzSeed
	hs := map[string]uint64{}
	for _, k := range fzPool() {
		hs[k] = m.hash([]byte(k))
	}
	return hs
})

// fzPoolBytes holds the pool's keys as byte slices.
var fzPoolBytes = sync.OnceValue(func() [][]byte {
	var out [][]byte
	for _, k := range fzPool() {
		out = append(out, []byte(k))
	}
	return out
})

// tableSeeds returns the seed corpus: a few inputs written op by op, and
// pseudo-random ones (any bytes decode to operations).
func tableSeeds() [][]byte {
	var seeds [][]byte
	// One shard, natural limit: fill, overwrite, snapshot, churn, empty.
	seeds = append(seeds, []byte{
		0, 0,
		fzFill, 0, 0, 41, // 300 keys, 41-byte values
		fzWatch, 5, 0, fzWatch, 2, 1, fzWatch, 3, 1, // a plain key and a shared-tag pair
		fzSnapBegin,
		fzOverwrite, 0, 100, 3,
		fzPutLong, 10, 0, 7, 65, 0,
		fzPutInt, 6, 1, 4, 161, // a stored expiry
		fzSnapTake, 0,
		fzOverwrite, 100, 120, 2,
		fzFrozenRead, 0,
		fzDelRange, 0, 0, 250,
		fzFrozenRead, 0,
		fzTick, 200,
		fzExpire, 2, 0,
		fzScan, 3,
		fzForEach, 0, 10,
		fzRandomKey,
		fzDelRange, 0, 0, 255,
		fzFrozenRead, 0,
	})
	// Two shards of 40 keys: full shards, expiry making room.
	seeds = append(seeds, []byte{
		1, 0x80 | 39,
		fzFill, 10, 0, 4, // Put: panics once a shard is full
		fzPutInt, 250, 3, 0, 4, 0,
		fzPutBytes, 251, 7, 1, 10, 65, 0, // PutChecked: ErrFull
		fzPutGCRA, 7, 2, 70,
		fzPutGCRA, 8, 1, 80,
		fzPutGCRA, 9, 2, 200,
		fzTick, 25,
		fzGet, 7, fzGet, 8,
		fzExpire, 0, 2,
		fzFill, 40, 1, 4,
		fzFlushShard, 1,
		fzFill, 120, 1, 4,
		fzWatch, 10, 2, fzFlushAll,
	})
	// A stored expiry updated after a snapshot froze the shard: the frozen
	// copy keeps the old one.
	seeds = append(seeds, []byte{
		0, 0,
		fzPutInt, 20, 0, 4, 161, // int 4, expiry now+24, stored in the arena
		fzPutInt, 21, 0, 8, 0,
		fzSnapBegin,
		fzPutInt, 22, 0, 8, 0, // freezes the shard
		fzPutInt, 20, 0, 12, 181, // a new stored expiry
		fzSnapTake, 0,
	})
	// A mass expiry: active expiry empties most of a big table, which
	// shrinks under the sweep.
	seeds = append(seeds, []byte{
		0, 0,
		fzFill, 0, 0x10, 9,
		fzTick, 20,
		fzExpire, 0x81, fzExpire, 0x81, fzExpire, 0x81, fzExpire, 0x81,
		fzExpire, 0x81, fzExpire, 0x81, fzExpire, 0x81, fzExpire, 0x81,
		fzScan, 7,
	})
	r := rand.New(rand.NewPCG(1, 2))
	// Small tables, where probe runs wrap around the end of the slots:
	// puts and deletes of a dozen keys in one shard.
	for range 3 {
		b := []byte{0, 0}
		for range 200 {
			k := byte(2 + r.IntN(12))
			if r.IntN(2) == 0 {
				b = append(b, fzPutInt, k, 0, 4, 0)
			} else {
				b = append(b, fzDelete, k)
			}
		}
		seeds = append(seeds, b)
	}
	for _, n := range []int{64, 300, 600} {
		for h := range 3 {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			b[0] = byte(h) // 1, 2 and 4 shards
			b[1] = byte(h * 90)
			seeds = append(seeds, b)
		}
	}
	return seeds
}

type tableOpStats struct {
	grew, shrank, compacted, ownRecords, sharedTags, frozenReads int
	refused, panics, lazyExpired, activeExpired, dirtied         int
}

func (s *tableOpStats) add(o tableOpStats) {
	s.grew += o.grew
	s.shrank += o.shrank
	s.compacted += o.compacted
	s.ownRecords += o.ownRecords
	s.sharedTags += o.sharedTags
	s.frozenReads += o.frozenReads
	s.refused += o.refused
	s.panics += o.panics
	s.lazyExpired += o.lazyExpired
	s.activeExpired += o.activeExpired
	s.dirtied += o.dirtied
}

// fzInput hands out the input's bytes; past its end, zeros.
type fzInput []byte

func (in *fzInput) byte() byte {
	if len(*in) == 0 {
		return 0
	}
	c := (*in)[0]
	*in = (*in)[1:]
	return c
}

// fzState is the Map under test and its model.
type fzState struct {
	t      *testing.T
	m      *Map
	in     fzInput
	pool   []string
	now    int64
	limit  int
	step   int
	op     string
	model  map[string]Entry // keys the Map holds, live or expired
	count  []int            // keys of model per shard
	expctr int64            // model of ExpiredKeys
	hashes map[string]uint64

	watch   [fzWatchers]*Watch
	watched [fzWatchers]map[string]bool
	dirty   [fzWatchers]bool

	snap       map[string]Entry // the model when the snapshot began
	snapActive bool
	taken      []bool
	frozen     []fzFrozen

	stats tableOpStats
}

// fzFrozen is a frozen shard the test took, with the keys it must hold.
type fzFrozen struct {
	f      Frozen
	shard  int
	want   map[string]Entry
	writes bool // the Map changed since it was taken
}

func runTableOps(t *testing.T, data []byte) tableOpStats {
	t.Helper()
	z := &fzState{t: t, in: fzInput(data), pool: fzPool(), now: 1000, model: map[string]Entry{}}
	nShards := 1 << (z.in.byte() % 3)
	limit := 0
	if b := z.in.byte(); b&0x80 != 0 {
		limit = 1 + int(b&0x7f)
	}
	z.m = NewWithLimit(nShards, limit)
	z.m.seed = fzSeed
	z.limit = MaxKeysPerShard
	if limit > 0 {
		z.limit = limit
	}
	z.taken = make([]bool, nShards)
	z.count = make([]int, nShards)
	z.hashes = fzHashes()
	for _, k := range z.pool {
		if got := z.m.ShardOf([]byte(k)); got != z.shard(k) {
			t.Fatalf("ShardOf(%.20q) = %d, want %d", k, got, z.shard(k))
		}
	}
	for w := range z.watch {
		z.watch[w] = new(Watch)
		z.watched[w] = map[string]bool{}
	}
	for z.step = 0; len(z.in) > 0 && z.step < fzMaxOps; z.step++ {
		before := z.shape()
		z.do(z.in.byte() % fzNumOps)
		z.noteShape(before)
		z.checkAll()
	}
	z.op = "final"
	z.checkAll()
	z.checkScan(1 + int(z.in.byte()))
	z.checkForEach(false, -1)
	for i := range z.frozen {
		z.readFrozen(i)
	}
	return z.stats
}

func (z *fzState) fatalf(format string, args ...any) {
	z.t.Helper()
	z.t.Fatalf("step %d (%s): %s", z.step, z.op, fmt.Sprintf(format, args...))
}

func (z *fzState) key() string {
	b := int(z.in.byte())
	if b >= 250 {
		b = 250 + int(z.in.byte())%(fzPoolSize-250)
	}
	return z.pool[b]
}

func (z *fzState) live(e Entry) bool { return e.Exp == 0 || e.Exp > z.now }

// exp decodes an expiry: none, near now (often already past), or far.
func (z *fzState) exp() int64 {
	b := z.in.byte()
	switch b % 4 {
	case 0:
		return 0
	case 3:
		return z.now + 1e12
	}
	return max(1, z.now+int64(b>>2)-16)
}

func (z *fzState) intValue() int64 {
	b := z.in.byte()
	switch b % 4 {
	case 0:
		return int64(int8(b))
	case 1:
		var v [8]byte
		for i := range v {
			v[i] = z.in.byte()
		}
		return int64(binary.LittleEndian.Uint64(v[:]))
	case 2:
		return []int64{math.MinInt64, math.MaxInt64, -1, 0}[b>>2%4]
	}
	return z.now + int64(b>>2)
}

// shard returns the shard of pool key k.
func (z *fzState) shard(k string) int { return int(z.hashes[k] & z.m.mask) }

// set and remove change the model.
func (z *fzState) set(k string, e Entry) {
	if _, in := z.model[k]; !in {
		z.count[z.shard(k)]++
	}
	z.model[k] = e
}

func (z *fzState) remove(k string) {
	if _, in := z.model[k]; in {
		z.count[z.shard(k)]--
		delete(z.model, k)
	}
}

// touch models a change to key k: its watchers turn dirty.
func (z *fzState) touch(k string) {
	for w := range z.watch {
		if z.watched[w][k] {
			z.dirty[w] = true
		}
	}
	for i := range z.frozen {
		z.frozen[i].writes = true
	}
}

// removeExpired models lazy expiry of k if the model holds it expired,
// and reports whether it did.
func (z *fzState) removeExpired(k string) bool {
	if e, ok := z.model[k]; ok && !z.live(e) {
		z.remove(k)
		z.expctr++
		z.stats.lazyExpired++
		z.touch(k)
		return true
	}
	return false
}

// put stores e under k by one of three paths: Put, PutChecked, or Lookup
// then Set. On a full shard a new key gets ErrFull from PutChecked and
// makes the others panic, changing nothing.
func (z *fzState) put(k string, e Entry, how byte) {
	kb := []byte(k)
	si := z.shard(k)
	z.m.Lock(si)
	defer z.m.Unlock(si)
	defer z.noteCompaction(&z.m.shards[si].t, z.m.shards[si].t.garbage, len(z.m.shards[si].t.slots))
	if how%3 == 2 {
		got, r, ok := z.m.Lookup(kb, z.now)
		want, in := z.model[k]
		z.removeExpired(k)
		if ok != (in && z.live(want)) || ok && !entryEq(got, want) {
			z.fatalf("Lookup(%.20q) = %+v, %v; model %+v, %v", k, got, ok, want, in)
		}
		_, present := z.model[k]
		if !present && z.count[si] >= z.limit {
			z.expectPanic(func() { z.m.Set(r, e) })
			return
		}
		z.m.Set(r, e)
	} else {
		_, present := z.model[k]
		full := !present && z.count[si] >= z.limit
		switch {
		case how%3 == 1:
			err := z.m.PutChecked(kb, e)
			if full != errors.Is(err, ErrFull) || !full && err != nil {
				z.fatalf("PutChecked(%.20q) into a shard of %d keys (limit %d) = %v", k, z.count[si], z.limit, err)
			}
			if full {
				z.stats.refused++
				return
			}
		case full:
			z.expectPanic(func() { z.m.Put(kb, e) })
			return
		default:
			z.m.Put(kb, e)
		}
	}
	z.set(k, e)
	z.touch(k)
	if len(k) > 1000 || e.Kind == KindBytes && len(e.Str) > bigRecord {
		z.stats.ownRecords++
	}
}

func (z *fzState) expectPanic(f func()) {
	z.t.Helper()
	defer func() {
		z.t.Helper()
		r := recover()
		if r == nil {
			z.fatalf("adding a key to a full shard did not panic")
		}
		if !strings.Contains(fmt.Sprint(r), "Room") {
			z.fatalf("panic %q does not mention Room", r)
		}
		z.stats.panics++
	}()
	f()
}

func (z *fzState) del(k string) {
	kb := []byte(k)
	si := z.shard(k)
	z.m.Lock(si)
	t, garbage, slots := &z.m.shards[si].t, z.m.shards[si].t.garbage, len(z.m.shards[si].t.slots)
	got := z.m.Delete(kb, z.now)
	z.noteCompaction(t, garbage, slots)
	z.m.Unlock(si)
	e, in := z.model[k]
	if want := in && z.live(e); got != want {
		z.fatalf("Delete(%.20q) = %v, want %v", k, got, want)
	}
	if in {
		if !z.removeExpired(k) {
			z.remove(k)
			z.touch(k)
		}
	}
}

func (z *fzState) bytesValue(n int) []byte {
	b := make([]byte, n)
	c := z.in.byte()
	for i := range b {
		b[i] = c + byte(i)
	}
	return b
}

func (z *fzState) do(op byte) {
	switch op {
	case fzPutInt:
		z.op = "put int"
		k, how := z.key(), z.in.byte()
		z.put(k, IntEntry(z.intValue(), z.exp()), how)
	case fzPutGCRA:
		z.op = "put GCRA"
		k, how := z.key(), z.in.byte()
		v := z.now + int64(z.in.byte()) - 64
		z.put(k, IntEntry(max(v, 1), max(v, 1)), how)
	case fzPutBytes:
		z.op = "put bytes"
		k, how := z.key(), z.in.byte()
		b := z.in.byte()
		var v []byte
		if b&1 != 0 {
			v = strconv.AppendInt(nil, z.intValue(), 10) // BytesEntry turns it into an int
		} else {
			v = z.bytesValue(int(b >> 1))
		}
		z.put(k, BytesEntry(v, z.exp()), how)
	case fzPutLong:
		z.op = "put long"
		k, how := z.key(), z.in.byte()
		v := z.bytesValue(bigRecord + 1 + 8*int(z.in.byte()))
		z.put(k, Entry{Kind: KindBytes, Str: v, Exp: z.exp()}, how)
	case fzPutObj:
		z.op = "put object"
		k, how := z.key(), z.in.byte()
		z.put(k, Entry{Kind: Kind(9), Obj: int(z.in.byte()), Exp: z.exp()}, how)
	case fzDelete:
		z.op = "delete"
		z.del(z.key())
	case fzGet:
		z.op = "get"
		k := z.key()
		kb := []byte(k)
		si := z.shard(k)
		z.m.Lock(si)
		got, ok := z.m.Get(kb, z.now)
		z.m.Unlock(si)
		want, in := z.model[k]
		if ok != (in && z.live(want)) || ok && !entryEq(got, want) {
			z.fatalf("Get(%.20q) = %+v, %v; model %+v, %v", k, got, ok, want, in)
		}
		z.removeExpired(k)
	case fzTick:
		z.op = "tick"
		b := z.in.byte()
		if b == 255 {
			z.now += 1e12
		} else {
			z.now += int64(b)
		}
	case fzExpire:
		z.op = "active expiry"
		b := z.in.byte()
		n := 1 + int(b%8)
		var removed int
		if b&0x80 != 0 {
			removed = z.m.ExpireCycle(z.now, n)
		} else {
			budget := int(z.in.byte() % 4)
			removed, _ = z.m.ExpireShards(z.now, n, func() bool {
				budget--
				return budget < 0
			})
		}
		gone := 0
		for k, e := range z.model {
			if z.peek(k) >= 0 {
				continue
			}
			if z.live(e) {
				z.fatalf("active expiry removed live key %.20q (%+v, now %d)", k, e, z.now)
			}
			z.remove(k)
			z.touch(k)
			gone++
		}
		if gone != removed {
			z.fatalf("active expiry reports %d keys removed, %d are gone", removed, gone)
		}
		z.expctr += int64(removed)
		z.stats.activeExpired += removed
	case fzSnapBegin:
		z.op = "begin snapshot"
		for i := range z.m.NumShards() {
			z.m.Lock(i)
		}
		z.m.BeginSnapshotLocked()
		for i := range z.m.NumShards() {
			z.m.Unlock(i)
		}
		z.snap, z.snapActive = maps.Clone(z.model), true
		clear(z.taken)
	case fzSnapTake:
		z.op = "take snapshot shard"
		si := int(z.in.byte()) % z.m.NumShards()
		f := z.m.SnapshotShard(si)
		want := map[string]Entry{}
		if z.snapActive && !z.taken[si] {
			for k, e := range z.snap {
				if z.shard(k) == si {
					want[k] = e
				}
			}
			z.taken[si] = true
		}
		if len(z.frozen) == fzMaxFrozen {
			z.frozen = z.frozen[1:]
		}
		z.frozen = append(z.frozen, fzFrozen{f: f, shard: si, want: want})
		z.readFrozen(len(z.frozen) - 1)
	case fzSnapEnd:
		z.op = "end snapshot"
		z.m.EndSnapshot()
		z.snapActive = false
	case fzFrozenRead:
		z.op = "read frozen"
		if len(z.frozen) > 0 {
			z.readFrozen(int(z.in.byte()) % len(z.frozen))
		}
	case fzFlushShard:
		z.op = "flush shard"
		si := int(z.in.byte()) % z.m.NumShards()
		z.m.Lock(si)
		z.m.FlushLocked(si)
		z.m.Unlock(si)
		for k := range z.model {
			if z.shard(k) == si {
				z.remove(k)
				z.touch(k)
			}
		}
	case fzFlushAll:
		z.op = "flush"
		z.m.Flush()
		for k := range z.model {
			z.touch(k)
		}
		clear(z.model)
		clear(z.count)
	case fzFill:
		z.op = "fill"
		from, how, size := int(z.in.byte()), z.in.byte(), int(z.in.byte())
		for j := range fzPoolSize {
			k := z.pool[(from+j)%fzPoolSize]
			var exp int64
			if how&0x10 != 0 { // expiring soon, all but a few
				exp = z.now + 1 + int64(j%16)
				if j%64 == 0 {
					exp = 0
				}
			}
			if size%8 == 0 {
				z.put(k, IntEntry(int64(j), exp), how)
			} else {
				z.put(k, Entry{Kind: KindBytes, Str: bytes.Repeat([]byte{byte(j)}, size), Exp: exp}, how)
			}
		}
	case fzDelRange:
		z.op = "delete range"
		from, n := int(z.in.byte()), int(z.in.byte())+int(z.in.byte())
		for j := range min(n, fzPoolSize) {
			z.del(z.pool[(from+j)%fzPoolSize])
		}
	case fzOverwrite:
		z.op = "overwrite"
		from, size, rounds := int(z.in.byte()), int(z.in.byte()), 1+int(z.in.byte()%4)
		for r := range rounds {
			for j := range 64 {
				k := z.pool[(from+j)%fzPoolSize]
				z.put(k, Entry{Kind: KindBytes, Str: bytes.Repeat([]byte{byte(r)}, size)}, 1)
			}
		}
	case fzWatch:
		z.op = "watch"
		k, w := z.key(), int(z.in.byte())%fzWatchers
		si := z.shard(k)
		z.m.Lock(si)
		z.m.Watch([]byte(k), z.watch[w])
		z.m.Unlock(si)
		z.watched[w][k] = true
	case fzUnwatch:
		z.op = "unwatch"
		k, w := z.key(), int(z.in.byte())%fzWatchers
		si := z.shard(k)
		z.m.Lock(si)
		z.m.Unwatch([]byte(k), z.watch[w])
		z.m.Unlock(si)
		delete(z.watched[w], k)
	case fzWatchReset:
		z.op = "reset watch"
		w := int(z.in.byte()) % fzWatchers
		z.watch[w].Dirty.Store(false)
		z.dirty[w] = false
	case fzScan:
		z.op = "scan"
		z.checkScan(1 + int(z.in.byte()%64))
	case fzForEach:
		z.op = "foreach"
		b := z.in.byte()
		stop := int(z.in.byte())
		if stop == 0 {
			stop = -1 // all keys
		}
		z.checkForEach(b&1 != 0, stop)
	case fzRandomKey:
		z.op = "random key"
		k, ok := z.m.RandomKey(z.now, false)
		anyLive := false
		for _, e := range z.model {
			anyLive = anyLive || z.live(e)
		}
		if e, in := z.model[k]; ok != anyLive || ok && (!in || !z.live(e)) {
			z.fatalf("RandomKey = %.20q, %v; model has a live key: %v", k, ok, anyLive)
		}
	default:
		panic("unknown op")
	}
}

// peek returns the slot holding k, without lazy expiry, or -1.
func (z *fzState) peek(k string) int {
	kb := []byte(k)
	si := z.shard(k)
	z.m.Lock(si)
	defer z.m.Unlock(si)
	s, tag := z.m.locate(kb)
	return s.t.find(kb, tag)
}

func entryEq(a, b Entry) bool {
	return a.Kind == b.Kind && a.Int == b.Int && a.Exp == b.Exp && bytes.Equal(a.Str, b.Str) && a.Obj == b.Obj
}

// fzShape is what the test notes about each shard's table around a step.
type fzShape struct{ slots int }

func (z *fzState) shape() []fzShape {
	out := make([]fzShape, z.m.NumShards())
	for i := range out {
		z.m.Lock(i)
		t := &z.m.shards[i].t
		out[i] = fzShape{len(t.slots)}
		z.m.Unlock(i)
	}
	return out
}

func (z *fzState) noteShape(before []fzShape) {
	for i, now := range z.shape() {
		b := before[i]
		switch {
		case now.slots > b.slots && b.slots > 0:
			z.stats.grew++
		case now.slots < b.slots && now.slots > 0:
			z.stats.shrank++
		}
	}
}

// noteCompaction counts an arena compaction by one put or delete: garbage
// went down while the slot array stayed. Requires the shard locked.
func (z *fzState) noteCompaction(t *table, garbage, slots int) {
	if t.garbage < garbage && len(t.slots) == slots && slots > 0 {
		z.stats.compacted++
	}
}

// checkAll compares every key of the pool, the counters, each shard's
// invariants and the WATCH flags with the model.
func (z *fzState) checkAll() {
	z.t.Helper()
	perShard := make([]int, z.m.NumShards())
	var expires int64
	pb := fzPoolBytes()
	for j, k := range z.pool {
		h := z.hashes[k]
		si := int(h & z.m.mask)
		want, in := z.model[k]
		z.m.Lock(si)
		s, tag := &z.m.shards[si], tagOf(h)
		i := s.t.find(pb[j], tag)
		var got Entry
		if i >= 0 {
			got = s.t.entry(i)
		}
		z.m.Unlock(si)
		if (i >= 0) != in || in && !entryEq(got, want) {
			z.fatalf("key %.20q: held %v %+v; model %v %+v (now %d)", k, i >= 0, got, in, want, z.now)
		}
		if in {
			perShard[si]++
			if want.Exp != 0 {
				expires++
			}
			// The pool's pairs with a shared tag are at 2, 3; 4, 5; ...
			if j >= 2 && j < 2+2*fzSharedTags && j%2 == 1 {
				if _, other := z.model[z.pool[j-1]]; other {
					z.stats.sharedTags++
				}
			}
		}
	}
	if len(z.model) != sum(perShard) || !slices.Equal(perShard, z.count) {
		z.fatalf("the model holds keys outside the pool, or miscounts them")
	}
	if got := z.m.Len(); got != int64(len(z.model)) {
		z.fatalf("Len = %d, model %d", got, len(z.model))
	}
	if got := z.m.Expires(); got != expires {
		z.fatalf("Expires = %d, model %d", got, expires)
	}
	if got := z.m.ExpiredKeys(); got != z.expctr {
		z.fatalf("ExpiredKeys = %d, model %d", got, z.expctr)
	}
	if got := z.m.MappedBytes(); got != 0 {
		z.fatalf("MappedBytes = %d for small tables", got)
	}
	for si := range z.m.NumShards() {
		z.m.Lock(si)
		s := &z.m.shards[si]
		t := &s.t
		// Count the slots, their expiries, the arena bytes they use and
		// the objects they refer to.
		used, exps, live, objs := 0, int64(0), 0, 0
		for i, sl := range t.slots {
			if sl.meta == 0 {
				continue
			}
			used++
			if t.expAt(i) != 0 {
				exps++
			}
			if sl.meta&flagOwnRec != 0 {
				objs++
			} else {
				live += t.recordLen(i)
			}
			if k := Kind(sl.meta & kindMask); k != KindInt && k != KindBytes {
				objs++
			}
		}
		held := 0
		for _, o := range t.objs {
			if o != nil {
				held++
			}
		}
		freeOK := len(t.freeObj)+held == len(t.objs)
		for _, idx := range t.freeObj {
			freeOK = freeOK && t.objs[idx] == nil
		}
		room := z.m.Room(si)
		z.m.Unlock(si)
		switch {
		case t.n != perShard[si] || used != t.n || s.keys.Load() != int64(t.n):
			z.fatalf("shard %d: n %d, used slots %d, keys %d; model %d", si, t.n, used, s.keys.Load(), perShard[si])
		case s.expires.Load() != exps:
			z.fatalf("shard %d: expires %d, %d slots with an expiry", si, s.expires.Load(), exps)
		case t.n > 0 && overLoad(t.n, len(t.slots)):
			z.fatalf("shard %d: %d keys overload %d slots", si, t.n, len(t.slots))
		case t.garbage != len(t.arena)-live:
			z.fatalf("shard %d: garbage %d, arena %d with %d bytes of live records", si, t.garbage, len(t.arena), live)
		case held != objs || !freeOK:
			z.fatalf("shard %d: %d objects held (%d free of %d), slots refer to %d", si, held, len(t.freeObj), len(t.objs), objs)
		case s.hint.base.Load() != uintptr(unsafe.Pointer(unsafe.SliceData(t.slots))) || s.hint.n.Load() != uint64(len(t.slots)):
			z.fatalf("shard %d: slot hint does not match the slots", si)
		case room != max(0, z.limit-perShard[si]):
			z.fatalf("shard %d: Room = %d with %d keys, limit %d", si, room, perShard[si], z.limit)
		}
	}
	for w := range z.watch {
		if got := z.watch[w].Dirty.Load(); got != z.dirty[w] {
			z.fatalf("watcher %d: Dirty = %v, model %v", w, got, z.dirty[w])
		}
		if z.dirty[w] {
			z.stats.dirtied++
		}
	}
}

func sum(a []int) int {
	n := 0
	for _, x := range a {
		n += x
	}
	return n
}

// liveModel returns the model's live keys.
func (z *fzState) liveModel() map[string]Entry {
	out := map[string]Entry{}
	for k, e := range z.model {
		if z.live(e) {
			out[k] = e
		}
	}
	return out
}

func (z *fzState) checkScan(count int) {
	z.t.Helper()
	want := z.liveModel()
	seen := map[string]bool{}
	var cursor uint64
	for steps := 0; ; steps++ {
		cursor = z.m.Scan(cursor, count, z.now, false, func(k string, e Entry) {
			w, ok := want[k]
			if !ok || !entryEq(e, w) {
				z.fatalf("Scan returned %.20q %+v; model live %v %+v", k, e, ok, w)
			}
			if seen[k] {
				z.fatalf("Scan returned %.20q twice", k)
			}
			seen[k] = true
		})
		if cursor == 0 {
			break
		}
		if steps > fzPoolSize+z.m.NumShards() {
			z.fatalf("Scan with COUNT %d does not end", count)
		}
	}
	if len(seen) != len(want) {
		z.fatalf("Scan returned %d keys, %d are live", len(seen), len(want))
	}
}

// checkForEach iterates the Map, stopping after stop keys if stop > 0.
func (z *fzState) checkForEach(allLocked bool, stop int) {
	z.t.Helper()
	want := z.liveModel()
	seen := map[string]bool{}
	if allLocked {
		for i := range z.m.NumShards() {
			z.m.Lock(i)
		}
	}
	z.m.ForEach(z.now, allLocked, func(k string, e Entry) bool {
		w, ok := want[k]
		if !ok || !entryEq(e, w) || seen[k] {
			z.fatalf("ForEach gave %.20q %+v (again: %v); model live %v %+v", k, e, seen[k], ok, w)
		}
		seen[k] = true
		return len(seen) != stop
	})
	if allLocked {
		for i := range z.m.NumShards() {
			z.m.Unlock(i)
		}
	}
	if n := len(want); stop > 0 && stop < n {
		n = stop
		if len(seen) != n {
			z.fatalf("ForEach told to stop after %d keys gave %d", stop, len(seen))
		}
	} else if len(seen) != n {
		z.fatalf("ForEach gave %d keys, %d are live", len(seen), n)
	}
}

// readFrozen checks that frozen copy i holds the keys its shard held when
// the snapshot began (the live ones, at now: any removed since by expiry
// had expired).
func (z *fzState) readFrozen(i int) {
	z.t.Helper()
	h := z.frozen[i]
	seen := 0
	err := h.f.ForEach(z.now, func(k []byte, e Entry) error {
		w, ok := h.want[string(k)]
		if !ok || !z.live(w) || !entryEq(e, w) {
			return fmt.Errorf("frozen shard %d holds %.20q %+v; snapshot model %v %+v", h.shard, k, e, ok, w)
		}
		seen++
		return nil
	})
	if err != nil {
		z.fatalf("%v", err)
	}
	want := 0
	for _, e := range h.want {
		if z.live(e) {
			want++
		}
	}
	if seen != want {
		z.fatalf("frozen shard %d holds %d live keys, snapshot model %d", h.shard, seen, want)
	}
	if h.writes && seen > 0 {
		z.stats.frozenReads++
	}
}
