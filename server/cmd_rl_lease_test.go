package server

import (
	"strings"
	"testing"
	"time"
)

// TestRLLeases: at most limit leases alive; release and renew by id; a
// lease expires on its own; the key lives as long as its last lease.
func TestRLLeases(t *testing.T) {
	_, addr, clk := newTestServer(t)
	c := dialRaw(t, addr)
	var ids []string
	for i := range 2 {
		got := c.do("RL.ACQUIRE", "jobs", "2", "1000")
		head, tail, ok := strings.Cut(got, ":-1\r\n:1000\r\n$")
		if !ok || head != "*6\r\n:1\r\n:2\r\n:"+string(rune('1'-i))+"\r\n" {
			t.Fatalf("acquire %d: %q", i+1, got)
		}
		_, id, _ := strings.Cut(strings.TrimSuffix(tail, "\r\n"), "\r\n")
		ids = append(ids, id)
	}
	if ids[0] == ids[1] {
		t.Fatalf("two leases share id %s", ids[0])
	}
	if got, want := c.do("RL.ACQUIRE", "jobs", "2", "1000"), "*6\r\n:0\r\n:2\r\n:0\r\n:1000\r\n:1000\r\n$-1\r\n"; got != want {
		t.Fatalf("3rd acquire: %q, want %q", got, want)
	}
	if got := c.do("RL.RELEASE", "jobs", ids[0]); got != ":1\r\n" {
		t.Fatalf("release: %q", got)
	}
	if got := c.do("RL.RELEASE", "jobs", ids[0]); got != ":0\r\n" {
		t.Fatalf("second release: %q", got)
	}
	if got := c.do("RL.ACQUIRE", "jobs", "2", "1000"); !strings.HasPrefix(got, "*6\r\n:1\r\n") {
		t.Fatalf("acquire after release: %q", got)
	}
	clk.Advance(600 * time.Millisecond)
	if got := c.do("RL.RENEW", "jobs", ids[1], "5000"); got != ":1\r\n" {
		t.Fatalf("renew: %q", got)
	}
	clk.Advance(600 * time.Millisecond) // the third lease has expired, the renewed one not
	if got := c.do("RL.ACQUIRE", "jobs", "2", "100"); !strings.HasPrefix(got, "*6\r\n:1\r\n:2\r\n:0\r\n") {
		t.Fatalf("acquire after an expiry: %q", got)
	}
	if got := c.do("PTTL", "jobs"); got != ":4400\r\n" {
		t.Fatalf("PTTL: %q (the renewed lease ends last)", got)
	}
	for want, args := range map[string][]string{
		"-ERR lease_ms must be a positive integer of milliseconds": {"RL.ACQUIRE", "j", "2", "0"},
		"-ERR limit must be a positive integer":                    {"RL.ACQUIRE", "j", "0", "10"},
		"-ERR syntax error":                                        {"RL.ACQUIRE", "j", "2", "10", "COST"},
		"-ERR invalid lease id":                                    {"RL.RELEASE", "j", "x"},
		":0":                                                       {"RL.RENEW", "nokey", "1", "10"},
	} {
		if got := c.do(args...); got != want+"\r\n" {
			t.Errorf("%v: %q, want %q", args, got, want)
		}
	}
}

// TestRLBorrowAndReturn: a gateway borrows a batch from the bucket that
// RL.LIMIT spends from, gets at most what is there, and returns what it
// did not use, no more than it borrowed.
func TestRLBorrowAndReturn(t *testing.T) {
	_, addr, _ := newTestServer(t)
	c := dialRaw(t, addr)
	// A bucket of 10, refilled 10 per second.
	if got, want := c.do("RL.BORROW", "b", "10", "1s", "4"), "*6\r\n:1\r\n:10\r\n:6\r\n:-1\r\n:400\r\n:4\r\n"; got != want {
		t.Fatalf("borrow 4: %q, want %q", got, want)
	}
	if got := c.do("RL.LIMIT", "b", "GCRA", "10", "1s"); !strings.HasPrefix(got, "*5\r\n:1\r\n:10\r\n:5\r\n") {
		t.Fatalf("a direct request shares the bucket: %q", got)
	}
	// Ask for 8, get the 5 left.
	if got, want := c.do("RL.BORROW", "b", "10", "1s", "8"), "*6\r\n:1\r\n:10\r\n:0\r\n:-1\r\n:1000\r\n:5\r\n"; got != want {
		t.Fatalf("borrow 8: %q, want %q", got, want)
	}
	if got, want := c.do("RL.BORROW", "b", "10", "1s", "1"), "*6\r\n:0\r\n:10\r\n:0\r\n:100\r\n:1000\r\n:0\r\n"; got != want {
		t.Fatalf("borrow from an empty bucket: %q, want %q", got, want)
	}
	// 9 were lent: returning 20 takes back 9.
	if got := c.do("RL.RETURN", "b", "20"); got != ":9\r\n" {
		t.Fatalf("return: %q", got)
	}
	if got := c.do("RL.RETURN", "b", "1"); got != ":0\r\n" {
		t.Fatalf("second return: %q", got)
	}
	if got := c.do("RL.INFO", "b"); !strings.Contains(got, "$4\r\nlent\r\n:0\r\n$9\r\nremaining\r\n:9\r\n") {
		t.Fatalf("RL.INFO after the return: %q", got)
	}
}
