package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/turnstile/turnstile/persistence"
	"github.com/turnstile/turnstile/shards"
)

// TestCheckAOF writes a log, tears its last record, and checks that
// check-aof reports it, --fix repairs it, and a clean file passes.
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
