package server

import (
	"fmt"
	"testing"
	"time"
)

// TestRLHotkeys: the busiest limiter keys come first with counts that
// never undercount; counts halve every 10 s; turning it off stops counting.
func TestRLHotkeys(t *testing.T) {
	_, addr, clk := newTestServer(t)
	c := dialRaw(t, addr)
	// One connection: calls 1..96 on hot (12 sampled), 97..136 on warm (5
	// sampled: 104, 112, ..., 136), then 50 cold keys of one call each.
	for range 96 {
		c.do("CL.THROTTLE", "hot", "1000", "1000", "60")
	}
	for range 40 {
		c.do("RL.LIMIT", "warm", "GCRA", "1000", "1m")
	}
	for i := range 50 {
		c.do("CL.THROTTLE", fmt.Sprint("cold", i), "10", "10", "60")
	}
	if got, want := c.do("RL.HOTKEYS", "2"), "*2\r\n*2\r\n$3\r\nhot\r\n:96\r\n*2\r\n$4\r\nwarm\r\n:40\r\n"; got != want {
		t.Fatalf("RL.HOTKEYS 2: %q, want %q", got, want)
	}
	clk.Advance(10 * time.Second)
	for range 8 { // one more sample of hot (call 192... at a multiple of 8)
		c.do("CL.THROTTLE", "hot", "1000", "1000", "60")
	}
	if got, want := c.do("RL.HOTKEYS", "1"), "*1\r\n*2\r\n$3\r\nhot\r\n:56\r\n"; got != want {
		t.Fatalf("after one decay: %q, want %q (96/2 + 8)", got, want)
	}
	c.do("CONFIG", "SET", "turnstile-hotkeys", "no")
	for range 16 {
		c.do("CL.THROTTLE", "hot", "1000", "1000", "60")
	}
	if got, want := c.do("RL.HOTKEYS", "1"), "*1\r\n*2\r\n$3\r\nhot\r\n:56\r\n"; got != want {
		t.Fatalf("counted while off: %q, want %q", got, want)
	}
	if got := c.do("SELECT", "3"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if got := c.do("RL.HOTKEYS"); got != "*0\r\n" {
		t.Fatalf("another database: %q", got)
	}
	if got := c.do("RL.HOTKEYS", "0"); got != "-ERR count must be a positive integer\r\n" {
		t.Fatalf("count 0: %q", got)
	}
}
