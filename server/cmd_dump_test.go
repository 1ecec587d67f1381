package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/turnstile/turnstile/clock"
)

// dumpFixture fills a server with a value of every type in the encodings
// Redis 7.0 uses for it (thresholds lowered so that small values take the
// big encodings too), and returns the keys.
func dumpFixture(t *testing.T, ctx context.Context, rc *redis.Client) []string {
	t.Helper()
	var cmds = [][]any{
		{"SET", "s:small", "hello"}, {"SET", "s:int", "12345"}, {"SET", "s:neg", "-7"},
		{"SET", "s:big", "1234567890123"}, {"SET", "s:lzf", strings.Repeat("a", 100) + strings.Repeat("b", 50)},
		{"SET", "s:bin", "\x00\x01\xff binary"},
		{"RPUSH", "l:lp", "a", "b", "1", "-300", "70000", "4294967296", "-9223372036854775808"},
		{"RPUSH", "l:big", strings.Repeat("x", 40), strings.Repeat("y", 5000)},
		{"SADD", "set:int", "1", "5", "-3", "100000", "70000000000"},
		{"SADD", "set:small", "a", "b", "1"},
		{"HSET", "h:lp", "f1", "v1", "n", "42", "neg", "-1000000", "i13", "-4000"},
		{"ZADD", "z:lp", "1", "a", "2.5", "b", "-inf", "c", "1e300", "d", "-3", "e"},
	}
	for i := range 150 {
		cmds = append(cmds, []any{"RPUSH", "l:ql", fmt.Sprint("e", i)},
			[]any{"SADD", "set:ht", fmt.Sprint("m", i)},
			[]any{"HSET", "h:ht", fmt.Sprint("f", i), fmt.Sprint(i * 1000)},
			[]any{"ZADD", "z:sk", fmt.Sprint(float64(i) / 3), fmt.Sprint("m", i)})
	}
	// Streams: one node of entries with and without the master's fields,
	// several nodes with deleted entries inside them, consumer groups with
	// pending entries, and empty streams that keep their IDs and groups.
	cmds = append(cmds,
		[]any{"XADD", "x:small", "1-1", "a", "1", "b", "2"}, []any{"XADD", "x:small", "2-1", "a", "3", "b", "4"},
		[]any{"XADD", "x:small", "3-5", "c", "-5000", "d", strings.Repeat("z", 70)})
	for i := range 250 {
		f := []any{"XADD", "x:big", fmt.Sprintf("%d-%d", 1000+i*7919, i%3), "a", fmt.Sprint(i), "b", strings.Repeat("v", i*13)}
		if i%9 == 0 {
			f = append(f[:3], "other", fmt.Sprint(-i*100000))
		}
		cmds = append(cmds, f)
	}
	cmds = append(cmds, []any{"XDEL", "x:big", "1000-0", "8919-1", "793100-1"},
		[]any{"XADD", "x:groups", "1-0", "f", "v"}, []any{"XADD", "x:groups", "2-0", "f", "v"}, []any{"XADD", "x:groups", "3-0", "f", "v"},
		[]any{"XGROUP", "CREATE", "x:groups", "g", "0"}, []any{"XGROUP", "CREATE", "x:groups", "later", "2-0"},
		[]any{"XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "x:groups", ">"},
		[]any{"XREADGROUP", "GROUP", "g", "bob", "STREAMS", "x:groups", ">"},
		[]any{"XCLAIM", "x:groups", "g", "bob", "0", "1-0", "TIME", "1000", "RETRYCOUNT", "7"},
		[]any{"XGROUP", "CREATECONSUMER", "x:groups", "g", "idle"},
		[]any{"XDEL", "x:groups", "2-0"},
		[]any{"XGROUP", "CREATE", "x:empty", "g", "$", "MKSTREAM"},
		[]any{"XADD", "x:emptied", "5-5", "f", "v"}, []any{"XDEL", "x:emptied", "5-5"})
	var keys []string
	for _, c := range cmds {
		if err := rc.Do(ctx, c...).Err(); err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		k := c[1].(string)
		switch c[0] {
		case "XGROUP":
			k = c[2].(string)
		case "XREADGROUP":
			continue
		}
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// dumpContent reads a key's type and value in a comparable form.
func dumpContent(t *testing.T, ctx context.Context, rc *redis.Client, key string) string {
	t.Helper()
	typ := rc.Type(ctx, key).Val()
	var v any
	switch typ {
	case "string":
		v = rc.Get(ctx, key).Val()
	case "list":
		v = rc.LRange(ctx, key, 0, -1).Val()
	case "set":
		m := rc.SMembers(ctx, key).Val()
		slices.Sort(m)
		v = m
	case "hash":
		m := rc.HGetAll(ctx, key).Val()
		var pairs []string
		for f, x := range m {
			pairs = append(pairs, f+"="+x)
		}
		slices.Sort(pairs)
		v = pairs
	case "zset":
		v = rc.ZRangeWithScores(ctx, key, 0, -1).Val()
	case "stream": // all but the two fields of Redis's own layout
		full, _ := rc.Do(ctx, "XINFO", "STREAM", key, "FULL", "COUNT", "0").Slice()
		var kept []any
		for i := 0; i+1 < len(full); i += 2 {
			if f := fmt.Sprint(full[i]); f != "radix-tree-keys" && f != "radix-tree-nodes" {
				kept = append(kept, full[i], full[i+1])
			}
		}
		v = kept
	}
	return fmt.Sprintf("%s %q", typ, v)
}

// TestDumpRestoreWithRedis moves every fixture value from redis-server to
// Turnstile with DUMP and RESTORE, and back, and compares the values.
func TestDumpRestoreWithRedis(t *testing.T) {
	redisAddr := startRedis(t)
	_, addr, _ := newTestServer(t, func(c *Config) { c.Clock = clock.NewMonotonic() })
	ctx := context.Background()
	red, ts := keysClient(t, redisAddr), keysClient(t, addr)
	// (sanitize-dump-payload: Redis checks every listpack of a stream
	// Turnstile wrote, entry by entry.)
	for _, kv := range [][2]string{{"list-max-listpack-size", "4"}, {"hash-max-listpack-entries", "128"}, {"sanitize-dump-payload", "yes"}} {
		red.ConfigSet(ctx, kv[0], kv[1])
	}
	keys := dumpFixture(t, ctx, red)
	for _, k := range keys {
		p, err := red.Dump(ctx, k).Result()
		if err != nil {
			t.Fatalf("redis DUMP %s: %v", k, err)
		}
		if err := ts.Restore(ctx, k, 0, p).Err(); err != nil {
			t.Errorf("RESTORE %s (redis %s) into Turnstile: %v", k, red.ObjectEncoding(ctx, k).Val(), err)
			continue
		}
		if a, b := dumpContent(t, ctx, red, k), dumpContent(t, ctx, ts, k); a != b {
			t.Errorf("%s: redis %s, turnstile %s", k, a, b)
		}
		back := "back:" + k
		p2, err := ts.Dump(ctx, k).Result()
		if err != nil {
			t.Fatalf("Turnstile DUMP %s: %v", k, err)
		}
		if err := red.Restore(ctx, back, 0, p2).Err(); err != nil {
			t.Errorf("RESTORE %s into redis: %v", k, err)
			continue
		}
		if a, b := dumpContent(t, ctx, ts, k), dumpContent(t, ctx, red, back); a != b {
			t.Errorf("%s back in redis: turnstile %s, redis %s", k, a, b)
		}
	}
}

// TestRestoreIsLogged: a RESTOREd value (string and collection, with a
// TTL) survives a restart through the append-only log, and a RESTORE
// REPLACE with a TTL already past leaves the key deleted after replay.
func TestRestoreIsLogged(t *testing.T) {
	r := newRestartable(t, func(c *Config) {
		c.Persist.AppendOnly = true
		c.Persist.Save = nil
	})
	r.expect(":3\r\n", "RPUSH", "l", "a", "b", "c")
	p := r.rc.do("DUMP", "l")
	payload := p[strings.Index(p, "\r\n")+2 : len(p)-2]
	r.expect("+OK\r\n", "RESTORE", "l2", "60000", payload)
	r.expect("+OK\r\n", "SET", "gone", "x")
	r.expect("+OK\r\n", "RESTORE", "gone", "1", payload, "REPLACE", "ABSTTL")
	r.restart()
	r.expect("*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n", "LRANGE", "l2", "0", "-1")
	r.expect(":60000\r\n", "PTTL", "l2")
	r.expect(":0\r\n", "EXISTS", "gone")
}
