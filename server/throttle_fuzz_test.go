package server

import (
	"strconv"
	"strings"
	"testing"

	"github.com/turnstile/turnstile/shards"
)

// FuzzParseCellInt checks the CL.THROTTLE integer grammar (Rust's
// str::parse::<i64>) against strconv.ParseInt in base 10, which accepts
// exactly the same strings.
func FuzzParseCellInt(f *testing.F) {
	for _, s := range []string{"15", "+15", "-0", "015", "", " 1", "1 ", "0x10", "1e3", "++1", "-",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809", "１"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseCellInt([]byte(s))
		want, err := strconv.ParseInt(s, 10, 64)
		if ok != (err == nil) || (ok && got != want) {
			t.Fatalf("parseCellInt(%q) = %d, %v; strconv says %d, %v", s, got, ok, want, err)
		}
	})
}

// FuzzThrottleArgs runs CL.THROTTLE in-process with arbitrary arguments and
// a stored value: the reply is always either five integers satisfying the
// GCRA invariants or a "Cell error" / WRONGTYPE error, and never a panic.
func FuzzThrottleArgs(f *testing.F) {
	f.Add("k", "15", "30", "60", "1", "", uint8(5))
	f.Add("k", "0", "1", "3600", "0", "123", uint8(5))
	f.Add("\xfe", "-1", "x", "", "9223372036854775807", "abc", uint8(4))
	f.Add("k", "9223372036854775807", "1", "1", "-9223372036854775808", "18446744073709551615", uint8(5))
	srv, c := newPathClient(f)
	f.Fuzz(func(t *testing.T, key, burst, count, period, qty, stored string, argc uint8) {
		db := srv.dbs[0]
		kb := []byte(key)
		i := db.ShardOf(kb)
		db.Lock(i)
		db.Delete(kb, 0)
		if stored != "" {
			db.Put(kb, shardsBytesEntry(stored))
		}
		db.Unlock(i)
		args := [][]byte{[]byte("CL.THROTTLE"), kb, []byte(burst), []byte(count), []byte(period), []byte(qty)}
		args = args[:int(argc%7)]
		if len(args) == 0 {
			return
		}
		c.w.Truncate(0)
		srv.handle(c, args)
		checkThrottleReply(t, string(c.w.Bytes()))
	})
}

func checkThrottleReply(t *testing.T, reply string) {
	if strings.HasPrefix(reply, "-") {
		if !strings.HasPrefix(reply, "-Cell error: ") && !strings.HasPrefix(reply, "-WRONGTYPE ") {
			t.Fatalf("unexpected error reply %q", reply)
		}
		return
	}
	lines := strings.Split(strings.TrimSuffix(reply, "\r\n"), "\r\n")
	if len(lines) != 6 || lines[0] != "*5" {
		t.Fatalf("not a 5-array: %q", reply)
	}
	var v [5]int64
	for j := range v {
		n, err := strconv.ParseInt(strings.TrimPrefix(lines[j+1], ":"), 10, 64)
		if err != nil || lines[j+1][0] != ':' {
			t.Fatalf("element %d not an integer: %q", j, reply)
		}
		v[j] = n
	}
	limited, limit, remaining, retry, reset := v[0], v[1], v[2], v[3], v[4]
	switch {
	case limited != 0 && limited != 1:
		t.Fatalf("limited=%d: %q", limited, reply)
	case limit < 1:
		t.Fatalf("limit=%d: %q", limit, reply)
	case remaining < 0 || remaining > limit:
		t.Fatalf("remaining %d outside [0,%d]: %q", remaining, limit, reply)
	case limited == 0 && retry != -1:
		t.Fatalf("allowed but retry_after=%d: %q", retry, reply)
	case reset < 0:
		t.Fatalf("reset_after=%d: %q", reset, reply)
	}
}

func shardsBytesEntry(s string) shards.Entry { return shards.BytesEntry([]byte(s), 0) }
