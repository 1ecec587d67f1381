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
