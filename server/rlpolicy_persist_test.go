package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRLPolicyChangesSurviveRestart: without a policy file, rules changed
// at run time are part of the dataset: they come back after a restart from
// the append-only log, from a rewritten log, and from a snapshot. They are
// not keys (DBSIZE, FLUSHALL).
func TestRLPolicyChangesSurviveRestart(t *testing.T) {
	for _, mode := range []string{"aof", "aof-rewrite", "snapshot"} {
		t.Run(mode, func(t *testing.T) {
			r := newRestartable(t, func(c *Config) {
				c.Persist.AppendOnly = mode != "snapshot"
				c.Persist.Save = nil
			})
			r.expect("+OK\r\n", "RL.POLICY", "SET", "a", "fixed", "2", "1m")
			r.expect("+OK\r\n", "RL.POLICY", "SET", "b", "gcra", "5", "250ms", "BURST", "9", "SHADOW")
			r.expect("+OK\r\n", "RL.POLICY", "SET", "c", "log", "3", "1h")
			r.expect(":1\r\n", "RL.POLICY", "DEL", "a")
			r.expect(":0\r\n", "DBSIZE")
			r.expect("+OK\r\n", "FLUSHALL")
			switch mode {
			case "aof-rewrite":
				r.expect("+Background append only file rewriting started\r\n", "BGREWRITEAOF")
				waitFor(t, func() bool { return !r.srv.persist.rewriteRunning.Load() })
				// Nothing changes the rules after the rewrite: they come
				// back from the new base file alone.
				r.expect("+OK\r\n", "SET", "k", "v")
				r.expect("+OK\r\n", "FLUSHALL")
			case "snapshot":
				r.expect("+OK\r\n", "SAVE")
			}
			want := r.rc.do("RL.POLICY", "GET", "b")
			r.restart()
			r.expect("*2\r\n$1\r\nb\r\n$1\r\nc\r\n", "RL.POLICY", "LIST")
			r.expect(want, "RL.POLICY", "GET", "b")
			r.expect(":0\r\n", "DBSIZE")
			r.expect("*0\r\n", "KEYS", "*")
		})
	}
}

// TestRLPolicyFileWinsAtStart: with a policy file, a standalone server reads
// the file at every start, as Redis reads redis.conf: run-time changes are
// dropped at a restart unless RL.POLICY SAVE wrote them to the file.
func TestRLPolicyFileWinsAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, []byte("rules:\n  - {id: f, algorithm: fixed, limit: 1, per: 1s}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newRestartable(t, func(c *Config) {
		c.Persist.AppendOnly = true
		c.Persist.Save = nil
		c.RLPolicies = path
	})
	r.expect("*1\r\n$1\r\nf\r\n", "RL.POLICY", "LIST")
	r.expect("+OK\r\n", "RL.POLICY", "SET", "x", "gcra", "5", "1s")
	r.restart()
	r.expect("*1\r\n$1\r\nf\r\n", "RL.POLICY", "LIST")
	r.expect("+OK\r\n", "RL.POLICY", "SET", "y", "log", "5", "1m")
	r.expect("+OK\r\n", "RL.POLICY", "SAVE")
	r.restart()
	r.expect("*2\r\n$1\r\nf\r\n$1\r\ny\r\n", "RL.POLICY", "LIST")
	// The saved file is a valid policy file (JSON, which YAML reads).
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"rules":[{"id":"f","algorithm":"fixed","limit":1,"per":"1s","failMode":"open"},{"id":"y","algorithm":"log","limit":5,"per":"1m","failMode":"open"}]}` + "\n"
	if string(data) != want {
		t.Fatalf("saved file:\n%s\nwant\n%s", data, want)
	}
	// Without a file, SAVE says why.
	_, addr, _ := newTestServer(t)
	if got := dialRaw(t, addr).do("RL.POLICY", "SAVE"); got != "-ERR no policy file configured (rl-policies)\r\n" {
		t.Fatalf("SAVE without a file: %q", got)
	}
}

// TestRLPolicyRecordOrder: a change inside MULTI is recorded with the
// transaction, and replaying a log with several changes ends on the last.
func TestRLPolicyRecordOrder(t *testing.T) {
	r := newRestartable(t, func(c *Config) {
		c.Persist.AppendOnly = true
		c.Persist.Save = nil
	})
	r.expect("+OK\r\n", "MULTI")
	r.expect("+QUEUED\r\n", "RL.POLICY", "SET", "a", "fixed", "1", "1s")
	r.expect("+QUEUED\r\n", "SET", "k", "v")
	r.expect("+QUEUED\r\n", "RL.POLICY", "SET", "a", "fixed", "2", "1s")
	r.expect("*3\r\n+OK\r\n+OK\r\n+OK\r\n", "EXEC")
	for i := range 20 {
		r.expect("+OK\r\n", "RL.POLICY", "SET", "r"+string(rune('a'+i)), "gcra", "5", "1s")
	}
	for i := range 19 {
		r.expect(":1\r\n", "RL.POLICY", "DEL", "r"+string(rune('a'+i)))
	}
	r.restart()
	r.expect("*2\r\n$1\r\na\r\n$2\r\nrt\r\n", "RL.POLICY", "LIST")
	r.expect("$1\r\nv\r\n", "GET", "k")
	if got := r.rc.do("RL.POLICY", "GET", "a"); !strings.Contains(got, "$5\r\nlimit\r\n:2\r\n") {
		t.Fatalf("rule a after replay: %q", got)
	}
}
