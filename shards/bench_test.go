package shards

import (
	"fmt"
	"sync"
	"testing"
)

func benchKeys(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("user:%011d", i))
	}
	return keys
}

// BenchmarkMapLookup is the shard lookup of a hot command: hash, lock,
// probe, decode, unlock.
func BenchmarkMapLookup(b *testing.B) {
	m := New(256)
	keys := benchKeys(1 << 16)
	for _, k := range keys {
		i := m.ShardOf(k)
		m.Lock(i)
		m.Put(k, IntEntry(1<<62, 1<<62))
		m.Unlock(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := keys[i&(len(keys)-1)]
		s := m.ShardOf(k)
		m.Lock(s)
		if _, ok := m.Get(k, 0); !ok {
			b.Fatal("missing")
		}
		m.Unlock(s)
	}
}

// BenchmarkUpdateParallel is a read-modify-write (the CL.THROTTLE pattern)
// from all CPUs on the sharded map, next to a single-mutex Go map and a
// sync.Map as baselines.
func BenchmarkUpdateParallel(b *testing.B) {
	keys := benchKeys(1 << 16)
	b.Run("shards", func(b *testing.B) {
		m := New(256)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				k := keys[i&(len(keys)-1)]
				i += 7
				s := m.ShardOf(k)
				m.Lock(s)
				e, ref, _ := m.Lookup(k, 0)
				m.Set(ref, IntEntry(e.Int+1, 0))
				m.Unlock(s)
			}
		})
	})
	b.Run("mutex-map", func(b *testing.B) {
		var mu sync.Mutex
		m := map[string]int64{}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				k := keys[i&(len(keys)-1)]
				i += 7
				mu.Lock()
				m[string(k)]++
				mu.Unlock()
			}
		})
	})
	b.Run("sync.Map", func(b *testing.B) {
		var m sync.Map
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				k := keys[i&(len(keys)-1)]
				i += 7
				v, _ := m.Load(string(k))
				n, _ := v.(int64)
				m.Store(string(k), n+1) // not atomic: a baseline for speed only
			}
		})
	})
}

// BenchmarkLookupLarge is a CL.THROTTLE-like read-modify-write of random
// keys in maps too large for any cache, with slot arrays on the Go heap and
// in huge-page mappings (slotmem.go). Run it with -benchtime=2000000x.
func BenchmarkLookupLarge(b *testing.B) {
	for _, n := range []int{1e5, 1e6, 1e7} {
		for _, mapped := range []bool{false, true} {
			b.Run(fmt.Sprintf("keys=%d/mapped=%v", n, mapped), func(b *testing.B) {
				if n >= 1e7 && testing.Short() {
					b.Skip("large")
				}
				m := New(128)
				if !mapped {
					for i := range m.shards {
						m.shards[i].t.alloc = slotAlloc{}
					}
				}
				key := []byte("key:000000000000")
				setKey := func(v uint64) {
					for j := len(key) - 1; j >= 4; j-- {
						key[j] = byte('0' + v%10)
						v /= 10
					}
				}
				for i := range n {
					setKey(uint64(i))
					s := m.ShardOf(key)
					m.Lock(s)
					m.Put(key, IntEntry(1<<62, 1<<62))
					m.Unlock(s)
				}
				x := uint64(88172645463325252)
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					x ^= x << 13
					x ^= x >> 7
					x ^= x << 17
					setKey(x % uint64(n))
					s := m.ShardOf(key)
					m.Lock(s)
					e, ref, ok := m.Lookup(key, 0)
					if !ok {
						b.Fatal("missing")
					}
					m.Set(ref, IntEntry(e.Int-1, e.Int-1))
					m.Unlock(s)
				}
				b.StopTimer()
				b.ReportMetric(float64(m.MappedBytes())/float64(n), "mappedB/key")
			})
		}
	}
}

// BenchmarkPipelinePrefetch runs batches of 16 random-key read-modify-writes
// (a pipelined CL.THROTTLE burst) with and without the two-stage prefetch.
func BenchmarkPipelinePrefetch(b *testing.B) {
	for _, n := range []int{1e3, 1e5, 1e6, 1e7} {
		m := New(128)
		keys := make([][]byte, n)
		for i := range n {
			keys[i] = fmt.Appendf(nil, "key:%012d", i)
			s := m.ShardOf(keys[i])
			m.Lock(s)
			m.Put(keys[i], IntEntry(1<<62, 1<<62))
			m.Unlock(s)
		}
		for _, pf := range []bool{false, true} {
			b.Run(fmt.Sprintf("keys=%d/prefetch=%v", n, pf), func(b *testing.B) {
				x := uint64(88172645463325252)
				batch := make([][]byte, 16)
				b.ReportAllocs()
				b.ResetTimer()
				for done := 0; done < b.N; done += len(batch) {
					for j := range batch {
						x ^= x << 13
						x ^= x >> 7
						x ^= x << 17
						batch[j] = keys[x%uint64(n)]
					}
					for j, k := range batch {
						if pf {
							if j+2 < len(batch) {
								m.PrefetchSlot(m.Hash(batch[j+2]))
							}
							if j+1 < len(batch) {
								m.PrefetchRecord(m.Hash(batch[j+1]))
							}
						}
						s := m.ShardOf(k)
						m.Lock(s)
						e, ref, _ := m.Lookup(k, 0)
						m.Set(ref, IntEntry(e.Int-1, e.Int-1))
						m.Unlock(s)
					}
				}
			})
		}
	}
}

// BenchmarkExpireMass is active expiry's cost per key when every key of a
// large keyspace has expired (GCRA keys, expiry in the slot): the work the
// server's expiry slices do after a mass expiry, which holds up requests.
func BenchmarkExpireMass(b *testing.B) {
	const n = 1 << 20
	keys := benchKeys(n)
	b.ReportAllocs()
	var removed int
	for b.Loop() {
		b.StopTimer()
		m := New(64)
		for _, k := range keys {
			s := m.ShardOf(k)
			m.Lock(s)
			m.Put(k, IntEntry(1000, 1000))
			m.Unlock(s)
		}
		b.StartTimer()
		for m.Len() > 0 {
			removed += m.ExpireCycle(2000, m.NumShards())
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(removed), "ns/key")
}
