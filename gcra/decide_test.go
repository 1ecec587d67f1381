package gcra

import (
	"math"
	"testing"
)

// now0 is the fixed epoch of the timeline tests (2023-11-14).
const now0 int64 = 1_700_000_000_000_000_000

const (
	ms  int64 = 1_000_000
	sec int64 = 1_000_000_000
)

// step is one call in a timeline: at now0+at with quantity n.
type step struct {
	name string
	at   int64    // ns after now0 (may be negative)
	n    int64    // quantity
	q    [3]int64 // max_burst, count, period; zero: the timeline's quota
	want [5]int64 // redis-cell reply
	act  Action
}

// timeline is a sequence of calls against one key, applying each Action to
// a simulated store that expires the key at its TAT, as the server does.
type timeline struct {
	name  string
	q     [3]int64
	tat   int64 // if set: a stored TAT (ns after now0) before the first step
	steps []step
}

var timelines = []timeline{
	{name: "fresh 15 30 60", q: [3]int64{15, 30, 60}, steps: []step{
		{name: "first call", want: [5]int64{0, 16, 15, -1, 2}, act: Store, n: 1},
	}},
	{name: "burst of 20, 1 ms apart", q: [3]int64{15, 30, 60}, steps: burst20()},
	{name: "1000 1000 60 fresh", q: [3]int64{1000, 1000, 60}, steps: []step{
		{name: "60 ms rounds up", n: 1, want: [5]int64{0, 1001, 1000, -1, 1}, act: Store},
	}},
	{name: "7 per 10 s", q: [3]int64{0, 7, 10}, steps: []step{
		{name: "first", n: 1, want: [5]int64{0, 1, 0, -1, 2}, act: Store},
		{name: "second limited", at: 1 * ms, n: 1, want: [5]int64{1, 1, 0, 2, 2}, act: Keep},
		{name: "after E", at: 1428571428, n: 1, want: [5]int64{0, 1, 0, -1, 2}, act: Store},
	}},
	{name: "6000 6000 1 remaining clamped", q: [3]int64{6000, 6000, 1}, steps: []step{
		{name: "redis-cell says 6024", n: 1, want: [5]int64{0, 6001, 6001, -1, 0}, act: Store},
		{name: "after 1000 more", n: 1000, want: [5]int64{0, 6001, 5020, -1, 1}, act: Store},
	}},
	{name: "E below 1 us", q: [3]int64{1e9, 1e9, 1}, steps: []step{
		{name: "redis-cell says MaxInt64", n: 1, want: [5]int64{0, 1e9 + 1, 1e9 + 1, -1, 0}, act: Store},
	}},
	{name: "1e9 per 1 s, no burst", q: [3]int64{0, 2000, 1}, steps: []step{
		{name: "allowed", n: 1, want: [5]int64{0, 1, 0, -1, 0}, act: Store},
		{name: "limited, sub-ms retry", n: 1, want: [5]int64{1, 1, 0, 0, 0}, act: Keep},
		{name: "after 0.5 ms", at: 500_000, n: 1, want: [5]int64{0, 1, 0, -1, 0}, act: Store},
	}},
	{name: "q = limit on fresh key", q: [3]int64{15, 30, 60}, steps: []step{
		{name: "whole bucket", n: 16, want: [5]int64{0, 16, 0, -1, 32}, act: Store},
		{name: "then empty", n: 1, want: [5]int64{1, 16, 0, 2, 32}, act: Keep},
	}},
	{name: "peek", q: [3]int64{15, 30, 60}, steps: []step{
		{name: "fresh key", n: 0, want: [5]int64{0, 16, 16, -1, 0}, act: Keep},
		{name: "use 5", n: 5, want: [5]int64{0, 16, 11, -1, 10}, act: Store},
		{name: "peek after 5", n: 0, want: [5]int64{0, 16, 11, -1, 10}, act: Keep},
		{name: "peek 3 s later", at: 3 * sec, n: 0, want: [5]int64{0, 16, 12, -1, 7}, act: Keep},
	}},
	{name: "quantity above limit", q: [3]int64{15, 30, 60}, steps: []step{
		{name: "fresh key, 17", n: 17, want: [5]int64{1, 16, 16, -1, 0}, act: Keep},
		{name: "use 5", n: 5, want: [5]int64{0, 16, 11, -1, 10}, act: Store},
		{name: "17 after 5", n: 17, want: [5]int64{1, 16, 11, -1, 10}, act: Keep},
		{name: "MaxInt64 never", n: math.MaxInt64, want: [5]int64{1, 16, 11, -1, 10}, act: Keep},
	}},
	{name: "MaxInt64 on fresh key", q: [3]int64{15, 30, 60}, steps: []step{
		{name: "never", n: math.MaxInt64, want: [5]int64{1, 16, 16, -1, 0}, act: Keep},
	}},
	{name: "refunds", q: [3]int64{15, 30, 60}, steps: []step{
		{name: "use 5", n: 5, want: [5]int64{0, 16, 11, -1, 10}, act: Store},
		{name: "refund 1", n: -1, want: [5]int64{0, 16, 12, -1, 8}, act: Store},
		{name: "refund 2", n: -2, want: [5]int64{0, 16, 14, -1, 4}, act: Store},
		{name: "refund to exactly now", n: -2, want: [5]int64{0, 16, 16, -1, 0}, act: Delete},
		{name: "use 5 again", n: 5, want: [5]int64{0, 16, 11, -1, 10}, act: Store},
		{name: "refund 1 s later", at: 1 * sec, n: -1, want: [5]int64{0, 16, 12, -1, 7}, act: Store},
		{name: "refund 2.5 s later", at: 2500 * ms, n: -2, want: [5]int64{0, 16, 15, -1, 2}, act: Store},
		{name: "refund past now", at: 2500 * ms, n: -5, want: [5]int64{0, 16, 16, -1, 0}, act: Delete},
		{name: "fresh again", at: 2500 * ms, n: 1, want: [5]int64{0, 16, 15, -1, 2}, act: Store},
	}},
	{name: "refund on fresh key", q: [3]int64{15, 30, 60}, steps: []step{
		{name: "-1 deletes", n: -1, want: [5]int64{0, 16, 16, -1, 0}, act: Delete},
	}},
	{name: "MinInt64 quantity", q: [3]int64{15, 30, 60}, steps: []step{
		{name: "fresh key", n: math.MinInt64, want: [5]int64{0, 16, 16, -1, 0}, act: Delete},
		{name: "use 5", n: 5, want: [5]int64{0, 16, 11, -1, 10}, act: Store},
		{name: "full refund", n: math.MinInt64, want: [5]int64{0, 16, 16, -1, 0}, act: Delete},
	}},
	{name: "parameter change on the same key", q: [3]int64{15, 30, 60}, steps: []step{
		{name: "whole bucket", n: 16, want: [5]int64{0, 16, 0, -1, 32}, act: Store},
		{name: "peek with 1 1 1 is limited", n: 0, q: [3]int64{1, 1, 1}, want: [5]int64{1, 2, 0, 30, 32}, act: Keep},
		{name: "call with 1 1 1", n: 1, q: [3]int64{1, 1, 1}, want: [5]int64{1, 2, 0, 31, 32}, act: Keep},
		{name: "refund too small", n: -1, q: [3]int64{1, 1, 1}, want: [5]int64{1, 2, 0, 29, 32}, act: Keep},
		{name: "after 30 s still 1 s", at: 30 * sec, n: 1, q: [3]int64{1, 1, 1}, want: [5]int64{1, 2, 0, 1, 2}, act: Keep},
		{name: "after 31 s", at: 31 * sec, n: 1, q: [3]int64{1, 1, 1}, want: [5]int64{0, 2, 0, -1, 2}, act: Store},
		{name: "bigger quota", at: 31 * sec, n: 1, q: [3]int64{99, 30, 60}, want: [5]int64{0, 100, 98, -1, 4}, act: Store},
	}},
	{name: "clock moves backwards", q: [3]int64{15, 30, 60}, steps: []step{
		{name: "first", n: 1, want: [5]int64{0, 16, 15, -1, 2}, act: Store},
		{name: "10 s earlier", at: -10 * sec, n: 1, want: [5]int64{0, 16, 9, -1, 14}, act: Store},
		{name: "40 s earlier is limited", at: -40 * sec, n: 1, want: [5]int64{1, 16, 0, 14, 44}, act: Keep},
		{name: "back to normal", at: 1 * sec, n: 1, want: [5]int64{0, 16, 13, -1, 5}, act: Store},
	}},
	{name: "TAT 60 s in the future", q: [3]int64{15, 30, 60}, tat: 60 * sec, steps: []step{
		{name: "limited", n: 1, want: [5]int64{1, 16, 0, 30, 60}, act: Keep},
		{name: "peek limited", n: 0, want: [5]int64{1, 16, 0, 28, 60}, act: Keep},
		{name: "after 28 s", at: 28 * sec, n: 0, want: [5]int64{0, 16, 0, -1, 32}, act: Keep},
		{name: "after 29 s", at: 29 * sec, n: 1, want: [5]int64{1, 16, 0, 1, 31}, act: Keep},
		{name: "after 30 s", at: 30 * sec, n: 1, want: [5]int64{0, 16, 0, -1, 32}, act: Store},
	}},
	{name: "TAT long past", q: [3]int64{15, 30, 60}, tat: -3600 * sec, steps: []step{
		{name: "like fresh", n: 1, want: [5]int64{0, 16, 15, -1, 2}, act: Store},
	}},
	{name: "time refills tokens", q: [3]int64{15, 30, 60}, steps: []step{
		{name: "use 6", n: 6, want: [5]int64{0, 16, 10, -1, 12}, act: Store},
		{name: "6 s later", at: 6 * sec, n: 1, want: [5]int64{0, 16, 12, -1, 8}, act: Store},
		{name: "7.5 s later", at: 7500 * ms, n: 0, want: [5]int64{0, 16, 12, -1, 7}, act: Keep},
		{name: "after expiry", at: 100 * sec, n: 1, want: [5]int64{0, 16, 15, -1, 2}, act: Store},
	}},
}

