package script

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// checkGFast compares appendGFast with strconv's "%.17g" and with
// appendG14Slow for f, and reports whether the fast path took it.
func checkGFast(t testing.TB, f float64) bool {
	t.Helper()
	took := false
	for _, sig := range []int{6, 8, 9, 14, 17} { // 6 and 8: the digits in one piece
		got, ok := appendGFast([]byte("x"), f, sig)
		if !ok {
			if string(got) != "x" {
				t.Fatalf("%v: declined, but wrote %q", f, got)
			}
			continue
		}
		took = true
		want := strconv.AppendFloat([]byte("x"), f, 'g', sig, 64)
		if sig == 14 {
			want = appendG14Slow([]byte("x"), f)
		}
		if string(got) != string(want) {
			t.Fatalf("%%.%dg of %v (%b): fast %q, want %q", sig, f, math.Float64bits(f), got, want)
		}
	}
	return took
}

// TestAppendGFast: on random numbers across the fast path's range (every
// count of fraction bits, signs, integer parts of every length), on exact
// ties at the rounding digit and on carries into another digit, the fast
// path writes what strconv does (numbers below 1 too), and takes most of them.
func TestAppendGFast(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	took, small, tookSmall := 0, 0, 0
	const n = 200000
	for i := range n {
		var f float64
		switch i % 5 {
		case 0: // any mantissa, any scale from 2^-15 to 2^53
			f = math.Ldexp(float64(1<<52|rng.Uint64N(1<<52)), -rng.IntN(53+15))
		case 4: // below 1, near the powers of ten that set the zeros after the point
			f = math.Nextafter(1/float64(pow10[1+rng.IntN(5)]), float64(rng.IntN(2))) * (1 + float64(rng.IntN(3))*1e-16)
		case 1: // an integer part of p digits and a short binary fraction: ties
			p := 1 + rng.IntN(16)
			f = float64(rng.Int64N(int64(pow10[p]))) + float64(rng.IntN(64))/64
		case 2: // just below a power of ten: carries
			f = math.Nextafter(float64(pow10[1+rng.IntN(15)]), 0) - float64(rng.IntN(3))*1e-9
		case 3: // times as redis_rate writes them: seconds since 2017, tenths added
			f = float64(3e8+rng.Int64N(1e8)) + 0.1*float64(rng.IntN(100)) + rng.Float64()
		}
		if rng.IntN(2) == 0 {
			f = -f
		}
		ok := checkGFast(t, f)
		if ok {
			took++
		}
		if a := math.Abs(f); a >= 1e-4 && a < 1 {
			small++
			if ok {
				tookSmall++
			}
		}
	}
	for _, f := range []float64{1.5, 2.5, 0.5, 0.1, 0.01, 0.001, 1e-4, 0.00009999999999999999, 0.099999999999999999, 0.25, 0.375,
		1e15 + 0.5, 4503599627370495.5, 9.999999999999999, 99999999999999.9, 123456789.123456789} {
		checkGFast(t, f)
	}
	if took < n/2 || tookSmall < small*9/10 {
		t.Fatalf("the fast path took %d of %d, %d of %d below 1", took, n, tookSmall, small)
	}
}

// FuzzAppendGFast: for any float the fast path either declines or agrees
// with strconv.
func FuzzAppendGFast(f *testing.F) {
	for _, v := range []float64{1.5, 313123456.80000001, 9.999999999999999, -2.25} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) { checkGFast(t, v) })
}

// FuzzParseNumber: parseNumber's short-decimal path reads exactly what
// strconv.ParseFloat reads, signs and leading zeros included, and takes
// only strings of 1 to 15 digits after an optional sign.
func FuzzParseNumber(f *testing.F) {
	for _, s := range []string{"0", "-0", "+7", "007", "100", " 42 ", "999999999999999", "1000000000000000",
		"-", "", "1e3", "0x10", "1.5", "12a", "-123456789012345"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseNumber(s)
		body := trimSpace(s)
		if body != "" && (body[0] == '-' || body[0] == '+') {
			body = body[1:]
		}
		n, short := shortDecimal(body)
		digits := body != "" && len(body) <= 15 && strings.Trim(body, "0123456789") == ""
		if short != digits {
			t.Fatalf("shortDecimal(%q) = %d, %v; digits only: %v", body, n, short, digits)
		}
		if !short {
			return
		}
		want, err := strconv.ParseFloat(trimSpace(s), 64)
		if !ok || err != nil || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("parseNumber(%q) = %v, %v; ParseFloat: %v, %v", s, got, ok, want, err)
		}
	})
}

// BenchmarkAppendGFast formats times as redis_rate stores them (%.17g of
// seconds since 2017 with a fraction) and delays as it replies them
// (%.14g of a few seconds).
func BenchmarkAppendGFast(b *testing.B) {
	for _, c := range []struct {
		name string
		f    float64
		sig  int
	}{{"tat17", 313123456.80000001, 17}, {"delay14", 9.8999999999, 14}} {
		b.Run(c.name, func(b *testing.B) {
			var buf [32]byte
			for b.Loop() {
				if _, ok := appendGFast(buf[:0], c.f, c.sig); !ok {
					b.Fatal("declined")
				}
			}
		})
	}
}
