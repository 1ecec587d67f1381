package persistence

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/turnstile/turnstile/coll"
	"github.com/turnstile/turnstile/shards"
)

// groupUnits are units of effects as one command, EXEC or script appends
// them, on distinct keys so that a part of a unit shows in the state.
func groupUnits() [][]Effect {
	set := func(key string, v int64) Effect {
		return Effect{Op: OpSet, DB: 0, Key: []byte(key), Entry: shards.IntEntry(v, 0)}
	}
	return [][]Effect{
		{set("a", 1)},
		{set("b", 2), set("c", 3), {Op: OpDel, DB: 0, Key: []byte("a")}},
		{{Op: OpSet, DB: 1, Key: []byte("d"), Entry: shards.Entry{Kind: shards.KindBytes, Str: []byte("x")}}},
		{{Op: OpDel, DB: 0, Key: []byte("b")}, set("e", 5)},
		{set("f", 6), set("g", 7), set("h", 8)},
	}
}

// writeUnits appends each unit with one AppendAll, closes the log, and
// returns the file system and the incremental file's name.
func writeUnits(t testing.TB, units [][]Effect) (*crashFS, string) {
	t.Helper()
	l, fs := openMem(t, FsyncAlways)
	var off int64
	for _, u := range units {
		off = l.AppendAll(u)
	}
	if err := l.Sync(off); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return fs, testDir + "/" + testName + ".1.incr"
}

// unitEnds returns the offsets at which the units of a data file end: a
// single record, or a GROUP record and the records it counts.
func unitEnds(t testing.TB, b []byte) []int {
	t.Helper()
	var ends []int
	off := headerLen
	for off < len(b) {
		var e Effect
		n, m, err := decodeRecord(b[off:], &e)
		if err != nil {
			t.Fatalf("record at %d: %v", off, err)
		}
		start := off
		off += n
		if m.kind == recGroup {
			for range m.count {
				n, inner, err := decodeRecord(b[off:], &e)
				if err != nil || inner.kind != recEffect {
					t.Fatalf("record in the group at %d: %+v %v", off, inner, err)
				}
				off += n
			}
			if off-start-len(appendGroupRecord(nil, m.count, m.length)) != int(m.length) {
				t.Fatalf("group at %d: length %d, records take %d", start, m.length, off-start)
			}
		}
		ends = append(ends, off)
	}
	return ends
}

// TestTornGroupEveryOffset cuts a log of single effects and groups at every
// byte offset (and fills the rest with zeros, as a crash that extended the
// file may): each unit loads whole or not at all, the file is cut back to
// the end of the last whole unit, and Check and Fix agree.
func TestTornGroupEveryOffset(t *testing.T) {
	units := groupUnits()
	fs, incr := writeUnits(t, units)
	full := fs.get(incr)
	ends := unitEnds(t, full)
	if len(ends) != len(units) {
		t.Fatalf("%d units in the file, want %d", len(ends), len(units))
	}
	for cut := 0; cut <= len(full); cut++ {
		for _, zeros := range []int{0, 1 + cut%13, 300 + cut%700} {
			tornAt(t, fs, incr, full, ends, units, cut, zeros)
		}
	}

	// The last unit, a group of 3, in plain words: cut anywhere inside it,
	// its 3 keys are all there or none is.
	groupStart := ends[len(ends)-2]
	for cut := groupStart; cut <= len(full); cut++ {
		c := fs.clone()
		c.set(incr, bytes.Clone(full[:cut]))
		s, info, l, err := loadState(t, c, FsyncAlways)
		l.Close()
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		present := 0
		for _, k := range []string{"f", "g", "h"} {
			if _, ok := s[dbKey{0, k}]; ok {
				present++
			}
		}
		if want := map[bool]int{true: 3, false: 0}[cut == len(full)]; present != want {
			t.Fatalf("cut %d of %d: %d of the group's 3 keys loaded, want %d (%+v)", cut, len(full), present, want, info)
		}
		if cut > groupStart && cut < len(full) && (!info.TornTail || info.TornOffset != int64(groupStart)) {
			t.Fatalf("cut %d: %+v, want a torn tail at %d", cut, info, groupStart)
		}
	}
}

// groupFile returns an incremental file holding the given records after
// a first, single effect.
func groupFile(recs ...[]byte) []byte {
	b := appendHeader(nil, FileIncr)
	first := Effect{Op: OpSet, DB: 0, Key: []byte("first"), Entry: shards.IntEntry(1, 0)}
	b = appendRecord(b, &first)
	for _, r := range recs {
		b = append(b, r...)
	}
	return b
}

