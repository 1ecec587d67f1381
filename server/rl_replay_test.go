package server

import (
	"math/rand"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestRLReplayRandom sends the same random limiter commands (every RL.*
// command that changes state, CL.THROTTLE, and RL.POLICY SET for
// RL.CHECK's rules) to two servers on clocks that move together. One of
// them restarts from its append-only log every 150 commands, every other
// time just after BGREWRITEAOF; the other never restarts. Every reply must
// be the same on both: the state the log rebuilds (limiter states, leases,
// rules, expiries) decides exactly as the state it was built from.
//
// A run with one shard puts every key in one shard with every other
// (RL.CHECK's rules, expired keys removed by a lookup, a table that grows
// under a command).
//
// By default seed 7 with the default shards and seed 8 with one shard
// (which fails in its first commands without rlCheckRef); a soak runs
// each seed both ways: TURNSTILE_RL_SEED=1-200 (a seed, list or range, as
// TURNSTILE_DIFF_SEED).
func TestRLReplayRandom(t *testing.T) {
	type run struct {
		seed   uint64
		shards int // 0: the default
	}
	runs := []run{{7, 0}, {8, 1}}
	if seeds := envSeeds(t, "TURNSTILE_RL_SEED", nil); seeds != nil {
		runs = nil
		for _, seed := range seeds {
			runs = append(runs, run{seed, 0}, run{seed, 1})
		}
	}
	for _, r := range runs {
		name := "seed=" + strconv.FormatUint(r.seed, 10)
		if r.shards > 0 {
			name += "/shards=" + strconv.Itoa(r.shards)
		}
		t.Run(name, func(t *testing.T) { rlReplayRandom(t, int64(r.seed), r.shards) })
	}
}

// rlReplayRandom is one run of TestRLReplayRandom; shards > 0 sets the
// servers' number of shards.
func rlReplayRandom(t *testing.T, seed int64, shards int) {
	setShards := func(c *Config) {
		if shards > 0 {
			c.Shards = shards
		}
	}
	logged := newRestartable(t, func(c *Config) {
		c.Persist.AppendOnly = true
		c.Persist.Save = nil
		setShards(c)
	})
	_, addr, clk := newTestServer(t, setShards)
	live := dialRaw(t, addr)
	r := rand.New(rand.NewSource(seed))
	keys := []string{"k0", "k1", "k2", "k3"}
	pick := func(s ...string) string { return s[r.Intn(len(s))] }
	var leases []string // lease ids handed out: released and renewed at random
	gen := func() []string {
		key := keys[r.Intn(len(keys))]
		period := pick("250ms", "1s", "2s", "1m")
		limit := pick("1", "3", "5", "10")
		switch r.Intn(12) {
		case 0, 1, 2:
			cmd := []string{"RL.LIMIT", key, pick("GCRA", "FIXED", "SLIDING", "LOG"), limit, period}
			if r.Intn(3) == 0 {
				cmd = append(cmd, "BURST", pick("0", "1", "4"))
			}
			if r.Intn(3) == 0 {
				cmd = append(cmd, "COST", pick("1", "2", "7"))
			}
			if r.Intn(5) == 0 {
				cmd = append(cmd, "PEEK")
			}
			return cmd
		case 3:
			return []string{"RL.QUEUE", key, limit, period, "BURST", pick("0", "2", "5")}
		case 4:
			return []string{"RL.ACQUIRE", key, limit, pick("100", "1000", "5000"), "COST", pick("1", "2")}
		case 5:
			if len(leases) == 0 {
				return []string{"RL.RESET", key}
			}
			id := leases[r.Intn(len(leases))]
			if r.Intn(2) == 0 {
				return []string{"RL.RELEASE", key, id}
			}
			return []string{"RL.RENEW", key, id, pick("100", "2000")}
		case 6:
			return []string{"RL.BORROW", key, limit, period, pick("1", "2", "4")}
		case 7:
			return []string{"RL.RETURN", key, pick("1", "2")}
		case 8:
			return []string{"CL.THROTTLE", key, pick("0", "2", "5"), limit, pick("1", "10", "60"), pick("1", "2")}
		case 9:
			return []string{"RL.CHECK", "COST", pick("1", "2"), "ip", key, "user", pick("u1", "u2")}
		case 10:
			if r.Intn(4) == 0 {
				return []string{"RL.POLICY", "SET", pick("ip", "user"), pick("gcra", "fixed", "sliding", "log"), limit, period}
			}
			return []string{"RL.INFO", key}
		}
		return []string{"RL.RESET", key}
	}
	setup := [][]string{
		{"RL.POLICY", "SET", "ip", "gcra", "5", "1s"},
		{"RL.POLICY", "SET", "user", "sliding", "10", "1m"},
	}
	both := func(i int, cmd ...string) {
		t.Helper()
		want, got := live.do(cmd...), logged.rc.do(cmd...)
		if want != got {
			t.Fatalf("command %d %q:\n never restarted %q\n restarted       %q", i, cmd, want, got)
		}
		if cmd[0] == "RL.ACQUIRE" {
			if _, els, ok := splitArray(want); ok && len(els) > 0 {
				if id := bulkBody(els[len(els)-1]); id != "" && !slices.Contains(leases, id) {
					leases = append(leases, id)
				}
			}
		}
		if cmd[0] == "RL.RELEASE" {
			leases = slices.DeleteFunc(leases, func(id string) bool { return id == cmd[2] })
		}
	}
	for i, c := range setup {
		both(i, c...)
	}
	const commands = 3000
	restarts := 0
	for i := 0; i < commands; i++ {
		both(i, gen()...)
		if r.Intn(3) == 0 {
			d := time.Duration(r.Intn(400)) * time.Millisecond
			if r.Intn(20) == 0 {
				d = time.Duration(r.Intn(90)) * time.Second
			}
			clk.Advance(d)
			logged.clk.Advance(d)
		}
		if (i+1)%150 == 0 {
			if restarts%2 == 1 {
				rewriteLog(t, logged.rc)
			}
			logged.restart()
			restarts++
		}
	}
	for _, k := range keys {
		both(commands, "RL.INFO", k)
		both(commands, "PTTL", k)
	}
	t.Logf("%d commands, %d restarts, %d lease ids seen", commands, restarts, len(leases))
}
