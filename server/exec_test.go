package server

import (
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// tickingClock moves forward 1 ms every time it is read, so that any two
// reads of it differ.
type tickingClock struct{ ns atomic.Int64 }

func (c *tickingClock) Now() int64 { return c.ns.Add(int64(time.Millisecond)) }

// TestExecHasOneNow: every command of one EXEC sees the same time (Redis 7
// freezes time for a transaction). Before, each queued command read the
// clock again.
func TestExecHasOneNow(t *testing.T) {
	clk := &tickingClock{}
	clk.ns.Store(testEpoch)
	_, addr, _ := newTestServer(t, func(c *Config) { c.Clock = clk })
	r := dialRaw(t, addr)
	if a, b := r.do("TIME"), r.do("TIME"); a == b {
		t.Fatalf("control: two TIME commands agree (%q): the clock does not tick", a)
	}
	r.do("MULTI")
	r.do("TIME")
	r.do("SET", "k", "v", "PX", "100000")
	r.do("PTTL", "k")
	r.do("TIME")
	r.do("CL.THROTTLE", "rl", "0", "1", "100")
	r.do("CL.THROTTLE", "rl", "0", "1", "100")
	got := r.do("EXEC")
	parts := strings.Split(got, "\r\n")
	// *6, TIME (*2 $ s $ us: 5 lines), +OK, :PTTL, TIME (5 lines), ...
	time1 := strings.Join(parts[1:6], "|")
	pttl := parts[7]
	time2 := strings.Join(parts[8:13], "|")
	if time1 != time2 {
		t.Errorf("TIME inside one EXEC differs: %s vs %s", time1, time2)
	}
	if pttl != ":100000" {
		t.Errorf("PTTL right after SET PX 100000 in the same EXEC = %s, want :100000", pttl)
	}
	// The second CL.THROTTLE at the same instant is limited and must wait
	// exactly the full emission interval (100 s), not 100 s minus the ticks.
	if !strings.Contains(got, "*5\r\n:1\r\n:1\r\n:0\r\n:100\r\n:100\r\n") {
		t.Errorf("second CL.THROTTLE in the EXEC: %q", got)
	}
}

// TestWatchManyKeys: WATCH of 100,000 distinct keys (with repeats) is
// linear: before, removing repeats compared every key with every other
// while the shards were locked (40,000 keys held other clients ~1.4 s;
// 100,000 took tens of seconds). A change to the last key still breaks
// the transaction.
func TestWatchManyKeys(t *testing.T) {
	_, addr, _ := newTestServer(t)
	a, b := dialRaw(t, addr), dialRaw(t, addr)
	const n = 100_000
	args := []string{"WATCH"}
	for i := range n {
		args = append(args, "w:"+strconv.Itoa(i))
	}
	args = append(args, "w:0", "w:1") // repeats are free
	if got := a.do(args...); got != "+OK\r\n" {
		t.Fatalf("WATCH = %q", got)
	}
	if got := a.do("WATCH", "w:5"); got != "+OK\r\n" { // already watched: no room needed
		t.Fatalf("WATCH of a watched key at the limit = %q", got)
	}
	b.do("SET", "w:"+strconv.Itoa(n-1), "x")
	a.do("MULTI")
	a.do("SET", "k", "v")
	if got := a.do("EXEC"); got != "*-1\r\n" {
		t.Fatalf("EXEC after a watched key changed = %q, want a null array", got)
	}
}

// TestTransactionLimits: the watch list and the MULTI queue are bounded,
// with clear errors; a queue overflow aborts the transaction like any
// other rejected command, and the connection keeps working.
func TestTransactionLimits(t *testing.T) {
	_, addr, _ := newTestServer(t, func(c *Config) {
		c.MaxWatchedKeys = 3
		c.MaxQueuedCommands = 2
		c.MaxQueuedBytes = 40
	})
	r := dialRaw(t, addr)
	if got := r.do("WATCH", "a", "b", "c", "d"); !strings.HasPrefix(got, "-ERR too many watched keys") {
		t.Fatalf("WATCH of 4 keys with a limit of 3 = %q", got)
	}
	if got := r.do("WATCH", "a", "b", "a", "c"); got != "+OK\r\n" {
		t.Fatalf("WATCH of 3 distinct keys = %q", got)
	}
	if got := r.do("WATCH", "d"); !strings.HasPrefix(got, "-ERR too many watched keys") {
		t.Fatalf("a fourth watched key = %q", got)
	}
	r.do("UNWATCH")

	r.do("MULTI")
	r.do("SET", "k1", "v")
	r.do("SET", "k2", "v")
	if got := r.do("SET", "k3", "v"); !strings.HasPrefix(got, "-ERR MULTI queue is full") {
		t.Fatalf("third queued command = %q", got)
	}
	if got := r.do("EXEC"); !strings.HasPrefix(got, "-EXECABORT") {
		t.Fatalf("EXEC after an overflow = %q", got)
	}
	r.do("MULTI")
	if got := r.do("SET", "k", strings.Repeat("x", 40)); !strings.HasPrefix(got, "-ERR MULTI queue is full") {
		t.Fatalf("queueing 44 bytes with a limit of 40 = %q", got)
	}
	r.do("DISCARD")
	if got := r.do("EXISTS", "k1", "k2", "k"); got != ":0\r\n" {
		t.Fatalf("aborted transactions changed keys: EXISTS = %q", got)
	}
	r.do("MULTI")
	r.do("SET", "k1", "v")
	if got := r.do("EXEC"); got != "*1\r\n+OK\r\n" {
		t.Fatalf("a transaction within the limits = %q", got)
	}
}

// BenchmarkWatchKeys shows WATCH's cost per key is flat in the number of
// keys (go test -run '^$' -bench WatchKeys ./server).
func BenchmarkWatchKeys(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			_, addr, _ := newTestServer(b)
			r := dialRaw(b, addr)
			args := []string{"WATCH"}
			for i := range n {
				args = append(args, "w:"+strconv.Itoa(i))
			}
			req := encodeCommand(args...)
			b.ResetTimer()
			for range b.N {
				r.send(req)
				r.readReply()
				r.do("UNWATCH")
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/key")
		})
	}
}
