package persistence

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/turnstile/turnstile/shards"
)

const snapPath = "/data/dump.tsdb"

// snapState is a small keyspace of every kind of entry; big adds a key and
// a value of 64 KiB and 1 MiB.
func snapState(big bool) state {
	s := state{}
	for _, e := range sampleEffects() {
		if e.Op == OpSet && (big || len(e.Key)+len(e.Entry.Str) < 1000) {
			s.apply(e)
		}
	}
	for i := range 50 {
		s.apply(Effect{Op: OpSet, DB: i % 4, Key: []byte(fmt.Sprintf("gcra:%d", i)), Entry: shards.IntEntry(1_700_000_000_000_000_000+int64(i), 1_700_000_000_000_000_000+int64(i))})
	}
	return s
}

func loadSnap(fs FS, path string) (state, LoadInfo, error) {
	s := state{}
	info, err := LoadSnapshot(fs, path, func(db int, key []byte, e shards.Entry) error {
		s.apply(Effect{Op: OpSet, DB: db, Key: key, Entry: e})
		return nil
	})
	return s, info, err
}

func TestSnapshotRoundTrip(t *testing.T) {
	fs := newCrashFS(1)
	fs.MkdirAll("/data", 0o755)
	want := snapState(true)
	if err := WriteSnapshot(fs, snapPath, want.dump()); err != nil {
		t.Fatal(err)
	}
	if fs.get(snapPath+".tmp") != nil {
		t.Fatal("temporary file left")
	}
	// Durable at once: survives a crash right after.
	fs = fs.recovered(2)
	got, info, err := loadSnap(fs, snapPath)
	if err != nil || !got.equal(want) || info.Records != int64(len(want)) || info.Bytes != int64(len(fs.get(snapPath))) {
		t.Fatalf("%v %+v", err, info)
	}
	// An empty snapshot.
	if err := WriteSnapshot(fs, snapPath, nil); err != nil {
		t.Fatal(err)
	}
	if got, info, err := loadSnap(fs, snapPath); err != nil || len(got) != 0 || info.Records != 0 {
		t.Fatalf("empty: %v %+v", err, info)
	}
}

func TestSnapshotOnRealFS(t *testing.T) {
	p := filepath.Join(t.TempDir(), "dump.tsdb")
	want := snapState(false)
	if err := WriteSnapshot(nil, p, want.dump()); err != nil {
		t.Fatal(err)
	}
	if got, _, err := loadSnap(nil, p); err != nil || !got.equal(want) {
		t.Fatal(err)
	}
}

func TestSnapshotMissing(t *testing.T) {
	fs := newCrashFS(1)
	info, err := LoadSnapshot(fs, "/nope/dump.tsdb", func(int, []byte, shards.Entry) error { return nil })
	if !errors.Is(err, os.ErrNotExist) || info != (LoadInfo{}) {
		t.Fatalf("%+v %v", info, err)
	}
}

func TestSnapshotDamage(t *testing.T) {
	fs := newCrashFS(1)
	fs.MkdirAll("/data", 0o755)
	want := snapState(false)
	if err := WriteSnapshot(fs, snapPath, want.dump()); err != nil {
		t.Fatal(err)
	}
	full := fs.get(snapPath)
	check := func(what string, b []byte) {
		t.Helper()
		checkCorruptSnapshot(t, what, b)
	}
	// Cut short anywhere, including at record boundaries: the end record
	// is missing.
	for cut := 0; cut < len(full); cut++ {
		check(fmt.Sprintf("cut at %d", cut), full[:cut])
	}
	check("trailing byte", append(bytes.Clone(full), 0))
	for bit := 0; bit < len(full)*8; bit++ {
		b := bytes.Clone(full)
		b[bit/8] ^= 1 << (bit % 8)
		check(fmt.Sprintf("bit %d", bit), b)
	}
	// An incremental log file is not a snapshot.
	lfs, incr := writeLog(t, smallEffects(3))
	c := newCrashFS(1)
	c.set(snapPath, lfs.get(incr))
	var ce *CorruptError
	if _, _, err := loadSnap(c, snapPath); !errors.As(err, &ce) {
		t.Fatalf("incr file loaded as a snapshot: %v", err)
	}
}

func checkCorruptSnapshot(t *testing.T, what string, b []byte) {
	t.Helper()
	c := newCrashFS(1)
	c.set(snapPath, b)
	_, _, err := loadSnap(c, snapPath)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.File != snapPath {
		t.Fatalf("%s: %v", what, err)
	}
	if rep, err := Check(c, snapPath); err != nil || rep.OK() {
		t.Fatalf("%s: Check: %v %v", what, rep.String(), err)
	}
}

func TestSnapshotDumpError(t *testing.T) {
	fs := newCrashFS(1)
	fs.MkdirAll("/data", 0o755)
	old := snapState(false)
	if err := WriteSnapshot(fs, snapPath, old.dump()); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := WriteSnapshot(fs, snapPath, func(emit EmitFunc) error {
		emit(0, []byte("a"), shards.IntEntry(1, 0))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	err = WriteSnapshot(fs, snapPath, func(emit EmitFunc) error {
		return emit(0, []byte("a"), shards.Entry{Kind: 9})
	})
	if err == nil {
		t.Fatal("unknown kind dumped")
	}
	if fs.get(snapPath+".tmp") != nil {
		t.Fatal("temporary file left")
	}
	if got, _, err := loadSnap(fs, snapPath); err != nil || !got.equal(old) {
		t.Fatal("old snapshot damaged", err)
	}
}

// TestSnapshotCrashAtEveryStep: a crash at any file system operation of
// WriteSnapshot leaves the old snapshot or the new one, whole.
func TestSnapshotCrashAtEveryStep(t *testing.T) {
	oldS := snapState(false)
	newS := stateOf(smallEffects(100))
	for _, first := range []bool{true, false} {
		steps := 0
		for at := int64(1); ; at++ {
			steps++
			fs := newCrashFS(uint64(at))
			fs.MkdirAll("/data", 0o755)
			if !first {
				if err := WriteSnapshot(fs, snapPath, oldS.dump()); err != nil {
					t.Fatal(err)
				}
			}
			fs.mu.Lock()
			fs.partial = true
			fs.crashAt = fs.ops + at
			fs.mu.Unlock()
			err := WriteSnapshot(fs, snapPath, newS.dump())
			crashed := fs.isCrashed()
			r := fs.recovered(uint64(at))
			got, _, lerr := loadSnap(r, snapPath)
			switch {
			case err == nil && !crashed:
				if lerr != nil || !got.equal(newS) {
					t.Fatalf("completed write did not survive: %v", lerr)
				}
			case first && errors.Is(lerr, os.ErrNotExist):
			case lerr != nil:
				t.Fatalf("crash at op %d: %v", at, lerr)
			case !got.equal(newS) && (first || !got.equal(oldS)):
				t.Fatalf("crash at op %d: a mix of snapshots", at)
			}
			if !crashed {
				break
			}
		}
		if steps < 6 {
			t.Fatalf("only %d crash points", steps)
		}
		t.Logf("first=%v: %d crash points", first, steps)
	}
}
