package gcra

import "testing"

var benchSink Result

func BenchmarkDecide(b *testing.B) {
	q := mustQuota(b, [3]int64{15, 30, 60})
	cases := []struct {
		name   string
		tat    int64
		exists bool
		n      int64
	}{
		{"fresh", 0, false, 1},
		{"allowed", now0 + 10*sec, true, 1},
		{"limited", now0 + 40*sec, true, 1},
		{"never", now0, true, 17},
		{"refund", now0 + 10*sec, true, -2},
		{"peek", now0 + 10*sec, true, 0},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				benchSink = Decide(c.tat, c.exists, now0, q, c.n)
			}
		})
	}
}

func BenchmarkDecideReply(b *testing.B) {
	q := mustQuota(b, [3]int64{15, 30, 60})
	var sink [5]int64
	b.ReportAllocs()
	for b.Loop() {
		sink = Decide(now0+10*sec, true, now0, q, 1).Reply()
	}
	_ = sink
}
