package main

import (
	"testing"
	"time"

	"github.com/turnstile/turnstile/gcra"
)

// hammer plays a client that asks for one token every step for d against
// the reference GCRA, deleting the bucket at the instants in resets (an
// eviction), and returns the requests allowed and the resets that
// resetSeen detects from the replies.
func hammer(t *testing.T, q hotQuota, step, d time.Duration, resets []time.Duration) (allowed, seen int64) {
	return play(t, q, func(int) time.Duration { return step }, d, resets)
}

// play is hammer with the time before request i+1 given by gap(i).
func play(t *testing.T, q hotQuota, gap func(i int) time.Duration, d time.Duration, resets []time.Duration) (allowed, seen int64) {
	t.Helper()
	quota, err := gcra.NewQuota(q.burst, q.count, q.period)
	if err != nil {
		t.Fatal(err)
	}
	const t0 = int64(1_800_000_000) * 1e9
	var tat int64
	exists := false
	prev, prevAt := int64(-1), time.Duration(0)
	for i, at := 0, time.Duration(0); at <= d; i, at = i+1, at+gap(i) {
		for len(resets) > 0 && resets[0] <= at {
			exists, resets = false, resets[1:]
		}
		now := t0 + int64(at)
		res := gcra.Decide(tat, exists, now, quota, 1)
		if !res.Limited {
			allowed++
		}
		if res.Action == gcra.Store {
			tat, exists = res.NewTAT, true
		}
		rem := res.Reply()[2]
		if prev >= 0 && resetSeen(prev, rem, at-prevAt, q.emission()) {
			seen++
		}
		prev, prevAt = rem, at
	}
	return allowed, seen
}

func TestMaxAllowedBoundsGCRA(t *testing.T) {
	for _, tc := range []struct {
		q    hotQuota
		step time.Duration
		d    time.Duration
	}{
		{hotQuota{9, 10, 60}, 50 * time.Millisecond, 95 * time.Second},
		{hotQuota{9, 10, 60}, 7 * time.Second, 10 * time.Minute},
		{hotQuota{0, 1, 1}, 30 * time.Millisecond, 20 * time.Second},
		{hotQuota{15, 30, 60}, 10 * time.Millisecond, 61 * time.Second},
	} {
		allowed, seen := hammer(t, tc.q, tc.step, tc.d, nil)
		bound := tc.q.gcraMax(tc.d)
		if allowed > bound {
			t.Errorf("%+v every %s for %s: allowed %d > bound %d", tc.q, tc.step, tc.d, allowed, bound)
		}
		// The bound is tight for a client that asks far more often than
		// the limit: it misses at most the token whose due time falls
		// between its last two requests.
		if tc.step < tc.q.emission() && allowed < bound-1 {
			t.Errorf("%+v every %s for %s: allowed %d, bound %d is loose", tc.q, tc.step, tc.d, allowed, bound)
		}
		if seen != 0 {
			t.Errorf("%+v every %s for %s: %d resets seen without any", tc.q, tc.step, tc.d, seen)
		}
	}
}

// An irregular client (bursts, then pauses long enough for several tokens
// to come due) stays within the bound, and no reset is seen where none was.
func TestIrregularClientNoFalseReset(t *testing.T) {
	q := hotQuota{9, 10, 60}
	x := uint32(12345)
	gap := func(int) time.Duration {
		x = x*1664525 + 1013904223
		if x>>28 < 3 { // about one gap in five is a pause of up to 40 s
			return time.Duration(x>>8%40000) * time.Millisecond
		}
		return time.Duration(x>>8%200) * time.Millisecond
	}
	d := 30 * time.Minute
	allowed, seen := play(t, q, gap, d, nil)
	if seen != 0 {
		t.Errorf("%d resets seen without any", seen)
	}
	if bound := q.gcraMax(d); allowed > bound {
		t.Errorf("allowed %d > bound %d", allowed, bound)
	}
}

func TestEvictionForgivesAndIsSeen(t *testing.T) {
	q := hotQuota{9, 10, 60}
	d := 60 * time.Second
	resets := []time.Duration{10 * time.Second, 30 * time.Second, 45 * time.Second}
	allowed, seen := hammer(t, q, 50*time.Millisecond, d, resets)
	if seen != int64(len(resets)) {
		t.Errorf("%d resets seen, want %d", seen, len(resets))
	}
	// Each reset of a fully booked bucket hands out a full burst again.
	if over := allowed - q.gcraMax(d); over < int64(len(resets))*q.burst {
		t.Errorf("allowed %d, only %d over the bound after %d resets", allowed, over, len(resets))
	}
}

func TestIsSetShare(t *testing.T) {
	for _, share := range []float64{0, 0.05, 0.5, 1} {
		n, sets := int64(200000), 0
		for i := range n {
			if isSet(i, share) {
				sets++
			}
		}
		if got := float64(sets) / float64(n); got < share-0.01 || got > share+0.01 {
			t.Errorf("share %.2f: %.4f of keys are SETs", share, got)
		}
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 200; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	if got := percentile(d, 99); got != 198*time.Millisecond {
		t.Errorf("p99 of 1..200 ms = %s", got)
	}
	if got := percentile(d, 100); got != 200*time.Millisecond {
		t.Errorf("p100 = %s", got)
	}
	if got := percentile(nil, 99); got != 0 {
		t.Errorf("p99 of nothing = %s", got)
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"100mb": 100 << 20, "20MB": 20 << 20, "1gb": 1 << 30, "1000": 1000, "5k": 5000, "2m": 2e6} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "mb", "-1mb", "1.5mb", "1tb"} {
		if _, err := parseBytes(in); err == nil {
			t.Errorf("parseBytes(%q) succeeded", in)
		}
	}
}
