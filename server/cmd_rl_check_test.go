package server

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/turnstile/turnstile/clock"
)

const testPolicies = `{ "rules": [
	{ "id": "login-ip", "key": ["ip"], "algorithm": "sliding", "limit": 5, "per": "1m", "burst": 0, "shadow": false },
	{ "id": "user", "key": ["user"], "algorithm": "gcra", "limit": 3, "per": "1m" },
	{ "id": "strict", "key": ["user"], "algorithm": "fixed", "limit": 1, "per": "1h", "shadow": true }
] }`

// newPolicyServer starts a server with testPolicies in a file it returns.
func newPolicyServer(t *testing.T) (*rawConn, string, *Server) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policies.json")
	if err := os.WriteFile(path, []byte(testPolicies), 0o644); err != nil {
		t.Fatal(err)
	}
	s, addr, _ := newTestServer(t, func(c *Config) { c.RLPolicies = path })
	return dialRaw(t, addr), path, s
}

// TestRLCheckSpendsNothingOnDeny: three rules checked atomically; when one
// enforced rule denies, no rule spends; a shadow rule never denies but
// counts what it would have denied.
func TestRLCheckSpendsNothingOnDeny(t *testing.T) {
	c, _, _ := newPolicyServer(t)
	if got := c.do("RL.POLICY", "LIST"); got != "*3\r\n$8\r\nlogin-ip\r\n$4\r\nuser\r\n$6\r\nstrict\r\n" {
		t.Fatalf("RL.POLICY LIST: %q", got)
	}
	check := func() string { return c.do("RL.CHECK", "login-ip", "10.0.0.1", "user", "u42", "strict", "u42") }
	// 1st: all allowed; the shadow rule (1 per hour) too.
	if got := check(); !strings.HasPrefix(got, "*4\r\n:1\r\n$-1\r\n:-1\r\n*3\r\n*7\r\n$8\r\nlogin-ip\r\n:1\r\n:5\r\n:4\r\n") {
		t.Fatalf("1st check: %q", got)
	}
	// 2nd and 3rd: the shadow rule would deny, but does not.
	for i := 2; i <= 3; i++ {
		got := check()
		if !strings.HasPrefix(got, "*4\r\n:1\r\n$-1\r\n") || !strings.Contains(got, "$6\r\nstrict\r\n:0\r\n") {
			t.Fatalf("check %d: %q", i, got)
		}
	}
	// 4th: "user" (3 per minute, bucket of 3) denies: nothing is spent.
	before := c.do("GET", "rl:{10.0.0.1}:login-ip")
	got := check()
	if !strings.HasPrefix(got, "*4\r\n:0\r\n$4\r\nuser\r\n:20000\r\n") {
		t.Fatalf("4th check: %q", got)
	}
	if after := c.do("GET", "rl:{10.0.0.1}:login-ip"); after != before {
		t.Fatalf("a denied check spent on login-ip: %q -> %q", before, after)
	}
	// Counters: user allowed 3, denied 1; strict shadow-denied 3.
	if got := c.do("RL.POLICY", "GET", "user"); !strings.Contains(got, "$7\r\nallowed\r\n:3\r\n$6\r\ndenied\r\n:1\r\n") {
		t.Fatalf("user counters: %q", got)
	}
	if got := c.do("RL.POLICY", "GET", "strict"); !strings.Contains(got, "$13\r\nshadow_denied\r\n:3\r\n") {
		t.Fatalf("strict counters: %q", got)
	}
	// The longest retry names the rule: COST 5 exceeds "user"'s bucket
	// for ever, which beats any finite wait.
	if got := c.do("RL.CHECK", "COST", "5", "login-ip", "10.0.0.2", "user", "u43"); !strings.HasPrefix(got, "*4\r\n:0\r\n$4\r\nuser\r\n:-1\r\n") {
		t.Fatalf("cost 5: %q", got)
	}
}

