package server

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/turnstile/turnstile/ratelimit"
)

// TestRLLimitAlgorithms: each algorithm's reply through the server, with
// the manual clock: limit requests per period means exactly that for
// FIXED, SLIDING and LOG (the 6th call of 5 per period is denied), the
// retry and reset times, the key's TTL, and the refill.
func TestRLLimitAlgorithms(t *testing.T) {
	_, addr, clk := newTestServer(t)
	c := dialRaw(t, addr)
	base := (testEpoch/1e9 + 1) * 1e9 // a second boundary: aligned windows start here
	for n, algo := range []string{"FIXED", "SLIDING", "LOG"} {
		clk.Set(base + int64(n)*10e9)
		key := "rl:" + algo
		for i := int64(0); i < 5; i++ {
			reset := map[string]int64{"FIXED": 1000 - 100*i, "SLIDING": 2000 - 100*i, "LOG": 1000}[algo]
			if got, want := c.do("RL.LIMIT", key, algo, "5", "1s"), itInts(1, 5, 4-i, -1, reset); got != want {
				t.Fatalf("%s call %d: %q, want %q", algo, i+1, got, want)
			}
			clk.Advance(100 * time.Millisecond)
		}
		// 500 ms into the period: denied. FIXED and LOG: retry when the
		// period is over. SLIDING: the window's 5 become the previous
		// window's, weighing 5*(1-f) + 0 < 5 for any f > 0: 1 ns after
		// the next window starts (1 ms, rounded up).
		want := map[string]string{
			"FIXED":   itInts(0, 5, 0, 500, 500),
			"LOG":     itInts(0, 5, 0, 500, 900),
			"SLIDING": itInts(0, 5, 0, 501, 1500),
		}[algo]
		if got := c.do("RL.LIMIT", key, algo, "5", "1s"); got != want {
			t.Fatalf("%s 6th call: %q, want %q", algo, got, want)
		}
		wantTTL := map[string]string{"FIXED": ":500\r\n", "LOG": ":900\r\n", "SLIDING": ":1500\r\n"}[algo]
		if pttl := c.do("PTTL", key); pttl != wantTTL {
			t.Fatalf("%s: PTTL %q, want %q", algo, pttl, wantTTL)
		}
		clk.Advance(500 * time.Millisecond) // one period after the start
		got := c.do("RL.LIMIT", key, algo, "5", "1s")
		if algo == "SLIDING" {
			// At f = 0 the previous window's 5 still count in full.
			if !strings.HasPrefix(got, "*5\r\n:0\r\n") {
				t.Fatalf("SLIDING at the next window's start: %q", got)
			}
			// At f = 0.5, 2.5 are still counted: 2.5 + k - 1 < 5 admits
			// k = 1, 2, 3.
			clk.Advance(500 * time.Millisecond)
			allowed := 0
			for range 5 {
				if strings.HasPrefix(c.do("RL.LIMIT", key, algo, "5", "1s"), "*5\r\n:1\r\n") {
					allowed++
				}
			}
			if allowed != 3 {
				t.Fatalf("SLIDING half a window on: %d admitted, want 3", allowed)
			}
			continue
		}
		if !strings.HasPrefix(got, "*5\r\n:1\r\n") {
			t.Fatalf("%s after the period: %q", algo, got)
		}
	}
}

// TestRLLimitGCRA: a token bucket of BURST tokens (default: the limit),
// refilled at limit per period.
func TestRLLimitGCRA(t *testing.T) {
	_, addr, clk := newTestServer(t)
	c := dialRaw(t, addr)
	for i := int64(0); i < 10; i++ {
		if got, want := c.do("RL.LIMIT", "g", "GCRA", "10", "1s"), itInts(1, 10, 9-i, -1, 100*(i+1)); got != want {
			t.Fatalf("call %d: %q, want %q", i+1, got, want)
		}
	}
	if got, want := c.do("RL.LIMIT", "g", "GCRA", "10", "1s"), itInts(0, 10, 0, 100, 1000); got != want {
		t.Fatalf("11th: %q, want %q", got, want)
	}
	clk.Advance(100 * time.Millisecond)
	if got, want := c.do("RL.LIMIT", "g", "GCRA", "10", "1s"), itInts(1, 10, 0, -1, 1000); got != want {
		t.Fatalf("after one interval: %q, want %q", got, want)
	}
	// BURST 2, COST 2: the whole bucket at once; COST 3 never fits.
	if got, want := c.do("RL.LIMIT", "b", "GCRA", "10", "1s", "BURST", "2", "COST", "2"), itInts(1, 2, 0, -1, 200); got != want {
		t.Fatalf("cost 2: %q, want %q", got, want)
	}
	if got, want := c.do("RL.LIMIT", "b", "GCRA", "10", "1s", "BURST", "2", "COST", "3"), itInts(0, 2, 0, -1, 200); got != want {
		t.Fatalf("cost 3: %q, want %q", got, want)
	}
}