// TestGroupDamage: a group whose records are whole and intact but do not
// match what its GROUP record says, or hold what a group may not, is damage
// (the log refuses to load), as is a GROUP record in a dump. Nothing of
// such a group is applied.
func TestGroupDamage(t *testing.T) {
	rec := func(e Effect) []byte { return appendRecord(nil, &e) }
	del := rec(Effect{Op: OpDel, DB: 0, Key: []byte("x")})
	set := rec(Effect{Op: OpSet, DB: 0, Key: []byte("y"), Entry: shards.IntEntry(2, 0)})
	grp := func(count, length int) []byte { return appendGroupRecord(nil, uint64(count), uint64(length)) }
	payload := func(p ...byte) []byte { // a record around a hand-made payload
		b := append(make([]byte, recHeaderLen), p...)
		return sealRecord(b, 0)
	}
	tail := rec(Effect{Op: OpSet, DB: 0, Key: []byte("tail"), Entry: shards.IntEntry(3, 0)})
	cases := []struct {
		name string
		recs [][]byte
		want string
	}{
		{"count larger than the records", [][]byte{grp(3, len(del)+len(set)+len(tail)-1), del, set, tail}, fmt.Sprintf("record 3 of the group of 3, at offset %d: record runs past the end of the group", len(groupFile(grp(3, 0), del, set)))},
		{"count smaller than the records", [][]byte{grp(2, len(del)+len(set)+len(del)), del, set, del, tail}, "end 13 bytes before its length"},
		{"length cuts a record", [][]byte{grp(2, len(del)+len(set)-1), del, set, tail}, "runs past the end of the group"},
		{"group in a group", [][]byte{grp(2, 2*len(del)+len(grp(2, 2*len(del)))), grp(2, 2*len(del)), del, del, tail}, "op 254 inside a group"},
		{"end record in a group", [][]byte{grp(2, len(del)+len(appendEndRecord(nil, 0))), del, appendEndRecord(nil, 0), tail}, "op 255 inside a group"},
		{"bad payload in a group", [][]byte{grp(2, len(del)+len(payload(opcodeDel, 0, 5))), del, payload(opcodeDel, 0, 5), tail}, "bad key length"},
		{"group of one", [][]byte{payload(opcodeGroup, 1, byte(len(del))), del, tail}, "bad record count"},
		{"group too short for its count", [][]byte{payload(opcodeGroup, 3, 29), del, del, tail}, "bad length"},
		{"group with trailing bytes", [][]byte{payload(opcodeGroup, 2, byte(2*len(del)), 0), del, del, tail}, "trailing bytes"},
		{"flipped bit in the first record", [][]byte{grp(2, len(del)+len(set)), flip(del, 8*10), set, tail}, "record 1 of the group of 2"},
		{"zeroed record followed by data", [][]byte{grp(2, len(del)+len(set)), make([]byte, len(del)), set, tail}, "empty record"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs, incr := writeUnits(t, [][]Effect{{{Op: OpSet, DB: 0, Key: []byte("first"), Entry: shards.IntEntry(1, 0)}}})
			file := groupFile(c.recs...)
			fs.set(incr, file)
			groupAt := int64(len(groupFile()))
			var applied []string
			l, err := OpenLog(testCfg(fs, FsyncNo))
			if err != nil {
				t.Fatal(err)
			}
			_, err = l.Load(func(e Effect) error { applied = append(applied, string(e.Key)); return nil })
			l.Close()
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Offset != groupAt || !strings.Contains(ce.Reason, c.want) {
				t.Fatalf("load: %v, want damage at %d (%q)", err, groupAt, c.want)
			}
			if !slices.Equal(applied, []string{"first"}) {
				t.Fatalf("applied %q", applied)
			}
			rep, err := Check(fs, incr)
			if err != nil || rep.Problem == nil || rep.Torn || rep.ValidLen != groupAt || rep.Records != 1 {
				t.Fatalf("check: %v %+v", err, rep)
			}
			if !bytes.Equal(fs.get(incr), file) {
				t.Fatal("the damaged file was changed")
			}
			rep, err = FixForce(fs, incr)
			if err != nil || !rep.Fixed || int64(len(fs.get(incr))) != groupAt {
				t.Fatalf("fix --force: %v %+v, %d bytes", err, rep, len(fs.get(incr)))
			}
		})
	}

	// A GROUP record in a dump.
	fs := newCrashFS(1)
	fs.MkdirAll("/data", 0o755)
	b := appendHeader(nil, FileDump)
	b = append(b, grp(2, 2*len(set))...)
	b = append(b, set...)
	b = append(b, set...)
	b = appendEndRecord(b, 2)
	fs.set(snapPath, b)
	_, err := LoadSnapshot(fs, snapPath, func(int, []byte, shards.Entry) error { return nil })
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Offset != headerLen || !strings.Contains(ce.Reason, "op 254 in a dump") {
		t.Fatalf("group in a dump: %v", err)
	}
}

