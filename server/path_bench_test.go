package server

import (
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/turnstile/turnstile/clock"
)

// newPathClient returns a server (loaded, not serving) and a client whose
// connection is never used: requests are fed straight into its reader
// (feed). mod may adjust the config; with appendonly the log is opened.
func newPathClient(tb testing.TB, mod ...func(*Config)) (*Server, *client) {
	cfg := DefaultConfig()
	cfg.Clock = clock.NewMonotonic()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, m := range mod {
		m(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.openLog(); err != nil {
		tb.Fatal(err)
	}
	if err := s.loadData(); err != nil {
		tb.Fatal(err)
	}
	if lg := s.aofLog(); lg != nil {
		tb.Cleanup(func() { lg.Close() })
	}
	c1, c2 := net.Pipe()
	tb.Cleanup(func() { c1.Close(); c2.Close() })
	return s, newClient(s, c1)
}

// BenchmarkThrottlePath measures the whole in-process command path for
// CL.THROTTLE on existing keys: RESP parse, lookup, lock, GCRA decision,
// store, reply. It must not allocate.
func BenchmarkThrottlePath(b *testing.B) {
	for _, hot := range []bool{true, false} {
		b.Run(map[bool]string{true: "hotkeys=on", false: "hotkeys=off"}[hot], func(b *testing.B) { throttlePath(b, hot) })
	}
}

// throttlePath is BenchmarkThrottlePath with hot-key counting on or off
// (its cost on this path: see RL.HOTKEYS in README).
func throttlePath(b *testing.B, hot bool) {
	s, c := newPathClient(b)
	s.hot.on.Store(hot)
	const nkeys = 1024
	reqs := make([][]byte, nkeys)
	for i := range reqs {
		reqs[i] = []byte(encodeCommand("CL.THROTTLE", "user:"+strconv.Itoa(i), "15", "30", "60"))
	}
	run := func(req []byte) { feed(b, s, c, req) }
	for _, r := range reqs { // create the keys first
		run(r)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run(reqs[i%nkeys])
	}
}

// BenchmarkThrottlePathBlocked is BenchmarkThrottlePath while another
// client is blocked in BLPOP (as a queue worker usually is): every write
// then notes its changed key and checks its shard's waiters.
func BenchmarkThrottlePathBlocked(b *testing.B) {
	s, c := newPathClient(b)
	c1, c2 := net.Pipe()
	b.Cleanup(func() { c1.Close(); c2.Close() })
	w := newClient(s, c1)
	feed(b, s, w, []byte(encodeCommand("BLPOP", "jobs", "0")))
	if w.blocked == nil {
		b.Fatal("the worker did not block")
	}
	const nkeys = 1024
	reqs := make([][]byte, nkeys)
	for i := range reqs {
		reqs[i] = []byte(encodeCommand("CL.THROTTLE", "user:"+strconv.Itoa(i), "15", "30", "60"))
	}
	for _, r := range reqs {
		feed(b, s, c, r)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		feed(b, s, c, reqs[i%nkeys])
	}
}

// feed runs one request through the client's reader, the dispatcher and
// the durability wait, and drops the reply, as the connection loop does
// minus the socket.
func feed(tb testing.TB, s *Server, c *client, req []byte) {
	buf, err := c.rd.Space()
	if err != nil {
		tb.Fatal(err)
	}
	c.rd.Advance(copy(buf, req))
	args, ok, err := c.rd.Next(false)
	if !ok || err != nil {
		tb.Fatal("parse failed", err)
	}
	s.handle(c, args)
	if !c.syncLog() {
		tb.Fatal("log sync failed")
	}
	c.w.Reset(1 << 20)
}

// newLimiterPathClient is newPathClient with bench/rl.sh's three rules
// (ip, user, tenant) set for RL.CHECK.
func newLimiterPathClient(b *testing.B) (*Server, *client) {
	s, c := newPathClient(b)
	feed(b, s, c, []byte(encodeCommand("RL.POLICY", "SET", "ip", "gcra", "1000000", "1s")))
	feed(b, s, c, []byte(encodeCommand("RL.POLICY", "SET", "user", "sliding", "1000000", "1m")))
	feed(b, s, c, []byte(encodeCommand("RL.POLICY", "SET", "tenant", "fixed", "1000000000", "1h")))
	return s, c
}

// BenchmarkRLLimitPath is BenchmarkThrottlePath for RL.LIMIT with each
// algorithm, and RL.CHECK with three named rules.
func BenchmarkRLLimitPath(b *testing.B) {
	for _, algo := range []string{"GCRA", "FIXED", "SLIDING", "LOG", "CHECK3"} {
		b.Run(algo, func(b *testing.B) {
			s, c := newLimiterPathClient(b)
			const nkeys = 1024
			reqs := make([][]byte, nkeys)
			for i := range reqs {
				k := "user:" + strconv.Itoa(i)
				if algo == "CHECK3" {
					reqs[i] = []byte(encodeCommand("RL.CHECK", "ip", k, "user", k, "tenant", k))
				} else {
					reqs[i] = []byte(encodeCommand("RL.LIMIT", k, algo, "100000", "1s"))
				}
			}
			for _, r := range reqs {
				feed(b, s, c, r)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				feed(b, s, c, reqs[i%nkeys])
			}
		})
	}
}

// BenchmarkLimiterPaths runs bench/rl.sh's requests in process, and
// bench/scripts.sh's EVALSHA of redis_rate (native): 100,000 keys in
// random order, every request allowed (the write path), so that the ratios
// between the limiters can be judged without the sockets.
func BenchmarkLimiterPaths(b *testing.B) {
	body, err := os.ReadFile("../libtest/testdata/scripts/redis_rate-allowN.lua")
	if err != nil {
		b.Fatal(err)
	}
	cases := []struct{ name, cmd string }{
		{"redis_rate", "EVALSHA " + scriptSHA(body) + " 1 rr:%d 100 10 1 1"},
		{"CL.THROTTLE", "CL.THROTTLE rl:%d 1000 1000000 1"},
		{"GCRA", "RL.LIMIT rl:%d GCRA 1000000 1s"},
		{"FIXED", "RL.LIMIT rl:%d FIXED 1000000 1s"},
		{"SLIDING", "RL.LIMIT rl:%d SLIDING 1000000 1s"},
		{"LOG", "RL.LIMIT rl:%d LOG 100 1s"},
		{"CHECK3", "RL.CHECK ip %[1]d user %[1]d tenant %[1]d"},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			s, c := newLimiterPathClient(b)
			feed(b, s, c, []byte(encodeCommand("SCRIPT", "LOAD", string(body))))
			const nkeys = 100000
			reqs := make([][]byte, 1<<16)
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range reqs {
				reqs[i] = []byte(encodeCommand(strings.Fields(fmt.Sprintf(tc.cmd, rng.IntN(nkeys)))...))
			}
			for _, r := range reqs {
				feed(b, s, c, r)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				feed(b, s, c, reqs[i&(len(reqs)-1)])
			}
		})
	}
}
