package server

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/turnstile/turnstile/persistence"
)

// TestExecTornInLog: the effects of one EXEC are one unit in the
// append-only log. Cut anywhere inside it (a crash in the middle of its
// write), the server starts with none of the transaction's writes and all
// of the writes before it; whole, the transaction comes back whole.
func TestExecTornInLog(t *testing.T) {
	testUnitTornInLog(t, func(r *restartable) {
		r.expect("+OK\r\n", "MULTI")
		r.expect("+QUEUED\r\n", "SET", "a", "1")
		r.expect("+QUEUED\r\n", "HSET", "h", "f", "v")
		r.expect("+QUEUED\r\n", "INCR", "n")
		r.expect("*3\r\n+OK\r\n:1\r\n:1\r\n", "EXEC")
	})
}

// TestScriptTornInLog: a script's effects are one unit on disk too (a key
// it did not declare included).
func TestScriptTornInLog(t *testing.T) {
	testUnitTornInLog(t, func(r *restartable) {
		r.expect("*3\r\n+OK\r\n:1\r\n:1\r\n", "EVAL",
			"return {redis.call('set', KEYS[1], '1'), redis.call('hset', KEYS[2], 'f', 'v'), redis.call('incr', 'n')}",
			"2", "a", "h")
	})
}

// testUnitTornInLog runs unit, which writes keys a, h and n as one unit,
// then cuts the log inside the unit in several places: a restart loads
// none of it (and cuts the log back to its start); the whole log loads
// all of it.
func testUnitTornInLog(t *testing.T, unit func(r *restartable)) {
	r := newRestartable(t, func(c *Config) {
		c.Persist.AppendOnly = true
		c.Persist.AppendFsync = persistence.FsyncAlways
	})
	incr := filepath.Join(r.dir, "appendonly.aof.1.incr")
	size := func() int64 {
		t.Helper()
		fi, err := os.Stat(incr)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	r.expect("+OK\r\n", "SET", "before", "1")
	start := size()
	unit(r)
	end := size()
	r.srv.Close()
	r.waitStopped()
	full, err := os.ReadFile(incr)
	if err != nil || int64(len(full)) != end {
		t.Fatalf("log file is %d bytes after shutdown (%v), %d after the unit", len(full), err, end)
	}

	for _, cut := range []int64{start + 1, start + 12, (start + end) / 2, end - 1} {
		if err := os.WriteFile(incr, full[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		r.start()
		r.expect("$1\r\n1\r\n", "GET", "before")
		r.expect(":0\r\n", "EXISTS", "a", "h", "n")
		r.srv.Close()
		r.waitStopped()
		if got := size(); got != start {
			t.Fatalf("cut at %d: the log was cut back to %d bytes, want %d (the transaction's start)", cut, got, start)
		}
	}
	if err := os.WriteFile(incr, full, 0o644); err != nil {
		t.Fatal(err)
	}
	r.start()
	r.expect(":3\r\n", "EXISTS", "a", "h", "n")
}
