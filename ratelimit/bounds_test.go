package ratelimit

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

// maxInWindow is the largest total cost of admitted requests whose
// instants lie in some half-open interval [x, x+span).
func maxInWindow(adm []Entry, span int64) int64 {
	sort.Slice(adm, func(i, j int) bool { return adm[i].At < adm[j].At })
	var best, sum int64
	j := 0
	for i := range adm {
		sum += adm[i].Cost
		for adm[j].At <= adm[i].At-span {
			sum -= adm[j].Cost
			j++
		}
		best = max(best, sum)
	}
	return best
}

// TestBounds hammers each algorithm with dense random traffic and checks
// the bound the package doc states, over every interval of one period:
// fixed window and sliding counter at most 2*Limit, the sliding log at
// most Limit; the queue never holds more than Burst waiting requests and
// lets them leave one Interval apart.
func TestBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for run := range 200 {
		limit := 1 + rng.Int64N(20)
		period := (1 + rng.Int64N(20)) * int64(time.Millisecond)
		r, err := NewRule(limit, period, rng.Int64N(8))
		if err != nil {
			t.Fatal(err)
		}
		var fx FixedState
		var sl SlidingState
		var lg LogState
		var qu QueueState
		var fxA, slA, lgA []Entry
		var leaves []int64
		now := rng.Int64N(1e15)
		for range 2000 {
			now += rng.Int64N(period / limit / 2)
			cost := 1 + rng.Int64N(2)
			var d Decision
			var nf FixedState
			if d, nf = r.Fixed(fx, now, cost); d.Allowed {
				fx = nf
				fxA = append(fxA, Entry{now, cost})
			}
			var ns SlidingState
			if d, ns = r.Sliding(sl, now, cost); d.Allowed {
				sl = ns
				slA = append(slA, Entry{now, cost})
			}
			var nl LogState
			if d, nl = r.Log(lg, now, cost); d.Allowed {
				lg = nl
				lgA = append(lgA, Entry{now, cost})
			}
			var nq QueueState
			if d, nq = r.Queue(qu, now, cost); d.Allowed {
				if w := r.waiting(nq.Free, now); w > r.Burst {
					t.Fatalf("run %d: %d requests wait, queue of %d", run, w, r.Burst)
				}
				for j := range cost {
					leaves = append(leaves, now+d.Delay+j*r.Interval())
				}
				qu = nq
			}
		}
		if got := maxInWindow(fxA, period); got > 2*limit {
			t.Fatalf("run %d: fixed window admitted %d in one period, limit %d", run, got, limit)
		}
		if got := maxInWindow(slA, period); got > 2*limit {
			t.Fatalf("run %d: sliding counter admitted %d in one period, limit %d", run, got, limit)
		}
		if got := maxInWindow(lgA, period); got > limit {
			t.Fatalf("run %d: sliding log admitted %d in one period, limit %d", run, got, limit)
		}
		for i := 1; i < len(leaves); i++ {
			if leaves[i]-leaves[i-1] < r.Interval() {
				t.Fatalf("run %d: two requests left %d ns apart, interval %d", run, leaves[i]-leaves[i-1], r.Interval())
			}
		}
	}
}
