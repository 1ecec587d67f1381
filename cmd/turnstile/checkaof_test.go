package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnstile/turnstile/persistence"
	"github.com/turnstile/turnstile/shards"
)

// TestCheckAOF writes a log (whole values and range effects), tears its
// last record, and checks that check-aof reports it, --fix repairs it, and
// a clean file passes.
func TestCheckAOF(t *testing.T) {
	dir := t.TempDir()
	lg, err := persistence.OpenLog(persistence.LogConfig{Dir: dir, Name: "appendonly.aof", Fsync: persistence.FsyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lg.Load(func(persistence.Effect) error { return nil }); err != nil {
		t.Fatal(err)
	}
	var off int64
	for i := 0; i < 10; i++ {
		off = lg.Append(persistence.Effect{Op: persistence.OpSet, Key: []byte{'k', byte('0' + i)}, Entry: shards.IntEntry(int64(i), 0)})
		// APPEND and SETRANGE log range effects (format version 4).
		off = lg.Append(persistence.Effect{Op: persistence.OpRange, Key: []byte{'k', byte('0' + i)}, Off: 1, Len: int64(3 + i),
			Entry: shards.Entry{Kind: shards.KindBytes, Str: []byte("xy")}})
	}
	if err := lg.Sync(off); err != nil {
		t.Fatal(err)
	}
	lg.Close()
	incr, _ := filepath.Glob(filepath.Join(dir, "*incr*"))
	if len(incr) != 1 {
		t.Fatalf("want one incr file, got %v", incr)
	}
	var out bytes.Buffer
	if err := checkAOF([]string{incr[0]}, &out); err != nil {
		t.Fatalf("clean file: %v\n%s", err, out.String())
	}
	fi, _ := os.Stat(incr[0])
	os.Truncate(incr[0], fi.Size()-3) // tear the last record
	out.Reset()
	if err := checkAOF([]string{incr[0]}, &out); err == nil {
		t.Fatalf("torn file passed the check:\n%s", out.String())
	}
	out.Reset()
	if err := checkAOF([]string{"--fix", incr[0]}, &out); err != nil {
		t.Fatalf("--fix: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := checkAOF([]string{incr[0]}, &out); err != nil {
		t.Fatalf("after --fix: %v\n%s", err, out.String())
	}
	if err := checkAOF(nil, &out); err == nil {
		t.Fatal("no file argument accepted")
	}
}

// TestCheckAOFTornGroup: a log whose last unit is a group of 3 effects (an
// EXEC) cut in its middle is reported as a torn tail at the group's start,
// on the manifest and on the file; --fix cuts the whole group off, and the
// log then loads the effects before it and none of the group.
func TestCheckAOFTornGroup(t *testing.T) {
	dir := t.TempDir()
	lg, err := persistence.OpenLog(persistence.LogConfig{Dir: dir, Name: "appendonly.aof", Fsync: persistence.FsyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lg.Load(func(persistence.Effect) error { return nil }); err != nil {
		t.Fatal(err)
	}
	set := func(key string, v int64) persistence.Effect {
		return persistence.Effect{Op: persistence.OpSet, Key: []byte(key), Entry: shards.IntEntry(v, 0)}
	}
	if err := lg.Sync(lg.Append(set("before", 1))); err != nil {
		t.Fatal(err)
	}
	incr := filepath.Join(dir, "appendonly.aof.1.incr")
	fi, err := os.Stat(incr)
	if err != nil {
		t.Fatal(err)
	}
	groupAt := fi.Size()
	if err := lg.Sync(lg.AppendAll([]persistence.Effect{set("a", 1), set("b", 2), set("c", 3)})); err != nil {
		t.Fatal(err)
	}
	lg.Close()
	fi, _ = os.Stat(incr)
	// Cut inside the group's last record: its first two records are whole.
	if err := os.Truncate(incr, fi.Size()-3); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, "appendonly.aof.manifest")
	for _, target := range []string{incr, manifest} {
		var out bytes.Buffer
		if err := checkAOF([]string{target}, &out); err == nil {
			t.Fatalf("%s: torn group passed the check:\n%s", target, out.String())
		}
		want := fmt.Sprintf("appendonly.aof.1.incr: incr file, %d bytes, 1 records: torn tail at offset %d (group of 3 records runs past the end of the file)", fi.Size()-3, groupAt)
		if !strings.Contains(out.String(), want) {
			t.Fatalf("%s: report\n%s\nwant a line containing\n%s", target, out.String(), want)
		}
	}
	var out bytes.Buffer
	if err := checkAOF([]string{"--fix", manifest}, &out); err != nil {
		t.Fatalf("--fix: %v\n%s", err, out.String())
	}
	if fi, _ := os.Stat(incr); fi.Size() != groupAt {
		t.Fatalf("--fix left %d bytes, want %d (the group's start)\n%s", fi.Size(), groupAt, out.String())
	}
	out.Reset()
	if err := checkAOF([]string{manifest}, &out); err != nil {
		t.Fatalf("after --fix: %v\n%s", err, out.String())
	}
	lg, err = persistence.OpenLog(persistence.LogConfig{Dir: dir, Name: "appendonly.aof", Fsync: persistence.FsyncNo})
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	var keys []string
	if _, err := lg.Load(func(e persistence.Effect) error { keys = append(keys, string(e.Key)); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(keys, ",") != "before" {
		t.Fatalf("loaded %q after --fix, want only the effect before the group", keys)
	}
}
