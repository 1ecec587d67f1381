package persistence

import (
	"bytes"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/turnstile/turnstile/shards"
)

const testDir = "/data"
const testName = "appendonly.aof"

func testCfg(fs FS, policy FsyncPolicy) LogConfig {
	return LogConfig{Dir: testDir, Name: testName, Fsync: policy, FS: fs}
}

// openMem opens and loads a log on a fresh in-memory file system.
func openMem(t testing.TB, policy FsyncPolicy) (*Log, *crashFS) {
	t.Helper()
	fs := newCrashFS(1)
	l, err := OpenLog(testCfg(fs, policy))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Load(func(Effect) error { return nil }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, fs
}

type dbKey struct {
	db  int
	key string
}

// state is a keyspace as a map, for comparisons.
type state map[dbKey]shards.Entry

func (s state) apply(e Effect) {
	switch e.Op {
	case OpSet:
		ent := e.Entry
		ent.Str = bytes.Clone(ent.Str)
		if ent.Kind == shards.KindBytes && ent.Str == nil {
			ent.Str = []byte{}
		}
		s[dbKey{e.DB, string(e.Key)}] = ent
	case OpDel:
		delete(s, dbKey{e.DB, string(e.Key)})
	case OpFlushDB:
		for k := range s {
			if k.db == e.DB {
				delete(s, k)
			}
		}
	case OpFlushAll:
		clear(s)
	}
}

func (s state) clone() state {
	c := make(state, len(s))
	for k, v := range s {
		c[k] = v
	}
	return c
}

// db returns the part of s in database db.
func (s state) db(db int) state {
	c := state{}
	for k, v := range s {
		if k.db == db {
			c[k] = v
		}
	}
	return c
}

func (s state) equal(o state) bool {
	if len(s) != len(o) {
		return false
	}
	for k, v := range s {
		w, ok := o[k]
		if !ok || !entriesEqual(v, w) {
			return false
		}
	}
	return true
}

func (s state) String() string {
	var keys []dbKey
	for k := range s {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].db != keys[j].db {
			return keys[i].db < keys[j].db
		}
		return keys[i].key < keys[j].key
	})
	var b bytes.Buffer
	for _, k := range keys {
		v := s[k]
		fmt.Fprintf(&b, "%d/%q=", k.db, k.key)
		if v.Kind == shards.KindInt {
			fmt.Fprintf(&b, "%d", v.Int)
		} else {
			fmt.Fprintf(&b, "%q", v.Str)
		}
		fmt.Fprintf(&b, "@%d ", v.Exp)
	}
	return b.String()
}

// dumpOf returns a DumpFunc emitting s.
func (s state) dump() DumpFunc {
	return func(emit EmitFunc) error {
		for k, v := range s {
			if err := emit(k.db, []byte(k.key), v); err != nil {
				return err
			}
		}
		return nil
	}
}

// frozen returns a FreezeFunc that calls at at once and returns d (for
// rewrites with no concurrent appends).
func frozen(d DumpFunc) FreezeFunc {
	return func(at func()) DumpFunc {
		at()
		return d
	}
}

// freeze returns a FreezeFunc whose dump emits s (for rewrites with no
// concurrent appends).
func (s state) freeze() FreezeFunc {
	return frozen(s.dump())
}

// loadState opens the log on fs and loads it into a state.
func loadState(t testing.TB, fs FS, policy FsyncPolicy) (state, LoadInfo, *Log, error) {
	t.Helper()
	l, err := OpenLog(testCfg(fs, policy))
	if err != nil {
		t.Fatal(err)
	}
	s := state{}
	info, err := l.Load(func(e Effect) error { s.apply(e); return nil })
	return s, info, l, err
}

// keyspace is a small sharded keyspace with shard locks, standing in for
// the server's: writers append their effect under the key's shard lock, and
// dump reads each shard under its lock.
type keyspace struct {
	shards [8]struct {
		mu sync.Mutex
		m  state
	}
}

func newKeyspace() *keyspace {
	k := &keyspace{}
	for i := range k.shards {
		k.shards[i].m = state{}
	}
	return k
}

func shardOf(key []byte) int {
	h := uint32(2166136261)
	for _, c := range key {
		h = (h ^ uint32(c)) * 16777619
	}
	return int(h % 8)
}

