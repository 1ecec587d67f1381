package server

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestRedisCliBigkeysAndMemkeys: redis-cli's --bigkeys and --memkeys (SCAN,
// TYPE, then the size command of each type, or MEMORY USAGE) see every
// type, and INFO keyspace counts every key.
func TestRedisCliBigkeysAndMemkeys(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		if os.Getenv("TURNSTILE_REQUIRE_REDIS") == "1" {
			t.Fatal("redis-cli not found and TURNSTILE_REQUIRE_REDIS=1")
		}
		t.Skip("redis-cli not on PATH")
	}
	_, addr, _ := newTestServer(t)
	rc := dialRaw(t, addr)
	for _, c := range [][]string{
		{"SET", "str", "hello"},
		{"CL.THROTTLE", "gcra", "15", "30", "60"},
		{"HSET", "hash", "a", "1", "b", "2"},
		{"RPUSH", "list", "a", "b", "c"},
		{"SADD", "set", "a", "b", "c", "d"},
		{"ZADD", "zset", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e"},
		{"XADD", "stream", "1-1", "f", "v"},
	} {
		if r := rc.do(c...); strings.HasPrefix(r, "-") {
			t.Fatalf("%v: %q", c, r)
		}
	}
	if got := rc.do("INFO", "keyspace"); !strings.Contains(got, "db0:keys=7,") {
		t.Fatalf("INFO keyspace: %q", got)
	}
	host, port, _ := net.SplitHostPort(addr)
	run := func(flag string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, cli, "-h", host, "-p", port, flag).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %s: %v\n%s", flag, err, out)
		}
		return string(out)
	}
	big := run("--bigkeys")
	for _, want := range []string{
		"1 lists with 3 items", "1 hashs with 2 fields", "2 strings with",
		"1 streams with 1 entries", "1 sets with 4 members", "1 zsets with 5 members",
		"zset found '\"zset\"' has 5 members",
	} {
		if !strings.Contains(big, want) {
			t.Errorf("--bigkeys output lacks %q:\n%s", want, big)
		}
	}
	mem := run("--memkeys")
	for _, typ := range []string{"lists", "hashs", "strings", "streams", "sets", "zsets"} {
		if !strings.Contains(mem, "1 "+typ+" with ") && !strings.Contains(mem, "2 "+typ+" with ") {
			t.Errorf("--memkeys output lacks %s:\n%s", typ, mem)
		}
	}
	if strings.Contains(mem, " with 0 bytes") {
		t.Errorf("--memkeys reports a type with 0 bytes:\n%s", mem)
	}
}
