package resp

import "testing"

// TestParseInt covers the edges of the int64 range and the forms
// that are not canonical. 20-digit values just above 2^64-1 used to wrap
// around in the uint64 accumulator (…616 parsed as 0, …617 as 1).
func TestParseInt(t *testing.T) {
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
		n, ok := ParseInt([]byte(c.in))
		if n != c.want || ok != c.ok {
			t.Errorf("ParseInt(%q) = %d, %v; want %d, %v", c.in, n, ok, c.want, c.ok)
		}
	}
}
