//go:build linux

package faulttest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// runConfig is how many schedules a test runs: count of them, or as many
// as fit in soak when TURNSTILE_SOAK is set.
type runConfig struct {
	seed  uint64
	count int
	soak  time.Duration
}

func loadRunConfig(t *testing.T, defaultCount int) runConfig {
	t.Helper()
	rc := runConfig{count: defaultCount, seed: rand.Uint64() % 1_000_000}
	if testing.Short() {
		rc.count = max(1, defaultCount/4)
	}
	if s := os.Getenv("TURNSTILE_FAULT_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("TURNSTILE_FAULT_SEED=%q: %v", s, err)
		}
		rc.seed = v
	}
	if s := os.Getenv("TURNSTILE_FAULT_SCHEDULES"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("TURNSTILE_FAULT_SCHEDULES=%q: %v", s, err)
		}
		rc.count = v
	}
	if s := os.Getenv("TURNSTILE_SOAK"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("TURNSTILE_SOAK=%q: %v", s, err)
		}
		rc.soak = d
	}
	t.Logf("fault schedules: seed %d (TURNSTILE_FAULT_SEED=%d replays them), %d schedules, soak %v",
		rc.seed, rc.seed, rc.count, rc.soak)
	return rc
}

// defaultWorkload is schedule i's: 6 clients, a limiter of 4 at once then
// one per 50 ms, and replies awaited 1.5 s (longer than a cluster takes to
// answer CLUSTERDOWN), or 400 ms in every other schedule so that pauses
// leave operations of unknown outcome behind.
func defaultWorkload(i int) workload {
	w := workload{prefix: fmt.Sprintf("s%d:", i), clients: 6, maxOps: 20000, opTimeout: 1500 * time.Millisecond,
		burst: 3, count: 20, period: 1}
	if i%2 == 1 {
		w.opTimeout = 400 * time.Millisecond
	}
	return w
}

// runSchedules runs schedules on c until the count (or the soak time) is
// reached or one fails, and returns the summary lines.
func runSchedules(t *testing.T, c *cluster, mode string, rc runConfig) []string {
	start := time.Now()
	var lines []string
	var total runResult
	schedules := 0
	for i := 0; ; i++ {
		if rc.soak > 0 && time.Since(start) >= rc.soak || rc.soak == 0 && i >= rc.count {
			break
		}
		sched := Generate(rc.seed, i, len(c.nodes), 1)
		res := runSchedule(c, defaultWorkload(i), sched)
		schedules++
		total.ok += res.ok
		total.unknown += res.unknown
		total.failed += res.failed
		total.thr.Allowed += res.thr.Allowed
		total.thr.Windows += res.thr.Windows
		line := res.summary()
		lines = append(lines, line)
		t.Logf("%v\n    %s", sched, line)
		if res.bad() {
			t.Errorf("schedule failed (replay: TURNSTILE_FAULT_SEED=%d):\n%s\nhistory and visualization: %s",
				rc.seed, res.report(), saveFailure(res))
			c.dumpLogs()
			break
		}
	}
	head := fmt.Sprintf("%s: %d schedules (seed %d) in %v: %d ops ok, %d unknown, %d failed; %d CL.THROTTLE allowed, %d windows checked",
		mode, schedules, rc.seed, time.Since(start).Round(time.Second), total.ok, total.unknown, total.failed,
		total.thr.Allowed, total.thr.Windows)
	t.Log(head)
	if rc.soak > 0 {
		writeSoakReport(t, mode, head, lines)
	}
	return lines
}

