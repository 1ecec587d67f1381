package cluster

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestIsolatedLeader: a leader cut off from the others fails its pending
// and new writes within about a second (never acknowledging one that did
// not commit), the majority elects a leader and goes on, clients of a
// follower keep working through forwarding, and once healed the old leader
// follows with exactly the committed state.
func TestIsolatedLeader(t *testing.T) {
	tc := newTestCluster(t)
	tc.three()
	old := tc.leader()
	must(t, old.client.Set(ctx, "committed", "1", 0).Err())
	throttle(t, old, "rl")
	tc.converge()

	old.node.sl.isolate(true)
	start := time.Now()
	var err error
	acked := 0
	for time.Since(start) < 5*time.Second {
		if err = old.client.Incr(ctx, "cut-off").Err(); err != nil {
			break
		}
		acked++
	}
	if err == nil || !(strings.HasPrefix(err.Error(), "TRYAGAIN") || strings.HasPrefix(err.Error(), "CLUSTERDOWN")) {
		t.Fatalf("isolated leader: writes end with %v after %v", err, time.Since(start))
	}
	t.Logf("isolated leader: %d writes acknowledged before the cut was noticed, then %v after %v", acked, err, time.Since(start))

	var nl *tnode
	waitFor(t, "a new leader among the majority", func() bool {
		for _, n := range tc.others(old) {
			if n.node.open.Load() {
				nl = n
				return true
			}
		}
		return false
	})
	follower := tc.others(old, nl)[0]
	// Through the follower: forwarded to the new leader.
	must(t, follower.client.Set(ctx, "after", "2", 0).Err())
	if r := throttle(t, follower, "rl"); r[0] != 0 || r[2] != 3 {
		t.Fatalf("CL.THROTTLE through a follower after failover: %v (want the second request of the burst)", r)
	}
	tx := follower.client.TxPipeline()
	tx.Incr(ctx, "tx")
	tx.Incr(ctx, "tx")
	if _, err := tx.Exec(ctx); err != nil {
		t.Fatalf("MULTI/EXEC through a follower: %v", err)
	}
	if v, err := follower.client.Eval(ctx, "return redis.call('INCRBY', KEYS[1], 5)", []string{"tx"}).Int(); err != nil || v != 7 {
		t.Fatalf("EVAL through a follower: %d %v", v, err)
	}

	old.node.sl.isolate(false)
	ks := tc.converge()
	for _, k := range []string{`0 "committed"`, `0 "after"`, `0 "tx"`, `0 "rl"`} {
		if _, ok := ks[k]; !ok {
			t.Errorf("key %s lost", k)
		}
	}
	if v, err := old.client.Get(ctx, "after").Result(); err != nil || v != "2" {
		t.Fatalf("GET through the healed old leader: %q %v", v, err)
	}
}

// TestStaleReadsOnFollowers: with StaleReads a follower answers GET from
// its own memory, even cut off from the others.
func TestStaleReadsOnFollowers(t *testing.T) {
	tc := newTestCluster(t)
	tc.tweak = func(c *Config) { c.StaleReads = true }
	tc.three()
	l := tc.leader()
	for i := 0; i < 20; i++ {
		must(t, l.client.Set(ctx, fmt.Sprint("k", i), i, 0).Err())
	}
	tc.converge()
	f := tc.others(l)[0]
	f.node.sl.isolate(true)
	if v, err := f.client.Get(ctx, "k7").Result(); err != nil || v != "7" {
		t.Fatalf("stale read on an isolated follower: %q %v", v, err)
	}
}

// TestExpiryDecidedByLeader: followers whose clocks run an hour ahead keep
// a key the leader still considers live (and goes on changing), and the
// leader's removal of expired keys reaches them.
func TestExpiryDecidedByLeader(t *testing.T) {
	tc := newTestCluster(t)
	tc.start("n1", true, "", nil)
	l := tc.leader()
	fast := newLagClock(time.Hour)
	tc.start("n2", false, l.addr, fast)
	tc.start("n3", false, l.addr, fast)
	tc.waitMembers(l, 3)
	must(t, l.client.HSet(ctx, "h", "f", 1).Err())
	must(t, l.client.Expire(ctx, "h", time.Minute).Err())
	time.Sleep(300 * time.Millisecond) // followers' active expiry would have run
	must(t, l.client.HSet(ctx, "h", "g", 2).Err())
	must(t, l.client.Set(ctx, "short", "v", 150*time.Millisecond).Err())
	ks := tc.converge()
	if _, ok := ks[`0 "h"`]; !ok {
		t.Fatal("the hash the leader still holds is gone")
	}
	// The leader expires "short" and replicates the removal.
	waitFor(t, "the expired key removed on every node", func() bool {
		for _, n := range tc.running() {
			if _, ok := dumpOf(t, n.srv)[`0 "short"`]; ok {
				return false
			}
		}
		return true
	})
	tc.converge()
}

// TestHelloRole: HELLO says master on the leader and replica elsewhere.
func TestHelloRole(t *testing.T) {
	tc := newTestCluster(t)
	tc.three()
	l := tc.leader()
	for _, n := range tc.running() {
		m, err := n.client.Do(ctx, "HELLO", "2").Slice()
		must(t, err)
		want := "replica"
		if n == l {
			want = "master"
		}
		for i := 0; i+1 < len(m); i += 2 {
			if m[i] == "role" && m[i+1] != want {
				t.Errorf("HELLO on %s: role %v, want %s", n.id, m[i+1], want)
			}
		}
	}
}

// TestLoadedScriptsSurviveFailover: a script loaded with SCRIPT LOAD on
// the leader runs by EVALSHA on the next leader, and reaches a node that
// catches up from a snapshot.
func TestLoadedScriptsSurviveFailover(t *testing.T) {
	tc := newTestCluster(t)
	tc.tweak = func(c *Config) {
		c.SnapshotThreshold, c.TrailingLogs, c.SnapshotInterval = 32, 8, 100*time.Millisecond
	}
	tc.three()
	l := tc.leader()
	body := "return redis.call('INCRBY', KEYS[1], ARGV[1])"
	sha, err := l.client.ScriptLoad(ctx, body).Result()
	must(t, err)
	must(t, l.client.EvalSha(ctx, sha, []string{"n"}, 2).Err())
	for i := 0; i < 200; i++ { // enough entries for a snapshot
		must(t, l.client.Incr(ctx, "filler").Err())
	}
	tc.converge()
	l.stop()
	nl := tc.leader()
	if v, err := nl.client.EvalSha(ctx, sha, []string{"n"}, 3).Int(); err != nil || v != 5 {
		t.Fatalf("EVALSHA on the new leader: %d %v", v, err)
	}
	waitFor(t, "a snapshot on the new leader", func() bool {
		metas, _ := nl.node.snaps.List()
		return len(metas) > 0
	})
	tc.start("n9", false, nl.addr, nil)
	tc.waitMembers(nl, 4)
	tc.converge()
	if ok, err := tc.nodes["n9"].client.ScriptExists(ctx, sha).Result(); err != nil || !ok[0] {
		t.Fatalf("SCRIPT EXISTS on a node that caught up: %v %v", ok, err)
	}
}
