package script

import (
	"math"
	"math/big"
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

// checkParseDecimal compares parseDecimal with strconv.ParseFloat for s
// and reports whether the fast path took it.
func checkParseDecimal(t testing.TB, s string) bool {
	t.Helper()
	got, ok := parseDecimal(s)
	if !ok {
		return false
	}
	want, err := strconv.ParseFloat(s, 64)
	if err != nil || math.Float64bits(got) != math.Float64bits(want) {
		t.Fatalf("parseDecimal(%q) = %v (%b); ParseFloat: %v (%b), %v", s, got, math.Float64bits(got), want, math.Float64bits(want), err)
	}
	return true
}

// TestParseDecimal: what "%.17g" writes of numbers across the fast path's
// range (times as redis_rate stores them included) parses back through it
// to the same bits as strconv, and nearly always takes it; so do random
// decimal texts of up to 19 digits, near ties included (decimals of
// numbers halfway between two doubles, and one digit off them), which it
// either declines or reads as strconv reads them.
func TestParseDecimal(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	const n = 200000
	formatted, took := 0, 0
	for i := range n {
		var f float64
		switch i % 3 {
		case 0: // any mantissa, any scale from 2^-11 to 2^52
			f = math.Ldexp(float64(1<<52|rng.Uint64N(1<<52)), -1-rng.IntN(63))
		case 1: // times as redis_rate stores them
			f = float64(3e8+rng.Int64N(1e8)) + 0.1*float64(rng.IntN(100)) + rng.Float64()
		case 2: // small delays
			f = rng.Float64()*10 + 0.001
		}
		s, ok := appendGFast(nil, f, 17)
		if !ok || len(s) > 20 {
			continue
		}
		formatted++
		if !checkParseDecimal(t, string(s)) {
			continue
		}
		took++
		if got, _ := parseDecimal(string(s)); got != f {
			t.Fatalf("parseDecimal(%q) = %v, want %v", s, got, f)
		}
	}
	if formatted < n/2 || took < formatted*99/100 {
		t.Fatalf("formatted %d of %d, the fast path took %d of them", formatted, n, took)
	}
	texts, tookTexts, ties := 0, 0, 0
	for range n {
		// A random decimal: 1 to 19 digits, the point anywhere inside.
		digits := make([]byte, 1+rng.IntN(19))
		for j := range digits {
			digits[j] = byte('0' + rng.IntN(10))
		}
		at := 1 + rng.IntN(len(digits))
		if at == len(digits) {
			continue
		}
		s := string(digits[:at]) + "." + string(digits[at:])
		texts++
		if checkParseDecimal(t, s) {
			tookTexts++
		}
		// A tie: the exact decimal of a number halfway between two doubles,
		// (mant + 1/2) / 2^k (ties have few digits only for k <= 3), then
		// with one more digit at its end.
		k := 1 + rng.IntN(3)
		mant := 1<<52 | rng.Uint64N(1<<52)
		mid := new(big.Float).SetPrec(200).SetInt(new(big.Int).SetUint64(2*mant + 1))
		mid.SetMantExp(mid, -(k + 1))
		if tie := mid.Text('f', k+1); len(tie) <= 20 {
			ties++
			if checkParseDecimal(t, tie) {
				t.Fatalf("parseDecimal took the tie %q", tie)
			}
			checkParseDecimal(t, tie+"1")
			checkParseDecimal(t, tie[:len(tie)-1]+"4")
		}
	}
	if tookTexts < texts/2 || ties < n/2 {
		t.Fatalf("the fast path took %d of %d random decimals; %d ties", tookTexts, texts, ties)
	}
	for _, s := range []string{"", ".", "1.", ".5", "1.5.", "-1.5", "+1.5", "1e5", "1.5e3", " 1.5", "1.5 ", "0x1.8",
		"12345678901234567890.5", "1.00000000000000000001", "inf", "nan", "1_0.5", "100", "0", "0.0", "0.5", "0.25"} {
		if f, ok := parseDecimal(s); ok {
			t.Errorf("parseDecimal(%q) = %v: took a text it should decline", s, f)
		}
	}
	for _, s := range []string{"0.1", "0.10000000000000001", "313123456.80000001", "9.9999999999999982", "0.3", "2.675"} {
		if !checkParseDecimal(t, s) {
			t.Errorf("parseDecimal(%q) declined", s)
		}
	}
}

// TestNearestDouble checks the exactness test of parseDecimal against
// math/big: for random m/10^d (whatever their size), the double nearest
// to it and its two neighbours, nearestDouble accepts the nearest and
// only it, unless it is out of its range, a power of two or a tie.
func TestNearestDouble(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 17))
	accepted := 0
	const n = 100000
	for i := range n {
		d := 1 + rng.IntN(19)
		m := 1 + rng.Uint64N(pow10[19]-1)
		if i%2 == 0 { // values from 1 to 10^9, where times lie: below 10^19 with d <= 10
			d = 1 + rng.IntN(10)
			m = (1+rng.Uint64N(1e9-1))*pow10[d] + rng.Uint64N(pow10[d])
		}
		v := new(big.Rat).SetFrac(new(big.Int).SetUint64(m), new(big.Int).SetUint64(pow10[d]))
		want, _ := v.Float64()
		for _, c := range []float64{want, math.Nextafter(want, math.Inf(1)), math.Nextafter(want, 0)} {
			got := nearestDouble(m, d, c)
			if got && c != want {
				t.Fatalf("nearestDouble(%d, %d, %v) accepted; the nearest is %v", m, d, c, want)
			}
			if c != want {
				continue
			}
			// Where it may decline the nearest: out of range, a power of
			// two, a tie.
			frac, exp := math.Frexp(c)
			inRange := c >= 0x1p-11 && c < 0x1p52 && c != math.Trunc(c) && frac != 0.5
			gap := new(big.Rat).SetFloat64(math.Ldexp(1, exp-53))
			dist := new(big.Rat).Sub(v, new(big.Rat).SetFloat64(c))
			tie := new(big.Rat).Mul(dist.Abs(dist), big.NewRat(2, 1)).Cmp(gap) == 0
			if got && tie {
				t.Fatalf("nearestDouble(%d, %d, %v) accepted a tie", m, d, c)
			}
			if inRange && !tie && !got {
				t.Fatalf("nearestDouble(%d, %d, %v) declined the nearest double", m, d, c)
			}
			if got {
				accepted++
			}
		}
	}
	if accepted < n/4 {
		t.Fatalf("accepted %d of %d", accepted, n)
	}
}

// FuzzParseDecimal: for any text the fast path either declines or reads
// what strconv reads.
func FuzzParseDecimal(f *testing.F) {
	for _, s := range []string{"0.5", "313123456.80000001", "1.5e3", "00.5", "123456789012345678.9", "4503599627370495.5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkParseDecimal(t, s) })
}

// BenchmarkParseNumber reads a time as redis_rate stores it ("%.17g" of
// seconds since 2017), as tonumber does: parseDecimal's path, and
// strconv's for comparison.
func BenchmarkParseNumber(b *testing.B) {
	const s = "313123456.80000001"
	b.Run("parseNumber", func(b *testing.B) {
		for b.Loop() {
			if _, ok := parseNumber(s); !ok {
				b.Fatal("declined")
			}
		}
	})
	b.Run("strconv", func(b *testing.B) {
		for b.Loop() {
			if _, err := strconv.ParseFloat(s, 64); err != nil {
				b.Fatal(err)
			}
		}
	})
}
