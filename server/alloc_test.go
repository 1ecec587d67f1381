package server

import (
	"strconv"
	"testing"

	"github.com/turnstile/turnstile/clock"
	"github.com/turnstile/turnstile/persistence"
)

// TestThrottlePathAllocs guards the hot path with a test, not a benchmark
// comment: CL.THROTTLE on existing keys (parse, lookup, locks, GCRA,
// store, effects, durability wait, reply) allocates nothing, without a log
// and with the append-only log on.
func TestThrottlePathAllocs(t *testing.T) {
	for _, aof := range []bool{false, true} {
		t.Run("aof="+strconv.FormatBool(aof), func(t *testing.T) {
			s, c := newPathClient(t, func(cfg *Config) {
				cfg.Clock = clock.NewManual(testEpoch)
				cfg.Shards = 16
				if aof {
					cfg.Persist.AppendOnly = true
					cfg.Persist.AppendFsync = persistence.FsyncNo
					cfg.Persist.Dir = t.TempDir()
				}
			})
			const nkeys = 64
			reqs := make([][]byte, nkeys)
			for i := range reqs {
				reqs[i] = []byte(encodeCommand("CL.THROTTLE", "user:"+strconv.Itoa(i), "15", "30", "60"))
			}
			expectNoAllocs(t, s, c, "CL.THROTTLE", reqs)
		})
	}
}

// expectNoAllocs feeds every request once (creating the keys and warming
// the buffers), then fails the test unless feeding them round robin
// allocates nothing.
func expectNoAllocs(t *testing.T, s *Server, c *client, what string, reqs [][]byte) {
	t.Helper()
	for _, r := range reqs {
		feed(t, s, c, r)
	}
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		feed(t, s, c, reqs[i%len(reqs)])
		i++
	})
	if allocs != 0 {
		t.Fatalf("%s path: %.2f allocations per request, want 0", what, allocs)
	}
}
