package server

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLimitersOnExpiredKeys: CL.THROTTLE and RL.LIMIT look a key up with
// lookupForSet, which leaves an expired key in its slot for the store to
// rewrite. Whatever the command does next, the key is counted as expired
// once, a request that stores leaves one live key, and one that stores
// nothing (denied, PEEK) leaves no key behind. Active expiry is off, so
// every key here expires through the commands.
func TestLimitersOnExpiredKeys(t *testing.T) {
	_, addr, clk := newTestServer(t, func(c *Config) { c.EnableDebugCommand = "local" })
	c := dialRaw(t, addr)
	if got := c.do("DEBUG", "SET-ACTIVE-EXPIRE", "0"); got != "+OK\r\n" {
		t.Fatalf("DEBUG SET-ACTIVE-EXPIRE 0: %q", got)
	}
	expired := func() string { return infoField(c.do("INFO", "stats"), "expired_keys") }
	steps := []struct {
		name    string
		create  []string // makes the key, which then expires
		cmd     []string // runs on the expired key
		reply   string   // prefix of cmd's reply
		present bool     // the key is there after cmd
	}{
		{"throttle stores", []string{"CL.THROTTLE", "k", "0", "1", "1"}, []string{"CL.THROTTLE", "k", "0", "1", "1"}, "*5\r\n:0\r\n", true},
		{"throttle denies", []string{"CL.THROTTLE", "k", "0", "1", "1"}, []string{"CL.THROTTLE", "k", "0", "1", "1", "5"}, "*5\r\n:1\r\n", false},
		{"limit stores", []string{"RL.LIMIT", "k", "GCRA", "1", "1s"}, []string{"RL.LIMIT", "k", "FIXED", "3", "1s"}, "*5\r\n:1\r\n", true},
		{"limit denies", []string{"RL.LIMIT", "k", "SLIDING", "2", "1s"}, []string{"RL.LIMIT", "k", "LOG", "2", "1s", "COST", "3"}, "*5\r\n:0\r\n", false},
		{"limit peeks", []string{"RL.LIMIT", "k", "FIXED", "2", "1s"}, []string{"RL.LIMIT", "k", "FIXED", "2", "1s", "PEEK"}, "*5\r\n:1\r\n", false},
		{"queue stores", []string{"RL.QUEUE", "k", "5", "1s"}, []string{"RL.QUEUE", "k", "5", "1s"}, "*6\r\n:1\r\n", true},
	}
	for _, st := range steps {
		c.do("FLUSHALL")
		if got := c.do(st.create...); !strings.HasPrefix(got, "*") {
			t.Fatalf("%s: %q: %q", st.name, st.create, got)
		}
		clk.Advance(time.Hour)
		before := expired()
		if got := c.do(st.cmd...); !strings.HasPrefix(got, st.reply) {
			t.Fatalf("%s: %q: %q, want %q...", st.name, st.cmd, got, st.reply)
		}
		n, _ := strconv.ParseInt(before, 10, 64)
		if after := expired(); after != itoa(n+1) {
			t.Fatalf("%s: expired_keys %s -> %s, want one more", st.name, before, after)
		}
		wantKeys := map[bool]string{true: ":1\r\n", false: ":0\r\n"}[st.present]
		if got := c.do("DBSIZE"); got != wantKeys {
			t.Fatalf("%s: DBSIZE %q, want %q", st.name, got, wantKeys)
		}
		if st.present {
			if got := c.do("PTTL", "k"); !strings.HasPrefix(got, ":") || strings.HasPrefix(got, ":-") {
				t.Fatalf("%s: PTTL %q: the stored key must live and expire", st.name, got)
			}
		}
	}
}