// writeSoakReport appends a summary to paste into bench/RESULTS.md to
// TURNSTILE_SOAK_REPORT, or to a file in the temporary directory.
func writeSoakReport(t *testing.T, mode, head string, lines []string) {
	path := os.Getenv("TURNSTILE_SOAK_REPORT")
	if path == "" {
		path = filepath.Join(os.TempDir(), fmt.Sprintf("turnstile-soak-%s.md", strings.ReplaceAll(mode, " ", "-")))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "### Fault soak: %s (%s)\n\n%s\n\n", mode, time.Now().Format("2006-01-02 15:04"), head)
	b.WriteString("Result: ")
	if t.Failed() {
		b.WriteString("**FAILED** (see the test log)\n\n")
	} else {
		b.WriteString("0 linearizability violations, 0 acknowledged writes lost, 0 CL.THROTTLE windows over the bound\n\n")
	}
	b.WriteString("```\n" + strings.Join(lines, "\n") + "\n```\n")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err == nil {
		_, err = f.WriteString(b.String() + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		t.Errorf("soak report: %v", err)
		return
	}
	t.Logf("soak report written to %s", path)
}

// TestSingleNodeFaults runs the harness against one node in today's mode
// (appendonly, appendfsync always) killed with SIGKILL, stopped with
// SIGTERM, paused with SIGSTOP and restarted: the validation of the
// harness itself until the cluster lands, and a durability test after.
func TestSingleNodeFaults(t *testing.T) {
	count := 20
	if _, cluster := turnstileBinary(t); cluster {
		count = 6 // the cluster runs the 20: CI's time goes there
	}
	rc := loadRunConfig(t, count)
	c := newSingleNode(t, true)
	runSchedules(t, c, "single node, appendfsync always", rc)
}

// TestClusterFaults runs the fault schedules against a 3-node Raft
// cluster; it skips while the binary has no cluster mode.
func TestClusterFaults(t *testing.T) {
	rc := loadRunConfig(t, 20)
	c := newRaftCluster(t, 3)
	runSchedules(t, c, "3-node cluster", rc)
}

// TestHarnessCatchesVolatileNode shows that the harness fails a node that
// forgets: without appendonly, a kill -9 and restart lose every write and
// hand out a fresh CL.THROTTLE burst, and each of the three checks must
// say so on the real processes' history.
func TestHarnessCatchesVolatileNode(t *testing.T) {
	c := newSingleNode(t, false)
	w := defaultWorkload(0)
	// A fresh burst of 21 at 2 tokens a second: the restart's own time
	// (even seconds on a loaded machine) refills far less than it hands out.
	w.burst, w.count = 20, 2
	sched := Schedule{Steps: []Step{{Act: Kill9, Wait: 100 * time.Millisecond}, {Act: Restart, Wait: 500 * time.Millisecond}, {Act: HealAll}}}
	time.Sleep(300 * time.Millisecond)
	res := runSchedule(c, w, sched)
	t.Log(res.summary())
	if len(res.errs) > 0 {
		t.Fatalf("harness errors: %v", res.errs)
	}
	if res.lin.Result == porcupine.Ok {
		t.Error("porcupine accepted the history of a node that forgot its counters")
	}
	if len(res.lost) == 0 {
		t.Error("no acknowledged write reported lost")
	}
	if res.thr.Violations == 0 {
		t.Errorf("no CL.THROTTLE window over the bound after the limiter was reset (closest: %s)", res.thr.Worst)
	}
}

// TestHarnessCatchesStaleReads shows that the linearizability check fails
// a cluster whose followers answer reads from their own memory
// (--stale-reads, documented as stale): a follower cut off from the leader
// keeps answering GET with values the majority has overwritten.
func TestHarnessCatchesStaleReads(t *testing.T) {
	c := newRaftCluster(t, 3, "--stale-reads")
	sched := Schedule{Steps: []Step{{Act: SplitMaj, Target: Leader, Mode: Refuse, Wait: 1500 * time.Millisecond}, {Act: HealAll, Wait: 300 * time.Millisecond}}}
	res := runSchedule(c, defaultWorkload(0), sched)
	t.Log(res.summary())
	if len(res.errs) > 0 {
		t.Fatalf("harness errors: %v", res.errs)
	}
	if res.lin.Result == porcupine.Ok {
		t.Error("porcupine accepted the history of followers answering stale reads")
	}
}