// TestRLQueue: the leaky bucket as a queue replies the delay to wait, and
// refuses once BURST requests wait.
func TestRLQueue(t *testing.T) {
	_, addr, clk := newTestServer(t)
	c := dialRaw(t, addr)
	want := []string{
		itInts(1, 2, 2, -1, 100, 0),   // leaves at once
		itInts(1, 2, 1, -1, 200, 100), // waits 100 ms
		itInts(1, 2, 0, -1, 300, 200), // waits 200 ms
		itInts(0, 2, 0, 100, 300, 0),  // 2 wait already: retry when one has left
	}
	for i, w := range want {
		if got := c.do("RL.QUEUE", "q", "10", "1s", "BURST", "2"); got != w {
			t.Fatalf("call %d: %q, want %q", i+1, got, w)
		}
	}
	clk.Advance(100 * time.Millisecond)
	if got, w := c.do("RL.QUEUE", "q", "10", "1s", "BURST", "2"), itInts(1, 2, 0, -1, 300, 200); got != w {
		t.Fatalf("after 100 ms: %q, want %q", got, w)
	}
}

// TestRLPeekAndDenySpendNothing: PEEK never writes, a denial leaves the
// stored state byte for byte as it was, RL.RESET forgets.
func TestRLPeekAndDenySpendNothing(t *testing.T) {
	_, addr, _ := newTestServer(t)
	c := dialRaw(t, addr)
	if got := c.do("RL.LIMIT", "p", "LOG", "1", "1m", "PEEK"); !strings.HasPrefix(got, "*5\r\n:1\r\n") {
		t.Fatalf("peek: %q", got)
	}
	if got := c.do("EXISTS", "p"); got != ":0\r\n" {
		t.Fatalf("PEEK created the key: %q", got)
	}
	c.do("RL.LIMIT", "p", "LOG", "1", "1m")
	before := c.do("GET", "p")
	for range 3 {
		if got := c.do("RL.LIMIT", "p", "LOG", "1", "1m"); !strings.HasPrefix(got, "*5\r\n:0\r\n") {
			t.Fatalf("over the limit: %q", got)
		}
	}
	if after := c.do("GET", "p"); after != before {
		t.Fatalf("denials changed the state: %q -> %q", before, after)
	}
	if got := c.do("RL.RESET", "p"); got != ":1\r\n" {
		t.Fatalf("RL.RESET: %q", got)
	}
	if got := c.do("RL.LIMIT", "p", "LOG", "1", "1m"); !strings.HasPrefix(got, "*5\r\n:1\r\n") {
		t.Fatalf("after RL.RESET: %q", got)
	}
}

// TestRLRuleChanges: new parameters apply to the state as it is; another
// algorithm starts the key over.
func TestRLRuleChanges(t *testing.T) {
	_, addr, _ := newTestServer(t)
	c := dialRaw(t, addr)
	for range 3 {
		c.do("RL.LIMIT", "k", "FIXED", "10", "1h")
	}
	// Lowered to 3 mid-window: the 3 admitted count, so no more pass.
	if got := c.do("RL.LIMIT", "k", "FIXED", "3", "1h"); !strings.HasPrefix(got, "*5\r\n:0\r\n:3\r\n:0\r\n") {
		t.Fatalf("lowered limit: %q", got)
	}
	// Raised to 5: two more.
	if got := c.do("RL.LIMIT", "k", "FIXED", "5", "1h"); !strings.HasPrefix(got, "*5\r\n:1\r\n:5\r\n:1\r\n") {
		t.Fatalf("raised limit: %q", got)
	}
	// Another algorithm: a fresh start.
	if got := c.do("RL.LIMIT", "k", "LOG", "5", "1h"); !strings.HasPrefix(got, "*5\r\n:1\r\n:5\r\n:4\r\n") {
		t.Fatalf("algorithm changed: %q", got)
	}
}