// TestRLCheckOnExpiredKeys is TestLimitersOnExpiredKeys for RL.CHECK,
// whose rules' keys are all looked up (lookupForSet) before any is
// stored: every expired key is counted once and either rewritten by its
// rule's store or removed, whether the check is allowed, denied, denied by
// a shadow rule only, or fails on a later rule's key. One shard, so that
// every store or removal moves keys the other rules' Refs point at.
func TestRLCheckOnExpiredKeys(t *testing.T) {
	_, addr, clk := newTestServer(t, func(c *Config) { c.Shards, c.EnableDebugCommand = 1, "local" })
	c := dialRaw(t, addr)
	for _, cmd := range [][]string{
		{"DEBUG", "SET-ACTIVE-EXPIRE", "0"},
		{"RL.POLICY", "SET", "a", "fixed", "1", "1s"},
		{"RL.POLICY", "SET", "b", "sliding", "1", "1s"},
		{"RL.POLICY", "SET", "a5", "gcra", "5", "1s"},
		{"RL.POLICY", "SET", "long", "fixed", "1", "1d"},
		{"RL.POLICY", "SET", "sh", "log", "1", "1s", "SHADOW"},
		{"RL.POLICY", "SET", "wt", "fixed", "1", "1s"},
	} {
		if got := c.do(cmd...); got != "+OK\r\n" {
			t.Fatalf("%q: %q", cmd, got)
		}
	}
	expired := func() int64 {
		n, _ := strconv.ParseInt(infoField(c.do("INFO", "stats"), "expired_keys"), 10, 64)
		return n
	}
	steps := []struct {
		name   string
		create []string   // makes the keys, which then expire
		after  [][]string // run once they have expired
		cmd    []string   // runs on the expired keys
		reply  string     // prefix of cmd's reply
		keys   int        // DBSIZE after cmd
	}{
		{"stores", []string{"RL.CHECK", "a", "v", "b", "v"}, nil,
			[]string{"RL.CHECK", "b", "v", "a", "v"}, "*4\r\n:1\r\n", 2},
		{"denies", []string{"RL.CHECK", "a", "v", "b", "v"}, [][]string{{"RL.CHECK", "long", "v"}},
			[]string{"RL.CHECK", "a", "v", "long", "v", "b", "v"}, "*4\r\n:0\r\n$4\r\nlong\r\n", 1},
		{"shadow denies", []string{"RL.CHECK", "sh", "v", "a5", "v"}, nil,
			[]string{"RL.CHECK", "COST", "2", "sh", "v", "a5", "v"}, "*4\r\n:1\r\n", 1},
		{"fails", []string{"RL.CHECK", "a", "v", "b", "v"}, [][]string{{"SET", "rl:{v}:wt", "x"}},
			[]string{"RL.CHECK", "a", "v", "b", "v", "wt", "v"}, "-WRONGTYPE", 1},
	}
	for _, st := range steps {
		c.do("FLUSHALL")
		if got := c.do(st.create...); !strings.HasPrefix(got, "*4\r\n:1\r\n") {
			t.Fatalf("%s: %q: %q", st.name, st.create, got)
		}
		clk.Advance(time.Hour)
		for _, cmd := range st.after {
			c.do(cmd...)
		}
		before := expired()
		if got := c.do(st.cmd...); !strings.HasPrefix(got, st.reply) {
			t.Fatalf("%s: %q: %q, want %q...", st.name, st.cmd, got, st.reply)
		}
		if after := expired(); after != before+2 {
			t.Fatalf("%s: expired_keys %d -> %d, want two more", st.name, before, after)
		}
		if got, want := c.do("DBSIZE"), ":"+strconv.Itoa(st.keys)+"\r\n"; got != want {
			t.Fatalf("%s: DBSIZE %q, want %q", st.name, got, want)
		}
		// Again: the keys removed are not counted twice, and the stored
		// ones are live.
		c.do(st.cmd...)
		if after := expired(); after != before+2 {
			t.Fatalf("%s: expired_keys %d -> %d after a second check, want %d", st.name, before, after, before+2)
		}
	}
}

// TestKeyHashPerDatabase: a lookup reuses the hash its lock was worked out
// from (lockSet.hashed) only for the same argument in the same database.
// The same key name is throttled in databases 0 and 1, one command at a
// time, pipelined, and inside a transaction that switches databases; each
// database keeps its own state (lockcheck builds also check every reused
// hash against the key's).
func TestKeyHashPerDatabase(t *testing.T) {
	_, addr, _ := newTestServer(t)
	c := dialRaw(t, addr)
	throttle := []string{"CL.THROTTLE", "k", "0", "1", "60"} // one per minute, no burst
	allowed, limited := "*5\r\n:0\r\n", "*5\r\n:1\r\n"
	steps := []struct {
		cmd  []string
		want string
	}{
		{throttle, allowed},
		{[]string{"SELECT", "1"}, "+OK\r\n"},
		{throttle, allowed},
		{throttle, limited},
		{[]string{"SELECT", "0"}, "+OK\r\n"},
		{throttle, limited},
		{[]string{"SELECT", "2"}, "+OK\r\n"},
	}
	var pipe strings.Builder
	for _, st := range steps {
		pipe.WriteString(encodeCommand(st.cmd...))
	}
	c.send(pipe.String())
	for i, st := range steps {
		if got := c.readReply(); !strings.HasPrefix(got, st.want) {
			t.Fatalf("step %d %q: %q, want %q...", i, st.cmd, got, st.want)
		}
	}
	// In database 2, a transaction that throttles k there, then in 3, then
	// in 2 again.
	for _, cmd := range [][]string{{"MULTI"}, throttle, {"SELECT", "3"}, throttle, {"SELECT", "2"}, throttle} {
		c.do(cmd...)
	}
	got := c.do("EXEC")
	want := "*5\r\n" + allowed
	if !strings.HasPrefix(got, want) || strings.Count(got, allowed) != 2 || strings.Count(got, limited) != 1 ||
		strings.Index(got, limited) < strings.LastIndex(got, allowed) {
		t.Fatalf("EXEC: %q: want allowed in 2, allowed in 3, limited in 2", got)
	}
}
