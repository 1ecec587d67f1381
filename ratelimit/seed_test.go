package ratelimit

import (
	"fmt"
	"math"
	"sort"
	"testing"
	"time"
)

// TestSeedWindowTable replays the seed lesson's three traffic cases (§4:
// 100 per 60 s, bursts of 100 requests 10 ms apart) through the three
// window algorithms and expects the lesson's table of admitted requests.
func TestSeedWindowTable(t *testing.T) {
	r, err := NewRule(100, int64(60*time.Second), 0)
	if err != nil {
		t.Fatal(err)
	}
	burst := func(start float64) []int64 {
		out := make([]int64, 100)
		for i := range out {
			out[i] = int64(start*1e9) + int64(i)*int64(10*time.Millisecond)
		}
		return out
	}
	cases := []struct {
		name          string
		first, second float64
		want          string // fixed log counter, as the seed prints them
	}{
		{"A: 100 at 0:59, 100 at 1:00", 59, 60, "100+100 100+0 100+2"},
		{"B: 100 at 0:01, 100 at 1:30", 1, 90, "100+100 100+100 100+52"},
		{"C: 100 at 0:59, 100 at 1:30", 59, 90, "100+100 100+0 100+52"},
	}
	for _, tc := range cases {
		var fx FixedState
		var lg LogState
		var sl SlidingState
		var counts [3][2]int
		for half, ts := range [][]int64{burst(tc.first), burst(tc.second)} {
			for _, now := range ts {
				var d Decision
				if d, fx = r.Fixed(fx, now, 1); d.Allowed {
					counts[0][half]++
				}
				var next LogState
				if d, next = r.Log(lg, now, 1); d.Allowed {
					counts[1][half]++
					lg = next
				}
				var ns SlidingState
				if d, ns = r.Sliding(sl, now, 1); d.Allowed {
					counts[2][half]++
					sl = ns
				}
			}
		}
		got := fmt.Sprintf("%d+%d %d+%d %d+%d", counts[0][0], counts[0][1], counts[1][0], counts[1][1], counts[2][0], counts[2][1])
		if got != tc.want {
			t.Errorf("%s: admitted %s, the seed's table says %s", tc.name, got, tc.want)
		}
	}
}

// mulberry32 is the seed lesson's seeded generator, bit for bit.
func mulberry32(seed uint32) func() float64 {
	return func() float64 {
		seed += 0x6D2B79F5
		t := (seed ^ seed>>15) * (1 | seed)
		t = (t + (t^t>>7)*(61|t)) ^ t
		return float64(t^t>>14) / 4294967296
	}
}

// TestSeedQueueTable replays the seed's bursty stream (§3: ~6 req/s in the
// background, two bursts of 35 within 200 ms at seconds 2 and 6) through
// the leaky bucket as a queue with r = 10/s and a queue of 20, and expects
// the lesson's per-second table and its longest wait, 1998 ms.
func TestSeedQueueTable(t *testing.T) {
	rand := mulberry32(7)
	var arr []float64
	for at := 0.0; ; {
		at += -math.Log(1-rand()) / 6
		if at >= 10 {
			break
		}
		arr = append(arr, at)
	}
	for _, s := range []float64{2, 6} {
		for range 35 {
			arr = append(arr, s+rand()*0.2)
		}
	}
	sort.Float64s(arr)
	r, err := NewRule(10, int64(time.Second), 20)
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ in, ok, no, out int }
	var sec [10]row
	var st QueueState
	var maxWait int64
	for _, a := range arr {
		now := int64(math.Round(a * 1e9))
		s := &sec[int(a)]
		s.in++
		d, next := r.Queue(st, now, 1)
		if !d.Allowed {
			s.no++
			continue
		}
		st = next
		s.ok++
		maxWait = max(maxWait, d.Delay)
		if out := now + d.Delay; out < 10e9 {
			sec[out/1e9].out++
		}
	}
	want := [10]row{{5, 5, 0, 5}, {9, 9, 0, 9}, {41, 24, 17, 10}, {9, 9, 0, 10}, {4, 4, 0, 10},
		{3, 3, 0, 10}, {46, 28, 18, 10}, {4, 4, 0, 10}, {9, 9, 0, 10}, {4, 4, 0, 10}}
	if sec != want {
		t.Errorf("per second (in, ok, rejected, sent):\n got %v\nwant %v (the seed's table)", sec, want)
	}
	if ms := maxWait / 1e6; ms != 1998 {
		t.Errorf("longest wait %d ms, the seed says 1998 ms", ms)
	}
}
