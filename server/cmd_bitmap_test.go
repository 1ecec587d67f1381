package server

import (
	"math/rand/v2"
	"testing"
)

// TestPopcountRange checks BITCOUNT's counting of a bit range, whose first
// and last bytes are cut with masks, against counting bit by bit.
func TestPopcountRange(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		s := make([]byte, 1+r.IntN(6))
		for i := range s {
			s[i] = byte(r.IntN(256))
		}
		n := int64(len(s)) * 8
		lo, hi := r.Int64N(n), r.Int64N(n)
		want := int64(0)
		for i := lo; i <= hi; i++ {
			want += int64(bitOf(s, i))
		}
		if got := popcountRange(s, lo, hi); got != want {
			t.Fatalf("popcountRange(%x, %d, %d) = %d, want %d", s, lo, hi, got, want)
		}
	}
}
