//go:build linux

package faulttest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// runResult is what one schedule did and what the checkers found.
type runResult struct {
	sched   Schedule
	steps   []string // what each step did, with its time
	hist    History
	ok      int // operations by outcome
	failed  int
	unknown int
	lin     LinearizabilityResult
	lost    []string
	thr     ThrottleReport
	errs    []string // harness errors: a step failed, the cluster did not heal, a node crashed
	replies errorStats
	elapsed time.Duration
}

func (r runResult) bad() bool {
	return r.lin.Result != porcupine.Ok || len(r.lost) > 0 || r.thr.Violations > 0 || len(r.errs) > 0
}

// summary is one line per schedule.
func (r runResult) summary() string {
	return fmt.Sprintf("#%d %5.1fs ops %d (ok %d, unknown %d, failed %d; %s) keys %d linearizable %s lost %d throttle %d allowed/%d limited/%d unknown, %d windows, %d violations, closest %s",
		r.sched.Index, r.elapsed.Seconds(), len(r.hist), r.ok, r.unknown, r.failed, r.replies, r.lin.Keys, r.lin.Result, len(r.lost),
		r.thr.Allowed, r.thr.Limited, r.thr.Unknown, r.thr.Windows, r.thr.Violations, r.thr.Worst)
}

// report describes a failed run in full.
func (r runResult) report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "schedule %v\n", r.sched)
	for _, s := range r.steps {
		fmt.Fprintf(&b, "  %s\n", s)
	}
	for _, e := range r.errs {
		fmt.Fprintf(&b, "harness: %s\n", e)
	}
	if r.lin.Result != porcupine.Ok {
		fmt.Fprintf(&b, "linearizability: %s on keys %v\n", r.lin.Result, r.lin.BadKeys)
	}
	for _, l := range r.lost {
		fmt.Fprintf(&b, "lost: %s\n", l)
	}
	if r.thr.Violations > 0 {
		fmt.Fprintf(&b, "CL.THROTTLE: %d windows over the bound (%d even with the unknown calls), worst: %s\n",
			r.thr.Violations, r.thr.LooseViolations, r.thr.Worst)
	}
	return b.String()
}

// runSchedule runs the workload while it applies sched, heals, reads every
// key, and checks the history.
func runSchedule(c *cluster, w workload, sched Schedule) runResult {
	res := runResult{sched: sched}
	start := time.Now()
	if err := c.waitHealthy(30 * time.Second); err != nil {
		res.errs = append(res.errs, "before the schedule: "+err.Error())
		return res
	}
	base := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), sched.Duration()+60*time.Second)
	defer cancel()
	done := make(chan History, 1)
	go func() { done <- runLoad(ctx, c, w, sched.Seed^uint64(sched.Index)<<32, base) }()
	r := rand.New(rand.NewPCG(sched.Seed, uint64(sched.Index)+1<<40))
	time.Sleep(200 * time.Millisecond)
	for _, st := range sched.Steps {
		desc, err := c.apply(st, r)
		res.steps = append(res.steps, fmt.Sprintf("%6.3fs %v: %s", time.Since(base).Seconds(), st, desc))
		if err != nil {
			res.errs = append(res.errs, fmt.Sprintf("step %v: %v", st, err))
			if _, err := c.apply(Step{Act: HealAll}, r); err != nil {
				res.errs = append(res.errs, "heal-all: "+err.Error())
			}
			break
		}
		time.Sleep(st.Wait)
	}
	if err := c.waitHealthy(30 * time.Second); err != nil {
		res.errs = append(res.errs, "after heal-all: "+err.Error())
	}
	res.steps = append(res.steps, fmt.Sprintf("%6.3fs healthy", time.Since(base).Seconds()))
	time.Sleep(200 * time.Millisecond) // load on the healed cluster
	cancel()
	res.hist = <-done
	final, err := finalReads(c, w.kvKeys(), w.clients, base, 30*time.Second)
	if err != nil {
		res.errs = append(res.errs, err.Error())
	}
	res.hist = append(res.hist, final...)
	res.errs = append(res.errs, c.crashes()...)
	res.elapsed = time.Since(start)
	res.ok, res.failed, res.unknown = res.hist.Count()
	res.replies = errorReplies(res.hist)
	res.lin = CheckLinearizable(res.hist, 60*time.Second)
	res.lost = CheckLostWrites(res.hist)
	res.thr = CheckThrottle(res.hist, w.throttleKey(), w.burst, w.emission())
	return res
}

// saveFailure writes the history of a failed run, sorted by call, and
// porcupine's visualization to a directory that outlives the test, and
// returns it.
func saveFailure(r runResult) string {
	dir, err := os.MkdirTemp("", fmt.Sprintf("turnstile-fault-%d-%d-", r.sched.Seed, r.sched.Index))
	if err != nil {
		return err.Error()
	}
	ops := append(History(nil), r.hist...)
	sort.Slice(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	var b strings.Builder
	b.WriteString(r.report())
	for _, op := range ops {
		b.WriteString(op.String())
		b.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(dir, "history.txt"), []byte(b.String()), 0o644); err != nil {
		return err.Error()
	}
	if r.lin.Result != porcupine.Ok {
		f, err := os.Create(filepath.Join(dir, "linearizability.html"))
		if err != nil {
			return err.Error()
		}
		err = porcupine.Visualize(kvModel, r.lin.Info, f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Sprintf("%s (visualization: %v)", dir, err)
		}
	}
	return dir
}

// errorStats counts the error replies of a history (CLUSTERDOWN, TRYAGAIN,
// …) by their first word, and the slowest of them: a cluster without a
// quorum must answer within about 1 s rather than leave clients to time
// out.
type errorStats struct {
	byCode  map[string]int
	slowest time.Duration
}

func errorReplies(h History) errorStats {
	s := errorStats{byCode: map[string]int{}}
	for _, op := range h {
		if !op.Reply {
			continue
		}
		code, _, _ := strings.Cut(op.Err, " ")
		s.byCode[code]++
		s.slowest = max(s.slowest, time.Duration(op.Return-op.Call))
	}
	return s
}

func (s errorStats) String() string {
	if len(s.byCode) == 0 {
		return "no error replies"
	}
	codes := make([]string, 0, len(s.byCode))
	for c, n := range s.byCode {
		codes = append(codes, fmt.Sprintf("%s %d", c, n))
	}
	sort.Strings(codes)
	return fmt.Sprintf("error replies %s, slowest %v", strings.Join(codes, ", "), s.slowest.Round(time.Millisecond))
}
