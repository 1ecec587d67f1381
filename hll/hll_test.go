package hll

import (
	"crypto/sha1"
	"encoding/hex"
	"strconv"
	"testing"
)

// addAll adds the elements prefix+1 … prefix+n in order, in PFADDs of up
// to 1000 (the same registers change in the same order as one element per
// PFADD, which is how the golden values below were made on redis-server
// 7.0.15; only the cache, invalidated either way, is written less often).
func addAll(t *testing.T, prefix string, n int) []byte {
	t.Helper()
	var v []byte
	batch := make([][]byte, 0, 1000)
	for i := 1; i <= n; i++ {
		batch = append(batch, []byte(prefix+strconv.Itoa(i)))
		if len(batch) == cap(batch) || i == n {
			var err error
			if v, _, err = Add(v, batch, DefaultSparseMaxBytes); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	return v
}

// TestRedisGolden compares values and counts with what redis-server 7.0.15
// answered for the same adds: the value's SHA1, length and PFCOUNT (sparse,
// dense after the sparse limit, and a million elements).
func TestRedisGolden(t *testing.T) {
	cases := []struct {
		prefix string
		n      int
		count  uint64
		sha1   string
		len    int
	}{
		{"e", 300, 302, "d62c7f8a65610ee5c12682890ad5eac1571252f0", 713},
		{"", 20000, 19891, "531fa35e5e3ad15555521d4dac106323d542c2b2", DenseSize},
		{"u", 1000000, 1005024, "d1c62e3ec9d410726742bb351d62006321fc6baa", DenseSize},
	}
	for _, c := range cases {
		v := addAll(t, c.prefix, c.n)
		n, err := Count(v)
		if err != nil {
			t.Fatal(err)
		}
		v = WithCache(v, n) // Redis's SHA1 was taken after PFCOUNT cached it
		sum := sha1.Sum(v)
		if n != c.count || hex.EncodeToString(sum[:]) != c.sha1 || len(v) != c.len {
			t.Errorf("%q×%d: count %d, sha1 %x, %d bytes; Redis: %d, %s, %d", c.prefix, c.n, n, sum, len(v), c.count, c.sha1, c.len)
		}
	}
	v, changed, err := Add(nil, [][]byte{[]byte("a"), []byte("b"), []byte("c")}, DefaultSparseMaxBytes)
	want := "48594c4c01000000000000000000008060f38050b1844bfb80425a" // GET after PFADD d a b c
	if err != nil || !changed || hex.EncodeToString(v) != want {
		t.Errorf("PFADD a b c: %x, %v, %v; Redis: %s", v, changed, err, want)
	}
}

// TestSparseLimit: the value turns dense at the same add as on Redis,
// the first whose sparse form would pass 3000 bytes (redis-server 7.0.15:
// 2,999 bytes after "s1" … "s1680", dense after "s1681").
func TestSparseLimit(t *testing.T) {
	v := addAll(t, "s", 1680)
	sum := sha1.Sum(v)
	if IsDense(v) || len(v) != 2999 || hex.EncodeToString(sum[:]) != "c55b9d068827c0915eaf0156d437f46e907701c3" {
		t.Fatalf("after 1680: dense %v, %d bytes, sha1 %x; Redis: sparse, 2999 bytes, c55b9d06…", IsDense(v), len(v), sum)
	}
	v, _, _ = Add(v, [][]byte{[]byte("s1681")}, DefaultSparseMaxBytes)
	if !IsDense(v) || len(v) != DenseSize {
		t.Fatalf("after 1681: dense %v, %d bytes; Redis: dense", IsDense(v), len(v))
	}
}

// TestMergeMatchesAdds: merging two values counts and stores what adding
// all their elements to one does, sparse or dense.
func TestMergeMatchesAdds(t *testing.T) {
	for _, n := range []int{50, 5000} {
		a, b := addAll(t, "a", n), addAll(t, "b", n)
		var regs Registers
		if err := regs.Merge(a); err != nil {
			t.Fatal(err)
		}
		if err := regs.Merge(b); err != nil {
			t.Fatal(err)
		}
		both := a
		for i := 1; i <= n; i++ {
			both, _, _ = Add(both, [][]byte{[]byte("b" + strconv.Itoa(i))}, DefaultSparseMaxBytes)
		}
		want, _ := Count(both)
		if got := regs.Count(); got != want {
			t.Errorf("n=%d: merged count %d, added count %d", n, got, want)
		}
		m, err := regs.Store(nil, IsDense(a) || IsDense(b), DefaultSparseMaxBytes)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := Count(m); got != want {
			t.Errorf("n=%d: stored merge counts %d, want %d", n, got, want)
		}
	}
}
