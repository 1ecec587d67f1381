package shards

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/turnstile/turnstile/resp"
)

// FuzzIntEncoding checks resp.ParseInt against strconv: it accepts
// exactly the strings that strconv.FormatInt produces, and BytesEntry keeps
// every value's bytes.
func FuzzIntEncoding(f *testing.F) {
	for _, s := range []string{
		"0", "-0", "1", "-1", "007", "", "-", "+1", "9223372036854775807",
		"9223372036854775808", "-9223372036854775808", "-9223372036854775809",
		"18446744073709551615", "18446744073709551616", "18446744073709551617",
		"18446744073709551619", "99999999999999999999", "-18446744073709551617",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, ok := resp.ParseInt(b)
		want, err := strconv.ParseInt(string(b), 10, 64)
		canonical := err == nil && strconv.FormatInt(want, 10) == string(b)
		if ok != canonical || (ok && n != want) {
			t.Fatalf("resp.ParseInt(%q) = %d, %v; strconv: %d, canonical %v", b, n, ok, want, canonical)
		}
		if !ok && n != 0 {
			t.Fatalf("resp.ParseInt(%q) = %d, false; want 0 when not ok", b, n)
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