func flip(b []byte, bit int) []byte {
	b = bytes.Clone(b)
	b[bit/8] ^= 1 << (bit % 8)
	return b
}

// TestGroupBitFlips flips every bit of a log of single effects and groups:
// every flip is detected, except in the last unit, where it may be taken
// for a torn write, and then that whole unit (a group of 3) is dropped.
func TestGroupBitFlips(t *testing.T) {
	units := groupUnits()
	fs, incr := writeUnits(t, units)
	orig := fs.get(incr)
	ends := unitEnds(t, orig)
	lastStart := ends[len(ends)-2]
	beforeLast := stateOf(slices.Concat(units[:len(units)-1]...))
	detected, torn := 0, 0
	for bit := 0; bit < len(orig)*8; bit++ {
		c := fs.clone()
		c.set(incr, flip(orig, bit))
		s, info, l, err := loadState(t, c, FsyncAlways)
		l.Close()
		switch {
		case err != nil:
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.File != incr {
				t.Fatalf("bit %d: %v", bit, err)
			}
			detected++
		case info.TornTail && bit/8 >= lastStart:
			if info.TornOffset != int64(lastStart) || !s.equal(beforeLast) {
				t.Fatalf("bit %d: torn at %d, state %v", bit, info.TornOffset, s)
			}
			torn++
		default:
			t.Fatalf("bit %d (byte %d of %d): not detected (%+v)", bit, bit/8, len(orig), info)
		}
	}
	if torn == 0 || detected == 0 {
		t.Fatalf("%d detected, %d torn", detected, torn)
	}
}

// TestGroupCollectionEffects: a unit holding collection effects (the DEL a
// writer logs before creating a key, FIELD ops, an EXPIRE) round-trips as
// a group, arguments included.
func TestGroupCollectionEffects(t *testing.T) {
	unit := []Effect{
		{Op: OpDel, DB: 2, Key: []byte("s")},
		{Op: OpField, DB: 2, Key: []byte("s"), Field: coll.OpSAdd, Args: [][]byte{[]byte("m1"), []byte("m2")}},
		{Op: OpField, DB: 2, Key: []byte("s"), Field: coll.OpSRem, Args: [][]byte{[]byte("m1")}},
		{Op: OpExpire, DB: 2, Key: []byte("s"), Entry: shards.Entry{Exp: 99}},
	}
	fs, _ := writeUnits(t, [][]Effect{unit, unit[:2]})
	l, err := OpenLog(testCfg(fs, FsyncNo))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var got []string
	info, err := l.Load(func(e Effect) error {
		got = append(got, fmt.Sprintf("%d %d %s %s %q %d", e.Op, e.DB, e.Key, e.Field, e.Args, e.Entry.Exp))
		return nil
	})
	var want []string
	for _, e := range slices.Concat(unit, unit[:2]) {
		want = append(want, fmt.Sprintf("%d %d %s %s %q %d", e.Op, e.DB, e.Key, e.Field, e.Args, e.Entry.Exp))
	}
	if err != nil || info.Records != 6 || !slices.Equal(got, want) {
		t.Fatalf("%v %+v:\n%q\nwant\n%q", err, info, got, want)
	}
}

// TestAppendAllZeroAllocs: appending a unit of several effects (a GROUP
// record is put in front of their records) allocates nothing once the
// buffers have grown.
func TestAppendAllZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	l, _ := openMem(t, FsyncNo)
	unit := []Effect{
		{Op: OpSet, DB: 3, Key: []byte("user:12345"), Entry: shards.IntEntry(1_700_000_000_000_000_000, 1_700_000_000_000_000_000)},
		{Op: OpDel, DB: 3, Key: []byte("user:12346")},
		{Op: OpSet, DB: 3, Key: []byte("user:12347"), Entry: shards.Entry{Kind: shards.KindBytes, Str: []byte("v")}},
	}
	var off int64
	for range 1000 { // grow the buffers
		off = l.AppendAll(unit)
	}
	l.Sync(off)
	allocs := testing.AllocsPerRun(1000, func() {
		for range 100 {
			off = l.AppendAll(unit)
		}
		l.Sync(off)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per 100 AppendAlls + Sync", allocs)
	}
}

