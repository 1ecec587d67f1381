//go:build linux

package faulttest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"
)

// failoverOnce kills the leader with SIGKILL and returns the time until a
// SET through another node succeeds; on a single node, the node is
// restarted at once and the SET goes through it. It then restarts what it
// killed and waits for the cluster to heal.
func failoverOnce(c *cluster, r *rand.Rand, run int) (time.Duration, error) {
	if err := c.waitHealthy(30 * time.Second); err != nil {
		return 0, err
	}
	l := c.leader()
	if l < 0 {
		return 0, fmt.Errorf("no leader")
	}
	via := l
	if len(c.nodes) > 1 {
		via = (l + 1 + r.IntN(len(c.nodes)-1)) % len(c.nodes)
	}
	rc := c.client(via, 250*time.Millisecond)
	defer rc.Close()
	key := fmt.Sprintf("failover:%d", run)
	start := time.Now()
	c.nodes[l].kill9()
	if len(c.nodes) == 1 {
		if _, err := c.restartDead(); err != nil {
			return 0, err
		}
	}
	deadline := start.Add(30 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		if err = rc.Set(context.Background(), key, "x", 0).Err(); err == nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	d := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("no write through node %d within 30 s of killing node %d: %w", via, l, err)
	}
	if _, err := c.restartDead(); err != nil {
		return d, err
	}
	return d, c.waitHealthy(30 * time.Second)
}

// measureFailover runs failoverOnce runs times and returns the sorted
// times.
func measureFailover(t *testing.T, c *cluster, runs int) []time.Duration {
	r := rand.New(rand.NewPCG(1, 2))
	var ds []time.Duration
	for i := 0; i < runs; i++ {
		d, err := failoverOnce(c, r, i)
		if err != nil {
			c.fatal(fmt.Errorf("failover run %d: %w", i, err))
		}
		ds = append(ds, d)
	}
	slices.Sort(ds)
	return ds
}

// failoverRuns is 10 with TURNSTILE_FAILOVER=1 (the benchmark figure),
// else 3 (a check that the measurement works).
func failoverRuns() (int, bool) {
	if os.Getenv("TURNSTILE_FAILOVER") != "" {
		return 10, true
	}
	return 3, false
}

// TestFailoverTime measures, on a 3-node cluster, the time from kill -9 of
// the leader to the first successful write through another node. The
// target (issue 12) is a median within 2 s over 10 runs; it is enforced
// with TURNSTILE_FAILOVER=1, a loaded CI machine only checks 10 s.
func TestFailoverTime(t *testing.T) {
	runs, bench := failoverRuns()
	c := newRaftCluster(t, 3)
	ds := measureFailover(t, c, runs)
	median := ds[len(ds)/2]
	t.Logf("failover (kill -9 of the leader -> first write through another node), %d runs: median %v, min %v, max %v, all %v",
		runs, median.Round(time.Millisecond), ds[0].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond), ds)
	limit := 10 * time.Second
	if bench {
		limit = 2 * time.Second
	}
	if median > limit {
		t.Errorf("median failover %v, want at most %v", median, limit)
	}
}

// TestRestartTime is the single-node counterpart (and the validation of
// the measurement): kill -9, restart on the same directory, first write.
func TestRestartTime(t *testing.T) {
	runs, _ := failoverRuns()
	c := newSingleNode(t, true)
	ds := measureFailover(t, c, runs)
	t.Logf("single node kill -9 -> restart -> first write, %d runs: median %v, min %v, max %v",
		runs, ds[len(ds)/2].Round(time.Millisecond), ds[0].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
}
