package server

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/turnstile/turnstile/clock"
	"github.com/turnstile/turnstile/command"
)

// Integration tests of the operability commands (issue 14): MONITOR,
// SLOWLOG, LATENCY, INFO errorstats/latencystats, CLIENT PAUSE|REPLY|KILL.
// The servers run on the manual clock, so times and durations are exact:
// the test commands "test.slow" and "test.slowfast" advance the clock by
// 50 ms while they run, as a slow command would take that long.

// opsTestServer starts a server with the test commands.
func opsTestServer(t *testing.T, mod ...func(*Config)) (*Server, string, *clock.Manual) {
	t.Helper()
	slow := func(x *Ctx) {
		x.s.clock.(*clock.Manual).Advance(50 * time.Millisecond)
		x.w.OK()
	}
	return newTestServer(t, append([]func(*Config){func(c *Config) {
		c.extraCommands = []*Command{
			{Name: "test.slow", Arity: -1, Handler: slow},
			{Name: "test.slowfast", Arity: -1, Flags: command.Fast, Handler: slow},
		}
	}}, mod...)...)
}

// expectReply sends args on r and checks the raw reply.
func expectReply(t *testing.T, r *rawConn, want string, args ...string) {
	t.Helper()
	if got := r.do(args...); got != want {
		t.Fatalf("%v: got %q, want %q", args, got, want)
	}
}

func TestMonitorShowsCommandsAsRedis(t *testing.T) {
	_, addr, _ := opsTestServer(t)
	mon := dialRaw(t, addr)
	expectReply(t, mon, "+OK\r\n", "MONITOR")
	c := dialRaw(t, addr)
	me := c.c.LocalAddr().String()
	const ts = "+1700000000.000000 "
	steps := []struct {
		args []string
		show []string // the monitor lines, without the time
	}{
		{[]string{"SET", "k", "v"}, []string{`[0 ` + me + `] "SET" "k" "v"`}},
		{[]string{"AUTH", "user", "secret"}, []string{`[0 ` + me + `] "AUTH" "(redacted)" "(redacted)"`}},
		{[]string{"HELLO", "2", "AUTH", "default", "pw", "SETNAME", "n"}, []string{`[0 ` + me + `] "HELLO" "2" "AUTH" "(redacted)" "(redacted)" "SETNAME" "n"`}},
		{[]string{"CONFIG", "GET", "maxclients"}, nil}, // admin: never shown
		{[]string{"NOSUCH", "x"}, nil}, // refused before running
		{[]string{"GET"}, nil},
		{[]string{"MULTI"}, []string{`[0 ` + me + `] "MULTI"`}},
		{[]string{"SET", "a", "1"}, nil}, // queued: shown by EXEC
		{[]string{"GET", "a"}, nil},
		{[]string{"EXEC"}, []string{`[0 ` + me + `] "SET" "a" "1"`, `[0 ` + me + `] "GET" "a"`, `[0 ` + me + `] "EXEC"`}},
		{[]string{"EVAL", "redis.call('set','x','y') return redis.call('get','x')", "0"}, []string{
			`[0 ` + me + `] "EVAL" "redis.call('set','x','y') return redis.call('get','x')" "0"`,
			`[0 lua] "set" "x" "y"`, `[0 lua] "get" "x"`}},
		{[]string{"SELECT", "1"}, []string{`[1 ` + me + `] "SELECT" "1"`}},
		{[]string{"SET", "b", "a\"b\\c\n\x01\xff"}, []string{`[1 ` + me + `] "SET" "b" "a\"b\\c\n\x01\xff"`}},
	}
	for _, st := range steps {
		c.do(st.args...)
		for _, want := range st.show {
			if got := mon.readReply(); got != ts+want+"\r\n" {
				t.Fatalf("after %q: monitor got %q, want %q", st.args, got, ts+want+"\r\n")
			}
		}
	}
	if mon.pending() {
		t.Fatalf("monitor got an unexpected line: %q", mon.readReply())
	}
	if list := c.do("CLIENT", "LIST"); !strings.Contains(list, "flags=O") {
		t.Fatalf("CLIENT LIST does not show the monitor's O flag: %q", list)
	}
}

