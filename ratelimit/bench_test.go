package ratelimit

import (
	"testing"
	"time"
)

// BenchmarkApplyLog measures ApplyLog on a LOG state of entries entries
// (bench/rl.sh's LOG 100 1s keys hold a few), every request admitted and
// the oldest entry leaving the window, so the state keeps its size.
func BenchmarkApplyLog(b *testing.B) {
	for _, entries := range []int{4, 50} {
		b.Run(map[int]string{4: "entries=4", 50: "entries=50"}[entries], func(b *testing.B) {
			r, err := NewRule(100, int64(time.Second), 0)
			if err != nil {
				b.Fatal(err)
			}
			step := int64(time.Second) / int64(entries)
			now := int64(1_700_000_000_000_000_000)
			st := State{Algo: AlgoLog, Rule: r}
			for range entries {
				now += step
				st.Apply(now, 1)
			}
			enc, dst := AppendState(nil, &st), make([]byte, 0, 1024)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				now += step
				out, d, ok := r.ApplyLog(dst[:0], enc, now, 1)
				if !ok || !d.Allowed {
					b.Fatal("not applied")
				}
				enc, dst = out, enc[:0:cap(enc)]
			}
		})
	}
}
