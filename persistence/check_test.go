package persistence

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
)

func TestCheckManifestAndFix(t *testing.T) {
	effs := smallEffects(20)
	fs, incr := writeLog(t, effs)
	mpath := testDir + "/" + testName + ".manifest"
	rep, err := Check(fs, mpath)
	if err != nil || !rep.OK() || rep.Type != FileManifest || len(rep.Files) != 2 || rep.Files[1].Records != 20 {
		t.Fatalf("%v\n%s", err, rep.String())
	}
	full := fs.get(incr)
	ends := recordEnds(t, full)

	// Torn tail in the last incremental file: Fix cuts it, as Load would.
	fs.set(incr, full[:len(full)-5])
	rep, _ = Check(fs, mpath)
	if rep.OK() || !rep.Torn || rep.Files[1].ValidLen != int64(ends[18]) {
		t.Fatalf("torn:\n%s", rep.String())
	}
	if !strings.Contains(rep.String(), "torn tail at offset") {
		t.Fatal(rep.String())
	}
	rep, err = Fix(fs, mpath)
	if err != nil || !rep.Files[1].Fixed || !rep.Repaired() || len(fs.get(incr)) != ends[18] {
		t.Fatalf("fix: %v\n%s", err, rep.String())
	}
	if rep, _ := Check(fs, mpath); !rep.OK() {
		t.Fatal(rep.String())
	}

	// Damage in the middle: Fix refuses, FixForce cuts at the bad record.
	b := bytes.Clone(full[:ends[18]])
	b[ends[4]+12] ^= 0x10
	fs.set(incr, b)
	rep, _ = Fix(fs, mpath)
	if rep.Torn || rep.Problem == nil || rep.Problem.Offset != int64(ends[4]) || rep.Files[1].Fixed || rep.Repaired() || len(fs.get(incr)) != len(b) {
		t.Fatalf("fix of mid-file damage:\n%s", rep.String())
	}
	if !strings.Contains(rep.String(), "CORRUPT at offset") {
		t.Fatal(rep.String())
	}
	rep, err = FixForce(fs, mpath)
	if err != nil || !rep.Files[1].Fixed || !rep.Repaired() || len(fs.get(incr)) != ends[4] {
		t.Fatalf("force: %v\n%s", err, rep.String())
	}
	s, _, l, err := loadState(t, fs, FsyncAlways)
	l.Close()
	if err != nil || !s.equal(stateOf(effs[:5])) {
		t.Fatalf("after force: %v", err)
	}
}

func TestCheckDataFiles(t *testing.T) {
	effs := smallEffects(20)
	fs, incr := writeLog(t, effs)
	full := fs.get(incr)
	rep, err := Check(fs, incr)
	if err != nil || !rep.OK() || rep.Type != FileIncr || rep.Records != 20 || rep.ValidLen != int64(len(full)) {
		t.Fatalf("%v %+v", err, rep)
	}
	// A damaged header is not repairable.
	b := bytes.Clone(full)
	b[3] ^= 1
	fs.set(incr, b)
	if rep, err := FixForce(fs, incr); err == nil || rep.Fixed {
		t.Fatalf("header damage fixed: %+v", rep)
	}
	// Missing file.
	if _, err := Check(fs, "/data/none"); !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}

	// A dump cut short: Fix leaves it (a dump is never partially loaded),
	// FixForce ends it after its last whole key.
	fs.MkdirAll("/data", 0o755)
	want := snapState(false)
	if err := WriteSnapshot(fs, snapPath, want.dump()); err != nil {
		t.Fatal(err)
	}
	snap := fs.get(snapPath)
	fs.set(snapPath, snap[:len(snap)-20])
	rep, _ = Fix(fs, snapPath)
	if rep.Fixed || rep.Type != FileDump || !rep.Torn {
		t.Fatalf("dump fix: %+v", rep)
	}
	rep, err = FixForce(fs, snapPath)
	if err != nil || !rep.Fixed {
		t.Fatalf("dump force: %v %+v", err, rep)
	}
	got, info, err := loadSnap(fs, snapPath)
	if err != nil || info.Records != rep.Records || int64(len(got)) != rep.Records || rep.Records == 0 {
		t.Fatalf("after force: %v %+v %+v", err, info, rep)
	}
	for k, v := range got {
		if !entriesEqual(want[k], v) {
			t.Fatalf("key %v changed", k)
		}
	}
}
