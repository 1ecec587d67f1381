package coll

import (
	"strconv"
	"testing"
)

// BenchmarkZSetSlidingLog is the sliding-log limiter's write path on a
// key that holds 50 entries: drop the entries older than the window, add
// now (member = score = a millisecond timestamp), count.
func BenchmarkZSetSlidingLog(b *testing.B) {
	const window = 1000
	const step = window / 50
	z := NewZSet()
	now := int64(1764600000000)
	var minBuf, maxBuf, nowBuf [24]byte
	args := make([][]byte, 2)
	zadd := make([][]byte, 2)
	tick := func() {
		now += step
		args[0] = append(minBuf[:0], '0')
		args[1] = strconv.AppendInt(maxBuf[:0], now-window, 10)
		if _, _, err := Apply(z, OpZRemRangeByScore, args); err != nil {
			b.Fatal(err)
		}
		n := strconv.AppendInt(nowBuf[:0], now, 10)
		zadd[0], zadd[1] = n, n
		if _, _, err := Apply(z, OpZAdd, zadd); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < 100; i++ {
		tick()
	}
	if z.Len() != 50 {
		b.Fatalf("%d members", z.Len())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tick()
		if z.Len() != 50 {
			b.Fatal(z.Len())
		}
	}
	b.ReportMetric(float64(z.MemoryUsage()), "value-bytes")
}

// BenchmarkZSetRead reads a 50-member packed set and a 1000-member
// skiplist: score lookup, rank, and a 10-member score range.
func BenchmarkZSetRead(b *testing.B) {
	for _, n := range []int{50, 1000} {
		z := NewZSet()
		for i := 0; i < n; i++ {
			s := strconv.FormatInt(1764600000000+int64(i)*20, 10)
			Apply(z, OpZAdd, zargs(s, s))
		}
		mid := []byte(strconv.FormatInt(1764600000000+int64(n/2)*20, 10))
		r, _ := ParseScoreRange([]byte(strconv.FormatInt(1764600000000+int64(n/2)*20, 10)), []byte("+inf"))
		b.Run(z.Encoding(), func(b *testing.B) {
			b.ReportAllocs()
			sum := 0.0
			for i := 0; i < b.N; i++ {
				s, _ := z.Score(mid)
				rank, _, _ := z.Rank(mid, false)
				lo, _ := z.ScoreRanks(r)
				z.Walk(lo, 10, false, func(m []byte, sc float64) bool {
					sum += sc
					return true
				})
				sum += s + float64(rank)
			}
			_ = sum
		})
	}
}
