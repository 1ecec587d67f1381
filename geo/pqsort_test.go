package geo

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPartialSort: the positions asked for hold the keys a full sort puts
// there, for arrays with and without many equal keys, of every size the
// algorithm treats differently (insertion sort, median of three, of nine).
func TestPartialSort(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 3000 {
		n := 1 + r.IntN(120)
		keys := 1 + r.IntN(n)
		a := make([]int, n)
		for i := range a {
			a[i] = r.IntN(keys)
		}
		lo := r.IntN(n)
		hi := lo + r.IntN(n-lo)
		want := slices.Clone(a)
		slices.Sort(want)
		got := slices.Clone(a)
		PartialSort(got, cmp.Compare[int], lo, hi)
		if !slices.Equal(got[lo:hi+1], want[lo:hi+1]) {
			t.Fatalf("n=%d, [%d, %d]: got %v, want %v", n, lo, hi, got[lo:hi+1], want[lo:hi+1])
		}
		full := slices.Clone(a)
		PartialSort(full, cmp.Compare[int], 0, n-1)
		if !slices.Equal(full, want) {
			t.Fatalf("n=%d: a full partial sort gave %v", n, full)
		}
	}
}