// TestRLPolicyCommands: SET, DEL, GET, LOAD (good and bad file), errors.
func TestRLPolicyCommands(t *testing.T) {
	c, path, _ := newPolicyServer(t)
	for _, step := range []struct {
		want string
		args []string
	}{
		{"+OK", []string{"RL.POLICY", "SET", "otp", "log", "3", "10m", "SHADOW"}},
		{":1", []string{"RL.POLICY", "DEL", "strict"}},
		{":0", []string{"RL.POLICY", "DEL", "strict"}},
		{"$-1", []string{"RL.POLICY", "GET", "strict"}},
	} {
		if got := c.do(step.args...); got != step.want+"\r\n" {
			t.Errorf("%v: %q, want %q", step.args, got, step.want)
		}
	}
	want := map[string][]string{
		"-ERR rule.per: period \"10x\" is not a positive integer with a unit (ms, s, m, h or d)": {"RL.POLICY", "SET", "otp", "log", "3", "10x"},
		"-ERR rule.algorithm: \"token\" is not one of gcra, fixed, sliding, log":                 {"RL.POLICY", "SET", "otp", "token", "3", "10m"},
		"-ERR unknown rule 'nope'":                                   {"RL.CHECK", "nope", "x"},
		"-ERR wrong number of arguments for 'rl.check' command":      {"RL.CHECK", "user", "a", "user"},
		"-ERR COST must be a positive integer":                       {"RL.CHECK", "COST", "0", "user", "a"},
		"-ERR rule 'user' is given the same value twice":             {"RL.CHECK", "user", "a", "user", "a"},
		"-ERR wrong number of arguments for 'rl.policy|set' command": {"RL.POLICY", "SET", "x", "log", "3"},
	}
	for w, args := range want {
		if got := c.do(args...); got != w+"\r\n" {
			t.Errorf("%v: %q, want %q", args, got, w)
		}
	}
	if got := c.do("RL.POLICY", "GET", "otp"); !strings.Contains(got, "$6\r\nshadow\r\n$3\r\nyes\r\n") {
		t.Fatalf("GET otp: %q", got)
	}
	// A broken file: LOAD fails with the file and field, the rules stay.
	if err := os.WriteFile(path, []byte(`{"rules": [{"id": "a", "algorithm": "fixed", "limit": 5}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := c.do("RL.POLICY", "LOAD"); got != "-ERR "+path+": rules[0].per: missing (e.g. \"1m\")\r\n" {
		t.Fatalf("LOAD of a broken file: %q", got)
	}
	if got := c.do("RL.POLICY", "LIST"); got != "*3\r\n$8\r\nlogin-ip\r\n$4\r\nuser\r\n$3\r\notp\r\n" {
		t.Fatalf("rules after a failed LOAD: %q", got)
	}
	// A good one replaces everything (RL.POLICY SET's rule included).
	if err := os.WriteFile(path, []byte(`{"rules": [{"id": "only", "algorithm": "fixed", "limit": 1, "per": "1s"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := c.do("RL.POLICY", "LOAD"); got != "+OK\r\n" {
		t.Fatalf("LOAD: %q", got)
	}
	if got := c.do("RL.POLICY", "LIST"); got != "*1\r\n$4\r\nonly\r\n" {
		t.Fatalf("rules after LOAD: %q", got)
	}
}

// TestRLCheckKeysAndTransactions: COMMAND GETKEYS shows the derived keys,
// and RL.CHECK works inside MULTI.
func TestRLCheckKeysAndTransactions(t *testing.T) {
	c, _, _ := newPolicyServer(t)
	if got := c.do("COMMAND", "GETKEYS", "RL.CHECK", "COST", "2", "user", "{u1}", "login-ip", "1.2.3.4"); got != "*2\r\n$14\r\nrl:{{u1}}:user\r\n$21\r\nrl:{1.2.3.4}:login-ip\r\n" {
		t.Fatalf("GETKEYS: %q", got)
	}
	c.do("MULTI")
	c.do("RL.CHECK", "user", "m")
	c.do("RL.CHECK", "user", "m")
	if got := c.do("EXEC"); !strings.HasPrefix(got, "*2\r\n*4\r\n:1\r\n") || strings.Count(got, "*4\r\n:1\r\n") != 2 {
		t.Fatalf("EXEC: %q", got)
	}
	if got := c.do("RL.INFO", "rl:{m}:user"); !strings.Contains(got, "$9\r\nremaining\r\n:1\r\n") {
		t.Fatalf("after two checks in MULTI: %q", got)
	}
}

// TestRLPoliciesBadFileRefusesStart: a policy file with a mistake stops
// the server from starting, naming the file and the field.
func TestRLPoliciesBadFileRefusesStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(path, []byte("rules:\n  - {id: a, algorithm: fixed, limit: 0, per: 1s}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.RLPolicies = path
	_, err := New(cfg)
	if err == nil || !strings.Contains(err.Error(), path+": rules[0].limit: limit must be a positive integer") {
		t.Fatalf("New: %v", err)
	}
	_ = time.Second
}

// TestRLCheckKeysInTransactionsAndScripts: RL.CHECK derives its keys once
// for the locks and the handler on the one-command path, and derives them
// in the handler inside EXEC and scripts; every path must reach the same
// keys. The same checks on other values, one by one, are the reference:
// the clock stands still, so the replies and states must be identical.
func TestRLCheckKeysInTransactionsAndScripts(t *testing.T) {
	c, _, _ := newPolicyServer(t)
	checks := func(a, b string) [][]string {
		return [][]string{
			{"RL.CHECK", "user", a},
			{"RL.CHECK", "user", b, "login-ip", b},
			{"RL.CHECK", "COST", "2", "user", a, "strict", b},
			{"RL.CHECK", "login-ip", a, "user", b, "strict", a},
		}
	}
	want := "*4\r\n"
	for _, args := range checks("p", "q") {
		want += c.do(args...)
	}
	c.do("MULTI")
	for _, args := range checks("a", "b") {
		if got := c.do(args...); got != "+QUEUED\r\n" {
			t.Fatalf("%v in MULTI: %q", args, got)
		}
	}
	if got := c.do("EXEC"); got != want {
		t.Fatalf("EXEC: %q, want %q", got, want)
	}
	script := `local out = {}
for i, args in ipairs({{'user', ARGV[1]}, {'user', ARGV[2], 'login-ip', ARGV[2]}, {'COST', '2', 'user', ARGV[1], 'strict', ARGV[2]}, {'login-ip', ARGV[1], 'user', ARGV[2], 'strict', ARGV[1]}}) do
	out[i] = redis.call('RL.CHECK', unpack(args))[1]
end
return out`
	if got := c.do("EVAL", script, "0", "x", "y"); got != "*4\r\n:1\r\n:1\r\n:1\r\n:1\r\n" {
		t.Fatalf("EVAL: %q", got)
	}
	for _, k := range []string{"rl:{%s}:user", "rl:{%s}:login-ip", "rl:{%s}:strict"} {
		for _, pair := range [][3]string{{"p", "a", "x"}, {"q", "b", "y"}} {
			ref := c.do("GET", strings.Replace(k, "%s", pair[0], 1))
			if ref == "$-1\r\n" && !strings.HasSuffix(k, "strict") { // strict q: shadow-denied COST 2, not spent
				t.Fatalf("%s: no state", strings.Replace(k, "%s", pair[0], 1))
			}
			for _, v := range pair[1:] {
				if got := c.do("GET", strings.Replace(k, "%s", v, 1)); got != ref {
					t.Errorf("%s: %q, want %q (as %s)", strings.Replace(k, "%s", v, 1), got, ref, pair[0])
				}
			}
		}
	}
}

// TestRLCheckPathAllocs: RL.CHECK with three rules on existing keys
// allocates nothing: the keys are derived once, into the execution's
// reused buffers, and the rules are found by name without copies.
func TestRLCheckPathAllocs(t *testing.T) {
	s, c := newPathClient(t, func(cfg *Config) { cfg.Clock = clock.NewManual(testEpoch) })
	feed(t, s, c, []byte(encodeCommand("RL.POLICY", "SET", "ip", "gcra", "1000000", "1s")))
	feed(t, s, c, []byte(encodeCommand("RL.POLICY", "SET", "user", "sliding", "1000000", "1m")))
	feed(t, s, c, []byte(encodeCommand("RL.POLICY", "SET", "tenant", "fixed", "1000000000", "1h")))
	const nkeys = 64
	reqs := make([][]byte, nkeys)
	for i := range reqs {
		k := "user:" + strconv.Itoa(i)
		reqs[i] = []byte(encodeCommand("RL.CHECK", "ip", k, "user", k, "tenant", k))
	}
	expectNoAllocs(t, s, c, "RL.CHECK", reqs)
}

// TestRLCheckManyRules: a check of more rule-value pairs than the
// handler's stack array holds (8) derives and spends every key.
func TestRLCheckManyRules(t *testing.T) {
	c, _, _ := newPolicyServer(t)
	args := []string{"RL.CHECK"}
	for i := range 10 {
		args = append(args, "user", "v"+strconv.Itoa(i))
	}
	if got := c.do(args...); !strings.HasPrefix(got, "*4\r\n:1\r\n$-1\r\n:-1\r\n*10\r\n") || strings.Count(got, "$4\r\nuser\r\n:1\r\n:3\r\n:2\r\n") != 10 {
		t.Fatalf("10 rules: %q", got)
	}
	for i := range 10 {
		if got := c.do("RL.INFO", "rl:{v"+strconv.Itoa(i)+"}:user"); !strings.Contains(got, "$9\r\nremaining\r\n:2\r\n") {
			t.Fatalf("v%d after the check: %q", i, got)
		}
	}
}

// TestRLCheckPipelined: RL.CHECK requests sent in one pipeline, malformed
// ones among them (the prefetcher derives the keys of requests ahead,
// client.go prefetchDerived), get the same replies as sent one by one.
func TestRLCheckPipelined(t *testing.T) {
	reqs := [][]string{
		{"RL.CHECK", "user", "a", "login-ip", "a"},
		{"RL.CHECK", "user"},
		{"RL.CHECK", "user", "a", "user"},
		{"RL.CHECK", "COST", "0", "user", "a"},
		{"RL.CHECK", "COST", "2", "user", "b", "login-ip", "b"},
		{"RL.CHECK", "nope", "a"},
		{"RL.CHECK", "user", "", "login-ip", ""},
		{"RL.LIMIT", "k", "GCRA", "5", "1s"},
		{"RL.CHECK", "user", "a", "login-ip", "a", "strict", "a"},
		{"RL.CHECK", "user", "a"},
		{"RL.CHECK", "user", "a"},
	}
	one, _, _ := newPolicyServer(t)
	var want []string
	for _, r := range reqs {
		want = append(want, one.do(r...))
	}
	many, _, _ := newPolicyServer(t)
	var batch strings.Builder
	for _, r := range reqs {
		batch.WriteString(encodeCommand(r...))
	}
	many.send(batch.String())
	for i, r := range reqs {
		if got := many.readReply(); got != want[i] {
			t.Fatalf("%v pipelined: %q, one by one: %q", r, got, want[i])
		}
	}
}

// TestRLCheckRulesInOneShard: RL.CHECK keeps each rule's place in the
// keyspace (a shards.Ref) from its lookup to its store, and a rule's store
// (a new key, which may grow the shard's table) or lookup (removing an
// expired key, which moves later keys of its probe run) can move another
// rule's key in the same shard. With one shard every check shares it: the
// "old" rule's counts must go on exactly while each check adds a new key
// and expires one.
func TestRLCheckRulesInOneShard(t *testing.T) {
	_, addr, clk := newTestServer(t, func(c *Config) { c.Shards = 1 })
	c := dialRaw(t, addr)
	for _, cmd := range [][]string{
		{"RL.POLICY", "SET", "new", "fixed", "1000", "1s"},
		{"RL.POLICY", "SET", "old", "fixed", "1000000", "1h"},
		{"RL.POLICY", "SET", "short", "fixed", "1000", "50ms"},
	} {
		if got := c.do(cmd...); got != "+OK\r\n" {
			t.Fatalf("%q: %q", cmd, got)
		}
	}
	const olds = 7
	spent := make([]int, olds)
	for i := 0; i < 3000; i++ {
		o := i % olds
		// "short" keys expire 50 ms after their check: the next check's
		// lookup of one removes it, in the shard the others' keys are in.
		got := c.do("RL.CHECK", "new", "n"+strconv.Itoa(i), "short", "s"+strconv.Itoa(i%5), "old", "o"+strconv.Itoa(o))
		spent[o]++
		want := ":1000000\r\n:" + strconv.Itoa(1000000-spent[o]) + "\r\n"
		if !strings.HasPrefix(got, "*4\r\n:1\r\n") || !strings.Contains(got, "$3\r\nold\r\n:1\r\n"+want) {
			t.Fatalf("check %d: old rule's key o%d should have %d left: %q", i, o, 1000000-spent[o], got)
		}
		if i%3 == 0 {
			clk.Advance(20 * time.Millisecond)
		}
	}
}

// TestRLCheckReplyRESP3: under RESP3 the reply is the same array, the
// denier's nil written as RESP3's null; each rule's part (array header
// and id, kept with the rule set) is the same in both protocols, also
// for a rule added at run time.
func TestRLCheckReplyRESP3(t *testing.T) {
	c, _, _ := newPolicyServer(t)
	c.do("HELLO", "3")
	if got := c.do("RL.POLICY", "SET", "api", "FIXED", "10", "1s"); got != "+OK\r\n" {
		t.Fatalf("RL.POLICY SET: %q", got)
	}
	want := "*4\r\n:1\r\n_\r\n:-1\r\n*2\r\n" +
		"*7\r\n$8\r\nlogin-ip\r\n:1\r\n:5\r\n:4\r\n:-1\r\n"
	got := c.do("RL.CHECK", "login-ip", "10.0.0.9", "api", "k1")
	if !strings.HasPrefix(got, want) || !strings.Contains(got, "\r\n*7\r\n$3\r\napi\r\n:1\r\n:10\r\n:9\r\n:-1\r\n") {
		t.Fatalf("RESP3 RL.CHECK: %q", got)
	}
}
