package persistence

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/turnstile/turnstile/shards"
)

// gcraEffect is what CL.THROTTLE logs: a TAT with the same expiry.
func gcraEffect(i int64) Effect {
	tat := 1_700_000_000_000_000_000 + i
	return Effect{Op: OpSet, DB: 0, Key: []byte("ratelimit:user:123456"), Entry: shards.IntEntry(tat, tat)}
}

func openBenchLog(b *testing.B, policy FsyncPolicy) *Log {
	b.Helper()
	l, err := OpenLog(LogConfig{Dir: b.TempDir(), Name: "appendonly.aof", Fsync: policy})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := l.Load(func(Effect) error { return nil }); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return l
}

// BenchmarkAppend: the cost under the shard lock (a write every 4096
// effects keeps the buffer from growing without bound).
func BenchmarkAppend(b *testing.B) {
	l := openBenchLog(b, FsyncNo)
	e := gcraEffect(0)
	b.ReportAllocs()
	b.ResetTimer()
	var off int64
	for i := 0; b.Loop(); i++ {
		off = l.Append(e)
		if i&4095 == 4095 {
			l.Sync(off)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(l.Stats().IncrSize)/float64(l.Stats().Effects), "bytes/effect")
}

// BenchmarkAppendSync: Append then Sync from many goroutines, as
// connections do before replying; reports how many effects one write and
// one fsync cover (group commit).
func BenchmarkAppendSync(b *testing.B) {
	for _, policy := range []FsyncPolicy{FsyncNo, FsyncEverySec, FsyncAlways} {
		for _, par := range []int{1, 16} {
			b.Run(fmt.Sprintf("%v/goroutines=%dxGOMAXPROCS", policy, par), func(b *testing.B) {
				l := openBenchLog(b, policy)
				var n atomic.Int64
				b.SetParallelism(par)
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					i := n.Add(1 << 32)
					for pb.Next() {
						i++
						if err := l.Sync(l.Append(gcraEffect(i))); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.StopTimer()
				st := l.Stats()
				b.ReportMetric(float64(st.Effects)/float64(max(st.Writes, 1)), "effects/write")
				if st.Fsyncs > 0 {
					b.ReportMetric(float64(st.Effects)/float64(st.Fsyncs), "effects/fsync")
					if policy == FsyncAlways {
						b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(st.Fsyncs), "µs/fsync")
					}
				}
			})
		}
	}
}

func benchKeyspace(n int) DumpFunc {
	return func(emit EmitFunc) error {
		var key [32]byte
		for i := range n {
			k := fmt.Appendf(key[:0], "ratelimit:user:%d", i)
			tat := 1_700_000_000_000_000_000 + int64(i)
			if err := emit(0, k, shards.IntEntry(tat, tat)); err != nil {
				return err
			}
		}
		return nil
	}
}

// BenchmarkSnapshot writes and loads a snapshot of 10^6 GCRA keys (one op
// = the whole snapshot).
func BenchmarkSnapshot(b *testing.B) {
	const keys = 1_000_000
	path := b.TempDir() + "/dump.tsdb"
	b.Run("write", func(b *testing.B) {
		for b.Loop() {
			if err := WriteSnapshot(nil, path, benchKeyspace(keys)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/keys, "ns/key")
	})
	b.Run("load", func(b *testing.B) {
		if err := WriteSnapshot(nil, path, benchKeyspace(keys)); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			n := 0
			if _, err := LoadSnapshot(nil, path, func(int, []byte, shards.Entry) error { n++; return nil }); err != nil || n != keys {
				b.Fatal(err, n)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/keys, "ns/key")
	})
}
