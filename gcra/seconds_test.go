package gcra

import (
	"math"
	"testing"
)

func TestSeconds(t *testing.T) {
	const ms, s = 1_000_000, 1_000_000_000
	tests := []struct {
		name string
		d    int64
		want int64
	}{
		{"zero", 0, 0},
		{"exact seconds not bumped", 2 * s, 2},
		{"1.999 s", 1999 * ms, 2},
		{"1.0010 s", 1001 * ms, 2},
		{"2.0009 s drops sub-ms remainder", 2*s + 900_000, 2},
		{"2.0019 s", 2*s + 1_900_000, 3},
		{"0.06 s", 60 * ms, 1},
		{"0.000999 s", 999_000, 0},
		{"exactly 1 ms", ms, 1},
		{"1 ms minus 1 ns", ms - 1, 0},
		{"1 ns", 1, 0},
		{"-2 s", -2 * s, -2},
		{"-0.5 s", -500 * ms, 0},
		{"-2.5 s never bumped", -2*s - 500*ms, -2},
		{"-1 ns", -1, 0},
		{"MaxInt64", math.MaxInt64, 9223372037},
		{"MinInt64", math.MinInt64, -9223372036},
		// From 2^24 s on, sec + nsec/1e9 rounds up in float64; redis-cell
		// then replies 2 more than the whole seconds.
		{"float rounding at 2^24 s", (1<<24)*s + 999_999_999, 1<<24 + 2},
		{"no float rounding below 2^24 s", (1<<24-1)*s + 999_999_999, 1 << 24},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Seconds(tc.d); got != tc.want {
				t.Errorf("Seconds(%d) = %d, want %d", tc.d, got, tc.want)
			}
		})
	}
}

func TestReply(t *testing.T) {
	tests := []struct {
		name string
		r    Result
		want [5]int64
	}{
		{"allowed", Result{Limit: 16, Remaining: 15, RetryAfter: -1, ResetAfter: 2e9}, [5]int64{0, 16, 15, -1, 2}},
		{"limited with retry", Result{Limited: true, Limit: 16, RetryAfter: 1_984_000_000, ResetAfter: 31_984_000_000}, [5]int64{1, 16, 0, 2, 32}},
		{"limited never", Result{Limited: true, Limit: 16, Remaining: 16, RetryAfter: -1}, [5]int64{1, 16, 16, -1, 0}},
		{"limited sub-ms retry", Result{Limited: true, Limit: 1, RetryAfter: 500_000, ResetAfter: 500_000}, [5]int64{1, 1, 0, 0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.Reply(); got != tc.want {
				t.Errorf("Reply() = %v, want %v", got, tc.want)
			}
		})
	}
}