// TestMonitorDetaches: a monitor may not touch the keyspace (Redis treats
// it as a replica), RESET ends it, a closed monitor is dropped, and
// MONITOR inside MULTI is refused as Redis refuses it.
func TestMonitorDetaches(t *testing.T) {
	s, addr, _ := opsTestServer(t)
	mon := dialRaw(t, addr)
	expectReply(t, mon, "+OK\r\n", "MONITOR")
	expectReply(t, mon, "+PONG\r\n", "PING")
	if got := mon.readReply(); !strings.HasSuffix(got, `"PING"`+"\r\n") {
		t.Fatalf("monitor's own PING line: %q", got)
	}
	expectReply(t, mon, "-ERR Replica can't interact with the keyspace\r\n", "GET", "k")
	expectReply(t, mon, "+RESET\r\n", "RESET")
	expectReply(t, mon, "$-1\r\n", "GET", "k")
	if mon.pending() {
		t.Fatalf("RESET did not end MONITOR: %q", mon.readReply())
	}
	expectReply(t, mon, "+OK\r\n", "MONITOR")
	if s.ops.monitors.n.Load() != 1 {
		t.Fatal("monitor not registered")
	}
	mon.c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for s.ops.monitors.n.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("closed monitor still registered")
		}
		time.Sleep(5 * time.Millisecond)
	}
	c := dialRaw(t, addr)
	c.do("MULTI")
	expectReply(t, c, "+QUEUED\r\n", "MONITOR")
	expectReply(t, c, "*1\r\n-ERR MONITOR isn't allowed for DENY BLOCKING client\r\n", "EXEC")
}