// goldenLogFS returns a file system holding the log in testdata/<dir>.
func goldenLogFS(t *testing.T, dir string) *crashFS {
	t.Helper()
	fs := newCrashFS(1)
	fs.MkdirAll(testDir, 0o755)
	for _, name := range []string{testName + ".manifest", testName + ".1.base", testName + ".1.incr"} {
		b, err := os.ReadFile(filepath.Join("testdata", dir, name))
		if err != nil {
			t.Fatal(err)
		}
		fs.set(filepath.Join(testDir, name), b)
	}
	return fs
}

// TestLoadLeavesOldIncr: when the last incremental file was written by an
// older format version, Load starts a new one for this build's records
// (groups among them), leaving the old file as it was; the log then loads
// everything, and the next Load appends to the new file.
func TestLoadLeavesOldIncr(t *testing.T) {
	for _, dir := range []string{"golden-log", "golden-log-v2"} {
		t.Run(dir, func(t *testing.T) {
			fs := goldenLogFS(t, dir)
			oldIncr := testDir + "/" + testName + ".1.incr"
			newIncr := testDir + "/" + testName + ".2.incr"
			orig := fs.get(oldIncr)
			before, _, l, err := loadState(t, fs, FsyncAlways)
			if err != nil {
				t.Fatal(err)
			}
			unit := groupUnits()[4]
			if err := l.Sync(l.AppendAll(unit)); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(fs.get(oldIncr), orig) {
				t.Fatal("the old incremental file changed")
			}
			b := fs.get(newIncr)
			if want := append(appendHeader(nil, FileIncr), encodeUnit(unit)...); !bytes.Equal(b, want) {
				t.Fatalf("new incremental file:\n%x, want\n%x", b, want)
			}
			m, _, reason := parseManifest(fs.get(testDir+"/"+testName+".manifest"), testName)
			if reason != "" || !slices.Equal(m.incrs, []string{testName + ".1.incr", testName + ".2.incr"}) {
				t.Fatalf("manifest %+v %s", m, reason)
			}

			// Everything loads; the next run appends to the new file.
			want := before.clone()
			for _, e := range unit {
				want.apply(e)
			}
			s, _, l, err := loadState(t, fs, FsyncAlways)
			if err != nil || !s.equal(want) {
				t.Fatalf("reload: %v\n%v\nwant %v", err, s, want)
			}
			if err := l.Sync(l.Append(unit[0])); err != nil {
				t.Fatal(err)
			}
			l.Close()
			if got := len(fs.get(newIncr)); got != len(b)+len(encodeUnit(unit[:1])) {
				t.Fatalf("second run: new file is %d bytes, want %d appended to it", got, len(encodeUnit(unit[:1])))
			}
			checkNoOrphans(t, fs)
		})
	}
}

// encodeUnit is what AppendAll writes for unit.
func encodeUnit(unit []Effect) []byte {
	var b []byte
	for i := range unit {
		b = appendRecord(b, &unit[i])
	}
	if len(unit) > 1 {
		b = insertGroupRecord(b, 0, len(unit))
	}
	return b
}

// TestLoadLeavesOldIncrCrash: a crash at any file system operation of the
// Load that starts a new incremental file leaves a log that loads the same
// keys, with no stray file.
func TestLoadLeavesOldIncrCrash(t *testing.T) {
	want, _, l, err := loadState(t, goldenLogFS(t, "golden-log-v2"), FsyncNo)
	l.Close()
	if err != nil {
		t.Fatal(err)
	}
	steps := 0
	for at := int64(1); at < 1000; at++ {
		steps++
		fs := goldenLogFS(t, "golden-log-v2")
		fs.mu.Lock()
		fs.partial = true
		fs.crashAt = fs.ops + at
		fs.mu.Unlock()
		_, _, l, err := loadState(t, fs, FsyncNo)
		l.Close()
		crashed := fs.isCrashed()
		if err != nil && !crashed {
			t.Fatalf("op %d: %v", at, err)
		}
		r := fs.recovered(uint64(at))
		s, _, l, err := loadState(t, r, FsyncNo)
		l.Close()
		if err != nil || !s.equal(want) {
			t.Fatalf("crash at op %d: %v\n%v\nwant %v", at, err, s, want)
		}
		checkNoOrphans(t, r)
		if !crashed {
			break
		}
	}
	if steps < 6 {
		t.Fatalf("only %d crash points", steps)
	}
	t.Logf("%d crash points", steps)
}
