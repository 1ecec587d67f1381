package shards

import (
	"bytes"
	"strconv"
	"testing"
)

// TestParseCanonicalInt covers the edges of the int64 range and the forms
// that are not canonical. 20-digit values just above 2^64-1 used to wrap
// around in the uint64 accumulator (…616 parsed as 0, …617 as 1).
func TestParseCanonicalInt(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"1", 1, true},
		{"-1", -1, true},
		{"42", 42, true},
		{"9223372036854775807", 9223372036854775807, true},
		{"-9223372036854775808", -9223372036854775808, true},
		{"9223372036854775808", 0, false},
		{"-9223372036854775809", 0, false},
		{"9223372036854775810", 0, false},
		{"10000000000000000000", 0, false},
		{"18446744073709551615", 0, false},
		{"18446744073709551616", 0, false},
		{"18446744073709551617", 0, false},
		{"18446744073709551619", 0, false},
		{"18446744073709551620", 0, false},
		{"-18446744073709551616", 0, false},
		{"-18446744073709551617", 0, false},
		{"99999999999999999999", 0, false},
		{"-99999999999999999999", 0, false},
		{"100000000000000000000", 0, false},
		{"-0", 0, false},
		{"007", 0, false},
		{"-007", 0, false},
		{"00", 0, false},
		{"", 0, false},
		{"-", 0, false},
		{"+1", 0, false},
		{"--1", 0, false},
		{" 1", 0, false},
		{"1 ", 0, false},
		{"1a", 0, false},
		{"1.0", 0, false},
		{"0x10", 0, false},
	} {
		n, ok := ParseCanonicalInt([]byte(c.in))
		if n != c.want || ok != c.ok {
			t.Errorf("ParseCanonicalInt(%q) = %d, %v; want %d, %v", c.in, n, ok, c.want, c.ok)
		}
	}
}

// FuzzParseCanonicalInt checks ParseCanonicalInt against strconv: it accepts
// exactly the strings that strconv.FormatInt produces, and BytesEntry keeps
// every value's bytes.
func FuzzParseCanonicalInt(f *testing.F) {
	for _, s := range []string{
		"0", "-0", "1", "-1", "007", "", "-", "+1", "9223372036854775807",
		"9223372036854775808", "-9223372036854775808", "-9223372036854775809",
		"18446744073709551615", "18446744073709551616", "18446744073709551617",
		"18446744073709551619", "99999999999999999999", "-18446744073709551617",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, ok := ParseCanonicalInt(b)
		want, err := strconv.ParseInt(string(b), 10, 64)
		canonical := err == nil && strconv.FormatInt(want, 10) == string(b)
		if ok != canonical || (ok && n != want) {
			t.Fatalf("ParseCanonicalInt(%q) = %d, %v; strconv: %d, canonical %v", b, n, ok, want, canonical)
		}
		if !ok && n != 0 {
			t.Fatalf("ParseCanonicalInt(%q) = %d, false; want 0 when not ok", b, n)
		}
		e := BytesEntry(b, 0)
		if got := e.AppendString(nil); !bytes.Equal(got, b) {
			t.Fatalf("BytesEntry(%q).AppendString = %q", b, got)
		}
		if e.StrLen() != len(b) {
			t.Fatalf("BytesEntry(%q).StrLen() = %d", b, e.StrLen())
		}
		if (e.Kind == KindInt) != ok {
			t.Fatalf("BytesEntry(%q).Kind = %d, canonical int %v", b, e.Kind, ok)
		}
	})
}