func TestSlowlogEntries(t *testing.T) {
	_, addr, _ := opsTestServer(t)
	c := dialRaw(t, addr)
	me := c.c.LocalAddr().String()
	expectReply(t, c, "+OK\r\n", "CLIENT", "SETNAME", "worker")
	expectReply(t, c, "+OK\r\n", "SLOWLOG", "RESET")
	// Default threshold (10 ms): fast commands are not logged, slow ones are.
	c.do("SET", "k", "v")
	c.do("TEST.SLOW", "arg")
	expectReply(t, c, ":1\r\n", "SLOWLOG", "LEN")
	want := "*1\r\n*6\r\n:0\r\n:1700000000\r\n:50000\r\n*2\r\n$9\r\nTEST.SLOW\r\n$3\r\narg\r\n$" +
		strconv.Itoa(len(me)) + "\r\n" + me + "\r\n$6\r\nworker\r\n"
	expectReply(t, c, want, "SLOWLOG", "GET")

	// Everything, with arguments cut as Redis cuts them.
	expectReply(t, c, "+OK\r\n", "CONFIG", "SET", "slowlog-log-slower-than", "0")
	long := strings.Repeat("a", 200)
	c.do("SET", "long", long)
	many := []string{"RPUSH", "l"}
	for i := range 40 {
		many = append(many, strconv.Itoa(i))
	}
	c.do(many...)
	c.do("AUTH", "secret")
	c.do("MULTI")
	c.do("INCR", "n")
	c.do("EXEC")

	rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
	defer rdb.Close()
	ctx := itContext(t)
	logs, err := rdb.SlowLogGet(ctx, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range logs {
		got = append(got, fmt.Sprintf("%d %q", l.ID, l.Args))
	}
	// Newest first; EXEC is not logged, the commands it ran are.
	wantArgs := []string{
		`6 ["INCR" "n"]`,
		`5 ["MULTI"]`,
		`4 ["AUTH" "(redacted)"]`,
		`3 ["RPUSH" "l" "0" "1" "2" "3" "4" "5" "6" "7" "8" "9" "10" "11" "12" "13" "14" "15" "16" "17" "18" "19" "20" "21" "22" "23" "24" "25" "26" "27" "28" "... (11 more arguments)"]`,
		`2 ["SET" "long" "` + long[:128] + `... (72 more bytes)"]`,
		`1 ["CONFIG" "SET" "slowlog-log-slower-than" "0"]`,
		`0 ["TEST.SLOW" "arg"]`,
	}
	// go-redis's connection set-up (HELLO) is logged after ours.
	for len(got) > 0 && !strings.HasPrefix(got[0], "6 ") {
		got = got[1:]
	}
	if strings.Join(got, "\n") != strings.Join(wantArgs, "\n") {
		t.Fatalf("slowlog:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantArgs, "\n"))
	}
	if logs[len(logs)-1].ClientName != "worker" || logs[len(logs)-1].ClientAddr != me {
		t.Fatalf("entry client: %q %q", logs[len(logs)-1].ClientAddr, logs[len(logs)-1].ClientName)
	}

	// CONFIG RESETSTAT does not clear it; slowlog-max-len trims it.
	c.do("CONFIG", "RESETSTAT")
	if n := c.do("SLOWLOG", "LEN"); n == ":0\r\n" {
		t.Fatal("CONFIG RESETSTAT cleared the slow log")
	}
	c.do("CONFIG", "SET", "slowlog-max-len", "2")
	c.do("PING")
	expectReply(t, c, ":2\r\n", "SLOWLOG", "LEN")
	c.do("CONFIG", "SET", "slowlog-log-slower-than", "-1") // off
	expectReply(t, c, "+OK\r\n", "SLOWLOG", "RESET")
	c.do("TEST.SLOW")
	expectReply(t, c, ":0\r\n", "SLOWLOG", "LEN")
}

func TestLatencyMonitor(t *testing.T) {
	_, addr, _ := opsTestServer(t)
	c := dialRaw(t, addr)
	c.do("TEST.SLOW")
	expectReply(t, c, "*0\r\n", "LATENCY", "LATEST") // off by default
	expectReply(t, c, "+OK\r\n", "CONFIG", "SET", "latency-monitor-threshold", "20")
	c.do("SET", "k", "v") // under the threshold
	c.do("TEST.SLOW")
	c.do("TEST.SLOWFAST")
	expectReply(t, c, "*2\r\n*4\r\n$7\r\ncommand\r\n:1700000000\r\n:50\r\n:50\r\n*4\r\n$12\r\nfast-command\r\n:1700000000\r\n:50\r\n:50\r\n",
		"LATENCY", "LATEST")
	expectReply(t, c, "*1\r\n*2\r\n:1700000000\r\n:50\r\n", "LATENCY", "HISTORY", "command")
	expectReply(t, c, "*0\r\n", "LATENCY", "HISTORY", "nosuch")
	if doc := c.do("LATENCY", "DOCTOR"); !strings.Contains(doc, "command: 1 latency spikes") {
		t.Fatalf("doctor: %q", doc)
	}
	expectReply(t, c, ":1\r\n", "LATENCY", "RESET", "command", "nosuch")
	expectReply(t, c, ":1\r\n", "LATENCY", "RESET")
	expectReply(t, c, "*0\r\n", "LATENCY", "LATEST")
}

func TestLatencyStatsAndHistogram(t *testing.T) {
	_, addr, _ := opsTestServer(t)
	c := dialRaw(t, addr)
	for range 2 * timingSample {
		c.do("TEST.SLOW")
	}
	info := c.do("INFO", "latencystats")
	// 50 ms falls in the bucket 49152..57343 µs.
	if !strings.Contains(info, "latency_percentiles_usec_test.slow:p50=57343.000,p99=57343.000,p99.9=57343.000\r\n") {
		t.Fatalf("INFO latencystats: %q", info)
	}
	want := "*2\r\n$9\r\ntest.slow\r\n*4\r\n$5\r\ncalls\r\n:" + strconv.Itoa(2*timingSample) +
		"\r\n$14\r\nhistogram_usec\r\n*2\r\n:65536\r\n:" + strconv.Itoa(2*timingSample) + "\r\n"
	expectReply(t, c, want, "LATENCY", "HISTOGRAM", "test.slow", "nosuch")
	c.do("CONFIG", "RESETSTAT")
	if info := c.do("INFO", "latencystats"); strings.Contains(info, "test.slow") {
		t.Fatalf("CONFIG RESETSTAT kept latencystats: %q", info)
	}
	expectReply(t, c, "*0\r\n", "LATENCY", "HISTOGRAM", "test.slow")
}

func TestErrorStatsCount(t *testing.T) {
	_, addr, _ := opsTestServer(t)
	c := dialRaw(t, addr)
	c.do("GET")             // ERR (arity, refused)
	c.do("NOSUCH")          // ERR (unknown)
	c.do("SET", "s", "x")   //
	c.do("LPUSH", "s", "x") // WRONGTYPE (failed)
	c.do("LPUSH", "s", "x") // WRONGTYPE
	c.do("EVAL", "return redis.error_reply('MYERR no')", "0")
	c.do("MULTI")
	c.do("GET")   // ERR, and the transaction is dirty
	c.do("EXEC")  // EXECABORT
	c.do("BLPOP") // ERR
	want := "# Errorstats\r\nerrorstat_ERR:count=4\r\nerrorstat_EXECABORT:count=1\r\nerrorstat_MYERR:count=1\r\nerrorstat_WRONGTYPE:count=2\r\n"
	if got := c.do("INFO", "errorstats"); !strings.Contains(got, want) {
		t.Fatalf("INFO errorstats: %q, want %q", got, want)
	}
	// A script's error that a redis.call raised is one error reply, as
	// in Redis: counted once in errorstats and in total_error_replies.
	c.do("EVAL", "return redis.call('lpush','s','x')", "0")
	want = strings.Replace(want, "WRONGTYPE:count=2", "WRONGTYPE:count=3", 1)
	if got := c.do("INFO", "errorstats"); !strings.Contains(got, want) {
		t.Fatalf("INFO errorstats after a script's error: %q, want %q", got, want)
	}
	if got := c.do("INFO", "stats"); !strings.Contains(got, "\r\ntotal_error_replies:9\r\n") {
		t.Fatalf("INFO stats: %q, want total_error_replies:9", got)
	}
	if got := c.do("INFO", "commandstats"); !strings.Contains(got, "cmdstat_lpush:calls=3,") ||
		!strings.Contains(got, "rejected_calls=0,failed_calls=3") || !strings.Contains(got, "cmdstat_get:calls=0,usec=0,usec_per_call=0.00,rejected_calls=2,failed_calls=0") {
		t.Fatalf("INFO commandstats: %q", got)
	}
	c.do("CONFIG", "RESETSTAT")
	if got := c.do("INFO", "errorstats"); strings.Contains(got, "errorstat_") {
		t.Fatalf("CONFIG RESETSTAT kept errorstats: %q", got)
	}
}

// waitReply reports whether r gets a reply within d (and returns it).
func waitReply(r *rawConn, d time.Duration) (string, bool) {
	r.c.SetReadDeadline(time.Now().Add(d))
	s, err := readRawReply(r.br)
	if err != nil {
		return "", false
	}
	return s, true
}

func TestClientPauseWaits(t *testing.T) {
	_, addr, clk := opsTestServer(t)
	admin, c := dialRaw(t, addr), dialRaw(t, addr)
	c.do("SET", "k", "old")

	// WRITE: reads go through, writes wait (not fail) until UNPAUSE.
	expectReply(t, admin, "+OK\r\n", "CLIENT", "PAUSE", "100000", "WRITE")
	expectReply(t, c, "$3\r\nold\r\n", "GET", "k")
	c.send(encodeCommand("SET", "k", "new"))
	if r, ok := waitReply(c, 150*time.Millisecond); ok {
		t.Fatalf("a write ran during CLIENT PAUSE WRITE: %q", r)
	}
	if list := admin.do("CLIENT", "LIST"); !strings.Contains(list, "flags=b") {
		t.Fatalf("the paused client is not shown blocked: %q", list)
	}
	if info := admin.do("INFO", "clients"); !strings.Contains(info, "blocked_clients:1\r\n") {
		t.Fatalf("the paused client is not counted blocked: %q", info)
	}
	expectReply(t, admin, "$3\r\nold\r\n", "GET", "k")
	expectReply(t, admin, "+OK\r\n", "CLIENT", "UNPAUSE")
	if r, ok := waitReply(c, 5*time.Second); !ok || r != "+OK\r\n" {
		t.Fatalf("paused write after UNPAUSE: %q %v", r, ok)
	}
	expectReply(t, admin, "$3\r\nnew\r\n", "GET", "k")

	// A read-only transaction goes through a WRITE pause; one that writes waits.
	admin.do("CLIENT", "PAUSE", "100000", "WRITE")
	c.do("MULTI")
	c.do("GET", "k")
	expectReply(t, c, "*1\r\n$3\r\nnew\r\n", "EXEC")
	c.do("MULTI")
	c.do("GET", "k") // queueing a read does not wait
	c.send(encodeCommand("INCR", "n"))
	if r, ok := waitReply(c, 150*time.Millisecond); ok {
		t.Fatalf("a write was queued during CLIENT PAUSE WRITE: %q", r)
	}
	admin.do("CLIENT", "UNPAUSE")
	if r, _ := waitReply(c, 5*time.Second); r != "+QUEUED\r\n" {
		t.Fatalf("INCR after UNPAUSE: %q", r)
	}
	expectReply(t, c, "*2\r\n$3\r\nnew\r\n:1\r\n", "EXEC")

	// ALL: every command waits, until the pause's time is over.
	admin.do("CLIENT", "PAUSE", "1000", "ALL")
	c.send(encodeCommand("PING"))
	if r, ok := waitReply(c, 150*time.Millisecond); ok {
		t.Fatalf("PING ran during CLIENT PAUSE ALL: %q", r)
	}
	clk.Advance(1001 * time.Millisecond)
	if r, ok := waitReply(c, 5*time.Second); !ok || r != "+PONG\r\n" {
		t.Fatalf("PING after the pause ended: %q %v", r, ok)
	}

	// A client killed while it waits does not run its command.
	admin.do("CLIENT", "PAUSE", "100000", "WRITE")
	id := strings.TrimSuffix(strings.TrimPrefix(c.do("CLIENT", "ID"), ":"), "\r\n")
	c.send(encodeCommand("SET", "k", "never"))
	time.Sleep(50 * time.Millisecond)
	expectReply(t, admin, ":1\r\n", "CLIENT", "KILL", "ID", id)
	c.expectClosed()
	admin.do("CLIENT", "UNPAUSE")
	expectReply(t, admin, "$3\r\nnew\r\n", "GET", "k")
}

func TestClientReplyModes(t *testing.T) {
	_, addr, _ := opsTestServer(t)
	c := dialRaw(t, addr)
	c.send(encodeCommand("CLIENT", "REPLY", "OFF"))
	c.send(encodeCommand("SET", "a", "1"))
	c.send(encodeCommand("GET", "nosuchcommand", "x"))
	c.send(encodeCommand("CLIENT", "REPLY", "SKIP")) // while OFF: stays OFF
	c.send(encodeCommand("GET", "a"))
	expectReply(t, c, "+OK\r\n", "CLIENT", "REPLY", "ON")
	c.send(encodeCommand("CLIENT", "REPLY", "SKIP"))
	c.send(encodeCommand("INCR", "a")) // skipped
	expectReply(t, c, "$1\r\n2\r\n", "GET", "a")
}

func TestClientKillFilters(t *testing.T) {
	_, addr, clk := opsTestServer(t)
	admin := dialRaw(t, addr)
	old := dialRaw(t, addr)
	old.do("PING")
	clk.Advance(10 * time.Second)
	young := dialRaw(t, addr)
	young.do("PING")
	// MAXAGE (Redis 7.4): older than 5 s; the caller is skipped (SKIPME yes).
	expectReply(t, admin, ":1\r\n", "CLIENT", "KILL", "MAXAGE", "5")
	old.expectClosed()
	expectReply(t, young, "+PONG\r\n", "PING")
	expectReply(t, admin, "-ERR syntax error\r\n", "CLIENT", "KILL", "MAXAGE", "x")

	sub := dialRaw(t, addr)
	sub.do("SUBSCRIBE", "ch")
	expectReply(t, admin, ":1\r\n", "CLIENT", "KILL", "TYPE", "pubsub")
	sub.expectClosed()

	byAddr := dialRaw(t, addr)
	byAddr.do("PING")
	expectReply(t, admin, "+OK\r\n", "CLIENT", "KILL", byAddr.c.LocalAddr().String())
	byAddr.expectClosed()
	expectReply(t, admin, "-ERR No such client\r\n", "CLIENT", "KILL", byAddr.c.LocalAddr().String())

	expectReply(t, admin, ":0\r\n", "CLIENT", "KILL", "LADDR", "1.2.3.4:5")
	laddr := young.c.RemoteAddr().(*net.TCPAddr).String()
	// The killed connections end on their own goroutines: wait until only
	// admin and young are left.
	for deadline := time.Now().Add(5 * time.Second); strings.Count(admin.do("CLIENT", "LIST"), "id=") != 2; {
		if time.Now().After(deadline) {
			t.Fatal("killed clients still listed after 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Every client on the server's address, the caller too with SKIPME no.
	expectReply(t, admin, ":2\r\n", "CLIENT", "KILL", "LADDR", laddr, "USER", "default", "SKIPME", "no")
	young.expectClosed()
	admin.expectClosed()
}

// TestClientPauseHoldsActiveExpiry: as Redis, no key is expired actively
// while clients are paused; after UNPAUSE the expiry cycle removes it.
func TestClientPauseHoldsActiveExpiry(t *testing.T) {
	s, addr, clk := opsTestServer(t, func(c *Config) { c.Hz = 100 })
	c := dialRaw(t, addr)
	c.do("SET", "k", "v", "PX", "100")
	expectReply(t, c, "+OK\r\n", "CLIENT", "PAUSE", "100000", "WRITE")
	clk.Advance(time.Second)
	time.Sleep(200 * time.Millisecond) // 20 expiry ticks
	if n := s.dbs[0].Len(); n != 1 {
		t.Fatalf("a key was expired during CLIENT PAUSE: %d keys stored", n)
	}
	c.do("CLIENT", "UNPAUSE")
	for deadline := time.Now().Add(5 * time.Second); s.dbs[0].Len() != 0; {
		if time.Now().After(deadline) {
			t.Fatal("the expired key was not removed after UNPAUSE")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