// burst20 is 20 calls 1 ms apart on 15 30 60: 16 allowed with remaining
// 15..0 and reset 2..32, then 4 limited with [1,16,0,2,32].
func burst20() []step {
	var steps []step
	for k := int64(1); k <= 20; k++ {
		s := step{name: "call " + string(rune('A'+k-1)), at: (k - 1) * ms, n: 1}
		if k <= 16 {
			s.want, s.act = [5]int64{0, 16, 16 - k, -1, 2 * k}, Store
		} else {
			s.want, s.act = [5]int64{1, 16, 0, 2, 32}, Keep
		}
		steps = append(steps, s)
	}
	return steps
}

func mustQuota(t testing.TB, p [3]int64) Quota {
	t.Helper()
	q, err := NewQuota(p[0], p[1], p[2])
	if err != nil {
		t.Fatalf("NewQuota%v: %v", p, err)
	}
	return q
}

func TestDecideTimeline(t *testing.T) {
	for _, tl := range timelines {
		t.Run(tl.name, func(t *testing.T) {
			var tat int64
			exists := tl.tat != 0
			if exists {
				tat = now0 + tl.tat
			}
			for _, s := range tl.steps {
				p := tl.q
				if s.q != ([3]int64{}) {
					p = s.q
				}
				now := now0 + s.at
				if exists && tat <= now { // the server's key expired at TAT
					exists = false
				}
				r := Decide(tat, exists, now, mustQuota(t, p), s.n)
				if got := r.Reply(); got != s.want || r.Action != s.act {
					t.Fatalf("%s: reply %v %v, want %v %v (result %+v)", s.name, got, r.Action, s.want, s.act, r)
				}
				switch r.Action {
				case Store:
					if r.NewTAT-now != r.ResetAfter {
						t.Fatalf("%s: NewTAT-now = %d, ResetAfter %d", s.name, r.NewTAT-now, r.ResetAfter)
					}
					tat, exists = r.NewTAT, true
				case Delete:
					exists = false
				}
			}
		})
	}
}

