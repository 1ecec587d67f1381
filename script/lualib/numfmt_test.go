package lualib

import (
	"fmt"
	"math"
	"testing"
)

func TestFormatG(t *testing.T) {
	cases := []struct {
		f    float64
		prec int
		want string
	}{
		{0, 14, "0"},
		{math.Copysign(0, -1), 14, "-0"},
		{1, 14, "1"},
		{-1, 14, "-1"},
		{1.5, 14, "1.5"},
		{0.1, 14, "0.1"},
		{1.0 / 3, 14, "0.33333333333333"},
		{100, 14, "100"},
		{1e14, 14, "1e+14"},
		{99999999999999, 14, "99999999999999"},
		{123456789012345, 14, "1.2345678901234e+14"},
		{1e20, 14, "1e+20"},
		{1e-4, 14, "0.0001"},
		{1e-5, 14, "1e-05"},
		{1.5e-7, 14, "1.5e-07"},
		{1e100, 14, "1e+100"},
		{5e-324, 14, "4.9406564584125e-324"},
		{math.MaxFloat64, 14, "1.7976931348623e+308"},
		{0.000123456, 3, "0.000123"},
		{3.14159, 3, "3.14"},
		{1234567, 3, "1.23e+06"},
		{9.999, 3, "10"},
		{99.95, 3, "100"},
		{999.5, 3, "1e+03"},
		{2.5, 1, "2"},
		{3.5, 1, "4"},
		{math.Inf(1), 14, "inf"},
		{math.Inf(-1), 14, "-inf"},
		{math.Float64frombits(quietNaN), 14, "nan"},
		{math.Float64frombits(quietNaN | 1<<63), 14, "-nan"},
	}
	for _, c := range cases {
		if got := formatG(c.f, c.prec); got != c.want {
			t.Errorf("formatG(%v, %d) = %q, want %q", c.f, c.prec, got, c.want)
		}
	}
}

// TestFormatGMatchesGoG checks formatG against Go's %g where the two agree
// by definition: finite numbers whose exponent form Go and C write alike.
func TestFormatGMatchesGoG(t *testing.T) {
	for i := range 2000 {
		f := math.Float64frombits(uint64(i) * 0x9E3779B97F4A7C15)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		for _, prec := range []int{1, 6, 14} {
			want := fmt.Sprintf("%.*g", prec, f)
			if got := formatG(f, prec); got != want {
				t.Fatalf("formatG(%v, %d) = %q, Go's %%g gives %q", f, prec, got, want)
			}
		}
	}
}

func TestStrtod(t *testing.T) {
	cases := []struct {
		in   string
		want float64
		n    int
	}{
		{"1", 1, 1},
		{"-1.5e3x", -1500, 6},
		{"  42", 42, 4},
		{"1.", 1, 2},
		{".5", 0.5, 2},
		{".", 0, 0},
		{"-", 0, 0},
		{"- 1", 0, 0},
		{"1e", 1, 1},
		{"1e+", 1, 1},
		{"1e+2", 100, 4},
		{"0x10", 16, 4},
		{"0X1p4", 16, 5},
		{"0x1.8p1", 3, 7},
		{"0x", 0, 1},
		{"0xg", 0, 1},
		{"-0x10", -16, 5},
		{"inf", math.Inf(1), 3},
		{"-Infinity!", math.Inf(-1), 9},
		{"infinit", math.Inf(1), 3},
		{"1e400", math.Inf(1), 5},
		{"-1e400", math.Inf(-1), 6},
		{"1e-400", 0, 6},
		{"abc", 0, 0},
		{"", 0, 0},
		{"12345678901234567890123", 12345678901234567890123, 23},
	}
	for _, c := range cases {
		got, n := strtod(c.in)
		if got != c.want || n != c.n {
			t.Errorf("strtod(%q) = %v, %d; want %v, %d", c.in, got, n, c.want, c.n)
		}
	}
}

func TestStrtodNaN(t *testing.T) {
	cases := []struct {
		in   string
		bits uint64
		n    int
	}{
		{"nan", quietNaN, 3},
		{"NaN", quietNaN, 3},
		{"-nan", quietNaN | 1<<63, 4},
		{"nan(123)", quietNaN | 123, 8},
		{"nan(0x10)", quietNaN | 16, 9},
		{"nan(010)", quietNaN | 8, 8},
		{"nan(abc)", quietNaN, 8},
		{"nan()", quietNaN, 5},
		{"nan(", quietNaN, 3},
		{"nan(99999999999999999999999)", quietNaN | (1<<51 - 1), 28},
	}
	for _, c := range cases {
		got, n := strtod(c.in)
		if math.Float64bits(got) != c.bits || n != c.n {
			t.Errorf("strtod(%q) = %#x, %d; want %#x, %d", c.in, math.Float64bits(got), n, c.bits, c.n)
		}
	}
}

func TestStr2Number(t *testing.T) {
	cases := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"10", 10, true},
		{" 10 ", 10, true},
		{"10x", 0, false},
		{"0x10", 16, true},
		{"0x", 0, false},
		{"1e3", 1000, true},
		{"", 0, false},
		{"  ", 0, false},
		{"1\x00junk", 1, true},
		{"abc", 0, false},
		{"-0x10", -16, true},
	}
	for _, c := range cases {
		got, ok := str2number(c.in)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("str2number(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestTruncations(t *testing.T) {
	nan := math.NaN()
	i64 := []struct {
		f    float64
		want int64
	}{{1.9, 1}, {-1.9, -1}, {0x1p63, math.MinInt64}, {-0x1p63, math.MinInt64}, {nan, math.MinInt64}, {math.Inf(1), math.MinInt64}}
	for _, c := range i64 {
		if got := truncInt64(c.f); got != c.want {
			t.Errorf("truncInt64(%v) = %d, want %d", c.f, got, c.want)
		}
	}
	u64 := []struct {
		f    float64
		want uint64
	}{{1.9, 1}, {0x1p63, 1 << 63}, {0x1p64, 0}, {nan, 1 << 63}, {-1, math.MaxUint64}}
	for _, c := range u64 {
		if got := truncUint64(c.f); got != c.want {
			t.Errorf("truncUint64(%v) = %#x, want %#x", c.f, got, c.want)
		}
	}
	if got := truncInt32(0x1p31); got != math.MinInt32 {
		t.Errorf("truncInt32(2^31) = %d", got)
	}
}
