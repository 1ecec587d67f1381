package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/turnstile/turnstile/clock"
	"github.com/turnstile/turnstile/shards"
)

// newExpireTestServer builds a server without starting it (no background
// loops), so that expiry slices run only when the test calls them. It has
// 64 shards: a shard visit removes at most maxRounds*sampleSize = 320 keys,
// so a slice can stop for its budget only when visiting every shard would
// take longer than the budget (with 16 shards, a slice of fast deletes
// ends its pass first).
func newExpireTestServer(t *testing.T) (*Server, *clock.Manual) {
	t.Helper()
	clk := clock.NewManual(testEpoch)
	cfg := DefaultConfig()
	cfg.Clock = clk
	cfg.Shards = 64
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, clk
}

func putTTL(s *Server, db int, key string, exp int64) {
	m := s.dbs[db]
	i := m.ShardOf([]byte(key))
	m.Lock(i)
	m.Put([]byte(key), shards.IntEntry(exp, exp))
	m.Unlock(i)
}

// A mass expiry is worked off in slices that each stop after their budget
// and ask to come back soon, and every database gets its turn.
func TestExpireSlicesMassExpiry(t *testing.T) {
	s, clk := newExpireTestServer(t)
	const n = 200000
	exp := clk.Now() + int64(time.Second)
	for i := 0; i < n; i++ {
		putTTL(s, 0, fmt.Sprintf("key:%012d", i), exp)
	}
	putTTL(s, 5, "other", exp)
	var e expirer
	// Nothing is due: the slice asks for no more, even if (under the race
	// detector) its budget runs out before it has visited every shard.
	if more := e.slice(s, time.Now()); more {
		t.Fatal("a slice with nothing due asks for more")
	}
	if s.dbs[0].Len() != n {
		t.Fatalf("a live key was removed: Len = %d", s.dbs[0].Len())
	}
	clk.Advance(time.Second)
	slices, stopped, quiet := 0, 0, 0
	for s.dbs[0].Len() > 0 || s.dbs[5].Len() > 0 {
		if slices > 100000 {
			t.Fatalf("%d slices left %d + %d keys", slices, s.dbs[0].Len(), s.dbs[5].Len())
		}
		before := s.dbs[0].Len()
		start := time.Now()
		more := e.slice(s, start)
		slices++
		if before > n/2 {
			// A slice whose budget ran out while it walked a stretch an
			// earlier slice emptied has seen nothing to remove and leaves
			// the rest to the next tick (it cannot tell that stretch from
			// keys without a TTL); under the race detector on a loaded
			// machine that can happen now and then, never as a rule.
			if !more {
				quiet++
			}
			if quiet > 1+slices/10 {
				t.Fatalf("slice %d: %d dead keys left and %d of %d slices did not ask for more", slices, before, quiet, slices)
			}
			if time.Since(start) >= expireSliceBudget {
				stopped++
			}
		}
	}
	// One slice cannot remove 200000 keys within its budget: at least one
	// of them must have stopped for it (slices may also stop early
	// because a shard is stale, so this is the only timing check).
	if slices < 2 || stopped == 0 {
		t.Fatalf("%d slices, %d stopped by the budget", slices, stopped)
	}
	if got := s.dbs[0].ExpiredKeys() + s.dbs[5].ExpiredKeys(); got != n+1 {
		t.Fatalf("ExpiredKeys = %d, want %d", got, n+1)
	}
	if more := e.slice(s, time.Now()); more {
		t.Fatal("a slice after everything expired asks for more")
	}
}

// The running server's loop removes a mass of dead keys without clients.
func TestExpireLoopMassExpiry(t *testing.T) {
	s, _, clk := startKeysTestServer(t, func(c *Config) { c.Hz = 10 })
	const n = 100000
	exp := clk.Now() + int64(time.Second)
	for i := 0; i < n; i++ {
		putTTL(s, 0, fmt.Sprintf("key:%012d", i), exp)
	}
	clk.Advance(time.Second)
	deadline := time.Now().Add(20 * time.Second)
	for s.dbs[0].Len() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d dead keys left after 20 s", s.dbs[0].Len(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestMemReleaser(t *testing.T) {
	const mb = 1 << 20
	released := 0
	m := memReleaser{release: func() { released++ }}
	for _, c := range []struct {
		dataset int64
		want    bool
	}{
		{0, false},
		{60 * mb, false},  // growth
		{40 * mb, false},  // not halved yet
		{30 * mb, true},   // halved since 60
		{20 * mb, false},  // 30 -> 20
		{15 * mb, true},   // halved since 30
		{16 * mb, false},  // churn: grows a little
		{8 * mb, true},    // halved since 16
		{0, true},         // the end of a mass expiry: one more release
		{0, false},        // nothing changed
		{mb / 2, false},   // small keyspaces come and go ...
		{0, false},        // ... without releases (drop < releaseMinDrop)
		{100 * mb, false}, // FLUSHALL of a big keyspace
		{0, true},
	} {
		if got := m.tick(c.dataset, 0); got != c.want {
			t.Fatalf("tick(%d MiB) = %v, want %v", c.dataset/mb, got, c.want)
		}
	}
	if released != 5 {
		t.Fatalf("released %d times, want 5", released)
	}

	// Large client buffers given back (a running total): a release per
	// releaseMinClientBytes freed since the last release.
	released = 0
	m = memReleaser{release: func() { released++ }}
	for _, c := range []struct {
		freed int64
		want  bool
	}{
		{0, false},
		{10 * mb, false},
		{31 * mb, false},
		{32 * mb, true},
		{40 * mb, false},
		{63 * mb, false},
		{64 * mb, true},
		{64 * mb, false},
		{800 * mb, true},
	} {
		if got := m.tick(50*mb, c.freed); got != c.want {
			t.Fatalf("tick(freed %d MiB) = %v, want %v", c.freed/mb, got, c.want)
		}
	}
	if released != 3 {
		t.Fatalf("released %d times, want 3", released)
	}
}
