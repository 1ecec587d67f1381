package hotkeys

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// TestFindsHeavyHitters: on a Zipf stream of 200,000 adds over 50,000
// keys, the ten heaviest keys are all listed, each estimate is at least the
// true count and within the sketch's e*N/w error bound.
func TestFindsHeavyHitters(t *testing.T) {
	const adds, keys, depth, width, k = 200_000, 50_000, 4, 1024, 16
	rng := rand.New(rand.NewPCG(5, 6))
	z := rand.NewZipf(rng, 1.1, 1, keys-1)
	s := New(depth, width, k)
	truth := map[string]uint64{}
	for range adds {
		key := fmt.Sprintf("user:%d", z.Uint64())
		truth[key]++
		s.Add(xxhash.Sum64String(key), []byte(key), 1)
	}
	listed := map[string]uint64{}
	for _, it := range s.AppendTop(nil) {
		listed[it.Key] = it.Count
		if it.Count < truth[it.Key] {
			t.Fatalf("%s: estimate %d under the true count %d", it.Key, it.Count, truth[it.Key])
		}
		if bound := truth[it.Key] + uint64(math.Ceil(math.E*adds/width)); it.Count > bound {
			t.Errorf("%s: estimate %d over the bound %d", it.Key, it.Count, bound)
		}
	}
	for i := range 10 {
		key := fmt.Sprintf("user:%d", i) // Zipf: key i is the i-th heaviest (in expectation)
		if _, ok := listed[key]; !ok && truth[key] > truth[fmt.Sprintf("user:%d", 12)] {
			t.Errorf("%s (count %d) is not listed: %v", key, truth[key], listed)
		}
	}
	top := Merge(s.AppendTop(nil), 3)
	if len(top) != 3 || top[0].Key != "user:0" {
		t.Fatalf("top 3: %+v", top)
	}
}

// TestDecay: halving fades old traffic, and a key that was hot before
// yields its place to one that is hot now.
func TestDecay(t *testing.T) {
	s := New(4, 256, 2)
	add := func(key string, n int) {
		for range n {
			s.Add(xxhash.Sum64String(key), []byte(key), 1)
		}
	}
	add("old", 1000)
	add("mid", 500)
	for range 6 {
		s.Decay()
	}
	add("new", 100)
	top := Merge(s.AppendTop(nil), 2)
	if top[0].Key != "new" || top[0].Count != 100 {
		t.Fatalf("after decay: %+v", top)
	}
	if top[1].Key != "old" || top[1].Count != 1000>>6 {
		t.Fatalf("after decay: %+v", top)
	}
	s.Reset()
	if len(s.AppendTop(nil)) != 0 {
		t.Fatal("reset kept keys")
	}
}

// TestAddDoesNotAllocate: counting a key that does not enter the list
// allocates nothing (the CL.THROTTLE path must stay allocation-free).
func TestAddDoesNotAllocate(t *testing.T) {
	s := New(4, 1024, 4)
	hot := []byte("hot")
	for range 100 {
		s.Add(xxhash.Sum64(hot), hot, 1)
	}
	cold := []byte("cold:0000")
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		i++
		cold[5+i%4] = byte('0' + i%10)
		s.Add(xxhash.Sum64(cold), cold, 1)
		s.Add(xxhash.Sum64(hot), hot, 1)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per Add", allocs)
	}
}

func BenchmarkAdd(b *testing.B) {
	s := New(4, 1024, 16)
	keys := make([][]byte, 4096)
	hashes := make([]uint64, len(keys))
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "rl:%d", i)
		hashes[i] = xxhash.Sum64(keys[i])
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		j := i & (len(keys) - 1)
		s.Add(hashes[j], keys[j], 1)
	}
}
