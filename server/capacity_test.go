package server

import (
	"errors"
	"strings"
	"testing"

	"github.com/turnstile/turnstile/persistence"
	"github.com/turnstile/turnstile/shards"
)

// TestFullShardAnswersOOM: a shard that reaches its capacity (2^24 slots,
// ~14.26 M keys, reachable with --shards 1; lowered to 3 keys here) makes
// commands that would create keys answer an OOM error before they change
// anything; it panicked before. Updating existing keys, deleting, and
// reading go on.
func TestFullShardAnswersOOM(t *testing.T) {
	_, addr, _ := newTestServer(t, func(c *Config) {
		c.Shards = 1
		c.maxKeysPerShard = 3
	})
	r := dialRaw(t, addr)
	for _, k := range []string{"a", "b", "c"} {
		if got := r.do("SET", k, "1"); got != "+OK\r\n" {
			t.Fatalf("SET %s = %q", k, got)
		}
	}
	oom := func(what string, args ...string) {
		t.Helper()
		if got := r.do(args...); !strings.HasPrefix(got, "-OOM ") {
			t.Errorf("%s in a full shard = %q, want an OOM error", what, got)
		}
	}
	oom("SET of a new key", "SET", "d", "1")
	oom("MSET with one new key", "MSET", "a", "2", "d", "2")
	oom("CL.THROTTLE of a new key", "CL.THROTTLE", "rl", "5", "10", "60")
	oom("INCR of a new key", "INCR", "n")
	oom("COPY to a new key", "COPY", "a", "e")
	for _, c := range [][]string{
		{"SET", "a", "2"}, {"INCR", "b"}, {"MSET", "a", "3", "b", "4"}, {"EXPIRE", "c", "100"}, {"GET", "a"},
	} {
		if got := r.do(c...); strings.HasPrefix(got, "-") {
			t.Errorf("%v on existing keys in a full shard = %q", c, got)
		}
	}
	r.do("MULTI")
	r.do("SET", "a", "5")
	r.do("SET", "z", "5")
	if got := r.do("EXEC"); !strings.HasPrefix(got, "-EXECABORT Transaction discarded because of: OOM ") {
		t.Errorf("EXEC creating a key in a full shard = %q", got)
	}
	if got := r.do("MGET", "a", "z"); got != "*2\r\n$1\r\n3\r\n$-1\r\n" {
		t.Errorf("the refused EXEC changed keys: MGET = %q", got)
	}
	if got := r.do("DEL", "c"); got != ":1\r\n" {
		t.Fatalf("DEL in a full shard = %q", got)
	}
	if got := r.do("CL.THROTTLE", "rl", "5", "10", "60"); !strings.HasPrefix(got, "*5\r\n:0\r\n") {
		t.Errorf("CL.THROTTLE once a key was deleted = %q", got)
	}
}

// TestApplyToFullShardFails: loading more keys than a shard holds is an
// error that names the cause (the server refuses to start), not a panic.
func TestApplyToFullShardFails(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Shards = 1
	cfg.maxKeysPerShard = 2
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range []string{"a", "b", "a", "c"} {
		err := s.ApplyEffect(persistence.Effect{Op: persistence.OpSet, Key: []byte(k), Entry: shards.IntEntry(1, 0)})
		if want := i == 3; (err != nil) != want || (want && !errors.Is(err, shards.ErrFull)) {
			t.Errorf("apply %d (%s): %v", i, k, err)
		}
	}
}