// TestDecideExact checks ns-level fields that the second-rounded reply hides.
func TestDecideExact(t *testing.T) {
	q1530 := mustQuota(t, [3]int64{15, 30, 60})
	qHuge := mustQuota(t, [3]int64{0, 1, 10_000_000_000})     // E = 1e19 ns saturates
	qBig := mustQuota(t, [3]int64{math.MaxInt64 - 1, 1e6, 1}) // E = 1 µs, tau = MaxInt64
	max := int64(math.MaxInt64)
	tests := []struct {
		name   string
		tat    int64
		exists bool
		now    int64
		q      Quota
		n      int64
		want   Result
	}{
		{"fresh", 0, false, now0, q1530, 1,
			Result{Limit: 16, Remaining: 15, RetryAfter: -1, ResetAfter: 2 * sec, Action: Store, NewTAT: now0 + 2*sec}},
		{"limited retry ns", now0 + 32*sec - 16*ms, true, now0, q1530, 1,
			Result{Limited: true, Limit: 16, RetryAfter: 2*sec - 16*ms, ResetAfter: 32*sec - 16*ms, Action: Keep}},
		{"refund keeps exact TAT", now0 + 10*sec, true, now0 + 1, q1530, -1,
			Result{Limit: 16, Remaining: 12, RetryAfter: -1, ResetAfter: 8*sec - 1, Action: Store, NewTAT: now0 + 8*sec}},
		{"stale TAT with q > limit: reset 0, not negative", now0 - 5*sec, true, now0, q1530, 17,
			Result{Limited: true, Limit: 16, Remaining: 16, RetryAfter: -1, Action: Keep}},
		{"E saturated: first call allowed, TAT saturates", 0, false, now0, qHuge, 1,
			Result{Limit: 1, Remaining: 0, RetryAfter: -1, ResetAfter: max - now0, Action: Store, NewTAT: max}},
		{"E saturated: saturated TAT stays limited", max, true, now0 + 1, qHuge, 1,
			Result{Limited: true, Limit: 1, RetryAfter: max - now0 - 1, ResetAfter: max - now0 - 1, Action: Keep}},
		{"tau saturated: cost past end of time", 0, false, now0, qBig, 8e15,
			Result{Limit: max, Remaining: 1_700_000_000_000_000, RetryAfter: -1, ResetAfter: max - now0, Action: Store, NewTAT: max}},
		{"tau saturated: booked beyond tau", max, true, now0, qBig, 8e15,
			Result{Limited: true, Limit: max, Remaining: 1_700_000_000_000_000, RetryAfter: 8e18 - now0, ResetAfter: max - now0, Action: Keep}},
		{"tau saturated: cost beyond tau never succeeds", 0, false, now0, qBig, 9_300_000_000_000_000,
			Result{Limited: true, Limit: max, Remaining: 9_223_372_036_854_776 /* float64 rounding, as redis-cell */, RetryAfter: -1, Action: Keep}},
		{"remaining -1 in redis-cell is clamped to 0", now0 + 2900, true, now0, mustQuota(t, [3]int64{0, 2e6, 3}), 0,
			Result{Limited: true, Limit: 1, RetryAfter: 1400, ResetAfter: 2900, Action: Keep}},
		{"now at end of time", 0, false, max, q1530, 1,
			Result{Limited: true, Limit: 16, Remaining: 16, RetryAfter: -1, Action: Keep}},
		{"negative now, huge backlog", max, true, math.MinInt64, q1530, 1,
			Result{Limited: true, Limit: 16, RetryAfter: max, ResetAfter: max, Action: Keep}},
		{"zero Quota limits", 0, false, now0, Quota{}, 1,
			Result{Limited: true, RetryAfter: -1, Action: Keep}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(tc.tat, tc.exists, tc.now, tc.q, tc.n); got != tc.want {
				t.Errorf("Decide = %+v\nwant     %+v", got, tc.want)
			}
		})
	}
}

func TestDecideNoAllocs(t *testing.T) {
	q := mustQuota(t, [3]int64{15, 30, 60})
	var sink Result
	allocs := testing.AllocsPerRun(1000, func() {
		sink = Decide(now0+10*sec, true, now0, q, 1)
		sink = Decide(now0+40*sec, true, now0, q, 1)
		sink = Decide(now0+10*sec, true, now0, q, -3)
	})
	if allocs != 0 {
		t.Errorf("Decide allocates %v times per run", allocs)
	}
	_ = sink
}
