package ratelimit

import (
	"bytes"
	"testing"
)

// FuzzDecodeLog: any bytes decode or fail cleanly, and what decodes
// encodes back to the same bytes.
func FuzzDecodeLog(f *testing.F) {
	f.Add(AppendLog(nil, LogState{Entries: []Entry{{1_700_000_000_000_000_000, 1}, {1_700_000_000_500_000_000, 3}}}))
	f.Add([]byte{0})
	f.Add([]byte{0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := DecodeLog(b, nil)
		if err != nil {
			return
		}
		if again := AppendLog(nil, st); !bytes.Equal(again, b) {
			// Varints have one canonical form; a longer one is not ours.
			if _, err := DecodeLog(again, nil); err != nil {
				t.Fatalf("re-encoding of %x does not decode: %v", b, err)
			}
		}
	})
}

// FuzzDecide runs every algorithm on arbitrary rules, states, instants and
// costs: no panic, and the invariants of the package doc hold.
func FuzzDecide(f *testing.F) {
	f.Add(int64(10), int64(1e9), int64(5), int64(1_700_000_000_000_000_000), int64(3), int64(7), int64(1))
	f.Add(MaxLimit, MaxPeriod, int64(0), int64(1)<<61, int64(1)<<61, MaxLimit, MaxLimit)
	f.Fuzz(func(t *testing.T, limit, period, burst, now, a, b, cost int64) {
		r, err := NewRule(limit, period, burst)
		if err != nil || now < 0 || now > 1<<61 || cost < 1 || cost > MaxLimit {
			return
		}
		check := func(name string, d Decision) {
			if d.Allowed && d.RetryAfter != -1 || !d.Allowed && d.RetryAfter != -1 && d.RetryAfter <= 0 ||
				d.Remaining < 0 || d.ResetAfter < 0 || d.Delay < 0 {
				t.Fatalf("%s: rule %+v now %d cost %d (state %d, %d): %+v", name, r, now, cost, a, b, d)
			}
		}
		cnt := func(x int64) int64 { return min(max(x, 0), r.Limit) }
		w := floorDiv(now, r.Period)
		d, _ := r.Fixed(FixedState{Window: w, Count: cnt(a)}, now, cost)
		check("fixed", d)
		d, _ = r.Sliding(SlidingState{Window: w - b&1, Cur: cnt(a), Prev: cnt(b)}, now, cost)
		check("sliding", d)
		at := now - max(a, 0)%r.Period
		d, _ = r.Log(LogState{Entries: []Entry{{at, cnt(b) | 1}}}, now, cost)
		check("log", d)
		d, _ = r.Queue(QueueState{Free: now + max(a, 0)%(r.Period*2)}, now, cost)
		check("queue", d)
		d, _ = r.GCRA(GCRAState{TAT: now + max(b, 0)%(r.Capacity()*r.Interval()+1)}, now, cost)
		check("gcra", d)
	})
}

// FuzzDecodeState: any bytes decode or fail cleanly; what decodes encodes
// back to bytes that decode to the same state, and can be decided on.
func FuzzDecodeState(f *testing.F) {
	for _, st := range []State{
		{Algo: AlgoGCRA, Rule: Rule{Limit: 10, Period: 1e9, Burst: 3}, GCRA: GCRAState{TAT: 1_700_000_000_000_000_000}},
		{Algo: AlgoFixed, Rule: Rule{Limit: 5, Period: 60e9}, Fixed: FixedState{Window: 28_333_333, Count: 4}},
		{Algo: AlgoSliding, Rule: Rule{Limit: 5, Period: 60e9}, Sliding: SlidingState{Window: 28_333_333, Cur: 2, Prev: 5}},
		{Algo: AlgoLog, Rule: Rule{Limit: 5, Period: 60e9}, Log: LogState{Entries: []Entry{{1e18, 1}, {1e18 + 5, 2}}}},
		{Algo: AlgoQueue, Rule: Rule{Limit: 10, Period: 1e9, Burst: 20}, Queue: QueueState{Free: 1e18}},
		{Algo: AlgoLease, Rule: Rule{Limit: 10, Period: 1e9}, Lease: LeaseState{Next: 1e18 + 2, Leases: []Lease{{1e18, 1e18 + 5, 1}, {1e18 + 1, 1e18 + 7, 3}}}},
	} {
		f.Add(AppendState(nil, &st))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := DecodeState(b, nil)
		if err != nil {
			return
		}
		again, err := DecodeState(AppendState(nil, &st), nil)
		if err != nil {
			t.Fatalf("re-encoding of %x does not decode: %v", b, err)
		}
		if again.Algo != st.Algo || again.Rule != st.Rule {
			t.Fatalf("round trip changed %+v into %+v", st, again)
		}
		Decide(st, 1_700_000_000_000_000_000, 1)
	})
}
