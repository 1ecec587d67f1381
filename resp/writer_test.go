package resp

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestAppendLine compares appendLine with strconv on the edges of every
// digit count, both signs and the extremes.
func TestAppendLine(t *testing.T) {
	check := func(n int64) {
		want := ":" + strconv.FormatInt(n, 10) + "\r\n"
		if got := string(appendLine([]byte("x"), ':', n)); got != "x"+want {
			t.Fatalf("appendLine(%d) = %q, want %q", n, got, "x"+want)
		}
	}
	check(math.MinInt64)
	check(math.MaxInt64)
	for p := int64(1); p > 0 && p <= math.MaxInt64/10; p *= 10 {
		for _, n := range []int64{p - 1, p, p + 1, 2*p - 1, 5 * p, 10*p - 1} {
			check(n)
			check(-n)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 100000; i++ {
		check(int64(rng.Uint64()) >> rng.IntN(64))
	}
}

// PutDigits writes a number's last digits at any width, zero-padded,
// as %0*d would show them (cut to the width).
func TestPutDigits(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for range 10000 {
		q := rng.Uint64() >> rng.IntN(64)
		width := rng.IntN(21)
		d := make([]byte, width)
		PutDigits(d, q)
		want := strconv.FormatUint(q, 10)
		if len(want) < width {
			want = strings.Repeat("0", width-len(want)) + want
		}
		want = want[len(want)-width:]
		if string(d) != want {
			t.Fatalf("PutDigits(%d wide, %d) = %q, want %q", width, q, d, want)
		}
	}
}