// write applies e to the keyspace and appends it to l, under the shard
// lock(s), and returns the log offset.
func (k *keyspace) write(l *Log, e Effect) int64 {
	if e.Op == OpSet || e.Op == OpDel {
		sh := &k.shards[shardOf(e.Key)]
		sh.mu.Lock()
		defer sh.mu.Unlock()
		sh.m.apply(e)
		return l.Append(e)
	}
	for i := range k.shards {
		k.shards[i].mu.Lock()
	}
	for i := range k.shards {
		k.shards[i].m.apply(e)
	}
	off := l.Append(e)
	for i := range k.shards {
		k.shards[i].mu.Unlock()
	}
	return off
}

// writeAll applies the effects of one unit (an EXEC) to the keyspace and
// appends them with one AppendAll, holding every shard lock, and returns
// the log offset.
func (k *keyspace) writeAll(l *Log, effs []Effect) int64 {
	for i := range k.shards {
		k.shards[i].mu.Lock()
	}
	for _, e := range effs {
		for i := range k.shards {
			if e.Op != OpSet && e.Op != OpDel || shardOf(e.Key) == i {
				k.shards[i].m.apply(e)
			}
		}
	}
	off := l.AppendAll(effs)
	for i := range k.shards {
		k.shards[i].mu.Unlock()
	}
	return off
}

// freeze is the keyspace's FreezeFunc: it copies the keyspace holding
// every shard lock (so no write can append meanwhile), calls at, and
// returns the copy's dump.
func (k *keyspace) freeze(at func()) DumpFunc {
	for i := range k.shards {
		k.shards[i].mu.Lock()
	}
	s := state{}
	for i := range k.shards {
		for key, v := range k.shards[i].m {
			s[key] = v
		}
	}
	at()
	for i := range k.shards {
		k.shards[i].mu.Unlock()
	}
	return s.dump()
}

func (k *keyspace) state() state {
	s := state{}
	for i := range k.shards {
		sh := &k.shards[i]
		sh.mu.Lock()
		for key, v := range sh.m {
			s[key] = v
		}
		sh.mu.Unlock()
	}
	return s
}

// writeLog writes effs through a log on a fresh in-memory file system,
// closes it, and returns the file system and the incremental file's name.
func writeLog(t testing.TB, effs []Effect) (*crashFS, string) {
	t.Helper()
	l, fs := openMem(t, FsyncAlways)
	var off int64
	for _, e := range effs {
		off = l.Append(e)
	}
	if err := l.Sync(off); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return fs, testDir + "/" + testName + ".1.incr"
}

// recordEnds returns the offsets at which the records of a data file end.
func recordEnds(t testing.TB, b []byte) []int {
	t.Helper()
	var ends []int
	off := headerLen
	for off < len(b) {
		var e Effect
		n, _, err := decodeRecord(b[off:], &e)
		if err != nil {
			t.Fatalf("record at %d: %v", off, err)
		}
		off += n
		ends = append(ends, off)
	}
	return ends
}

func smallEffects(n int) []Effect {
	var effs []Effect
	for i := range n {
		key := []byte(fmt.Sprintf("key-%d", i%7))
		switch i % 5 {
		case 0, 1:
			effs = append(effs, Effect{Op: OpSet, DB: i % 3, Key: key, Entry: shards.IntEntry(int64(i*1000003), int64(i)*1e9)})
		case 2:
			effs = append(effs, Effect{Op: OpSet, DB: i % 3, Key: key, Entry: shards.Entry{Kind: shards.KindBytes, Str: []byte(fmt.Sprintf("v%d", i))}})
		case 3:
			effs = append(effs, Effect{Op: OpDel, DB: i % 3, Key: key})
		case 4:
			if i%10 == 9 {
				effs = append(effs, Effect{Op: OpFlushDB, DB: 1})
			} else {
				effs = append(effs, Effect{Op: OpSet, DB: 0, Key: key, Entry: shards.IntEntry(-int64(i), 0)})
			}
		}
	}
	return effs
}

func stateOf(effs []Effect) state {
	s := state{}
	for _, e := range effs {
		s.apply(e)
	}
	return s
}