// TestRLErrorsAndReplies: argument errors, WRONGTYPE, RL.INFO, and the MAP
// reply in RESP2 and RESP3.
func TestRLErrorsAndReplies(t *testing.T) {
	_, addr, _ := newTestServer(t)
	c := dialRaw(t, addr)
	errs := map[string][]string{
		"-ERR unknown algorithm 'TOKEN': use GCRA, FIXED, SLIDING or LOG":                    {"RL.LIMIT", "k", "TOKEN", "5", "1s"},
		"-ERR limit must be a positive integer":                                              {"RL.LIMIT", "k", "FIXED", "0", "1s"},
		"-ERR period \"1y\" is not a positive integer with a unit (ms, s, m, h or d)":        {"RL.LIMIT", "k", "FIXED", "5", "1y"},
		"-ERR BURST applies to GCRA and RL.QUEUE only":                                       {"RL.LIMIT", "k", "FIXED", "5", "1s", "BURST", "1"},
		"-ERR COST must be a positive integer":                                               {"RL.LIMIT", "k", "FIXED", "5", "1s", "COST", "-1"},
		"-ERR syntax error":                                                                  {"RL.LIMIT", "k", "FIXED", "5", "1s", "EXTRA"},
		"-ERR wrong number of arguments for 'rl.limit' command":                              {"RL.LIMIT", "k", "FIXED", "5"},
		"-ERR the limit of LOG may be at most 100000 (it keeps every request of its period)": {"RL.LIMIT", "k", "LOG", "100001", "1s"},
	}
	for want, args := range errs {
		if got := c.do(args...); got != want+"\r\n" {
			t.Errorf("%v: %q, want %q", args, got, want)
		}
	}
	c.do("SET", "s", "plain")
	for _, args := range [][]string{{"RL.LIMIT", "s", "GCRA", "5", "1s"}, {"RL.INFO", "s"}, {"RL.RESET", "s"}, {"RL.QUEUE", "s", "5", "1s"}} {
		if got := c.do(args...); !strings.HasPrefix(got, "-WRONGTYPE") {
			t.Errorf("%v on a string: %q", args, got)
		}
	}
	if got := c.do("RL.INFO", "none"); got != "$-1\r\n" {
		t.Fatalf("RL.INFO of no key: %q", got)
	}
	c.do("RL.LIMIT", "i", "GCRA", "100", "1m", "BURST", "20")
	info := c.do("RL.INFO", "i")
	for _, want := range []string{"$9\r\nalgorithm\r\n$4\r\ngcra\r\n", "$5\r\nlimit\r\n:100\r\n", "$6\r\nperiod\r\n$2\r\n1m\r\n",
		"$5\r\nburst\r\n:20\r\n", "$9\r\nremaining\r\n:19\r\n", "$6\r\nttl_ms\r\n:600\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("RL.INFO lacks %q: %q", want, info)
		}
	}
	if got, want := c.do("RL.LIMIT", "m", "FIXED", "5", "1h", "MAP"), "*10\r\n$7\r\nallowed\r\n:1\r\n"; !strings.HasPrefix(got, want) {
		t.Fatalf("MAP in RESP2: %q", got)
	}
	c.do("HELLO", "3")
	if got, want := c.do("RL.LIMIT", "m", "FIXED", "5", "1h", "MAP"), "%5\r\n$7\r\nallowed\r\n:1\r\n"; !strings.HasPrefix(got, want) {
		t.Fatalf("MAP in RESP3: %q", got)
	}
	if got := c.do("RL.LIMIT", "m", "FIXED", "5", "1h"); !strings.HasPrefix(got, "*5\r\n:1\r\n") {
		t.Fatalf("RESP3 without MAP is the same array: %q", got)
	}
}

// TestRLLimitLogReusesEntries: RL.LIMIT decodes a LOG state's entries into
// a buffer the connection reuses from call to call (rlApply). Calls that
// interleave keys with logs of different lengths, PEEKs and costs must
// reply and store exactly what the algorithm gives on states of their own
// (the model below, with fresh slices every time).
func TestRLLimitLogReusesEntries(t *testing.T) {
	_, addr, clk := newTestServer(t)
	c := dialRaw(t, addr)
	type keyState struct {
		st  ratelimit.State
		exp int64
	}
	model := map[string]keyState{}
	rule := ratelimit.Rule{Limit: 7, Period: int64(time.Second)}
	rng := rand.New(rand.NewPCG(15, 1))
	for step := range 400 {
		key := "log:" + strconv.Itoa(rng.IntN(4))
		cost := int64(1 + rng.IntN(3))
		peek := rng.IntN(5) == 0
		clk.Advance(time.Duration(rng.IntN(300)) * time.Millisecond)
		now := clk.Now()
		ks, ok := model[key]
		if !ok || ks.exp <= now {
			ks = keyState{st: ratelimit.State{Algo: ratelimit.AlgoLog}}
		}
		st := ks.st
		st.Rule = rule
		st.Log.Entries = slices.Clone(st.Log.Entries)
		d, next := ratelimit.Decide(st, now, cost)
		if d.Allowed && !peek {
			if d.ResetAfter > 0 {
				model[key] = keyState{st: next, exp: now + d.ResetAfter}
			} else {
				delete(model, key)
			}
		}
		args := []string{"RL.LIMIT", key, "LOG", "7", "1s", "COST", strconv.FormatInt(cost, 10)}
		if peek {
			args = append(args, "PEEK")
		}
		want := fmt.Sprintf("*5\r\n:%d\r\n:%d\r\n:%d\r\n:%d\r\n:%d\r\n", boolInt(d.Allowed), d.Limit, d.Remaining, rlRetryMs(d), ceilMs(d.ResetAfter))
		if got := c.do(args...); got != want {
			t.Fatalf("step %d: %v: %q, want %q", step, args, got, want)
		}
		wantVal := "$-1\r\n"
		if ks, ok := model[key]; ok && ks.exp > now {
			v := ratelimit.AppendState(nil, &ks.st)
			wantVal = "$" + strconv.Itoa(len(v)) + "\r\n" + string(v) + "\r\n"
		}
		if got := c.do("GET", key); got != wantVal {
			t.Fatalf("step %d: %s holds %q, want %q", step, key, got, wantVal)
		}
	}
}
