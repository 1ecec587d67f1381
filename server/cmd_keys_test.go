package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/turnstile/turnstile/command"
)

// kstep is one step of a scripted key-command test: either a command and
// its exact expected reply, or an action (clock move, direct insert).
type kstep struct {
	cmd  []string
	want string
	act  func()
}

// kc builds a command step. The command is split on spaces; a `""` token is
// an empty argument. want is rendered by keysResp.
func kc(cmd string, want any) kstep {
	args := strings.Fields(cmd)
	for i, a := range args {
		if a == `""` {
			args[i] = ""
		}
	}
	return kstep{cmd: args, want: keysResp(want)}
}

func arityErr(name string) string {
	return "-ERR wrong number of arguments for '" + name + "' command"
}

// Expected values below were checked against redis-server 7.0.15 where the
// two can be compared (same relative TTLs; Redis's clock is not manual).
func TestKeyCommands(t *testing.T) {
	s, addr, clk := startKeysTestServer(t, func(c *Config) { c.Hz = 1 })
	conn := dialKeys(t, addr)
	put := func(key, val string, ttl time.Duration) kstep {
		return kstep{act: func() {
			var exp int64
			if ttl != 0 {
				exp = clk.Now() + int64(ttl)
			}
			keysPut(s, 0, key, val, exp)
		}}
	}
	advance := func(d time.Duration) kstep { return kstep{act: func() { clk.Advance(d) }} }
	const nowS = keysEpoch / 1e9
	const nowMs = keysEpoch / 1e6

	cases := []struct {
		name  string
		steps []kstep
	}{
		{"del_unlink", []kstep{
			put("a", "1", 0), put("b", "2", 0), put("c", "3", 0),
			kc("DEL a a nokey", 1),
			kc("UNLINK b c c", 2),
			kc("EXISTS a b c", 0),
			kc("DEL", arityErr("del")),
			kc("UNLINK", arityErr("unlink")),
			kc("DEL a", 0),
		}},
		{"exists_touch", []kstep{
			put("a", "1", 0),
			kc("EXISTS a a nokey a", 3),
			kc("TOUCH a nokey a", 2),
			kc("EXISTS nokey", 0),
			kc("EXISTS", arityErr("exists")),
			kc("TOUCH", arityErr("touch")),
		}},
		{"type", []kstep{
			put("a", "1", 0), put("b", "text", 0),
			kc("TYPE a", "+string"),
			kc("TYPE b", "+string"),
			kc("TYPE nokey", "+none"),
			kc("TYPE a b", arityErr("type")),
		}},
		{"rename", []kstep{
			put("a", "1", 10*time.Second), put("b", "2", 0),
			kc("RENAME nokey x", "-ERR no such key"),
			kc("RENAME nokey nokey", "-ERR no such key"),
			kc("RENAME a a", "+OK"),
			kc("PTTL a", 10000),
			kc("RENAME a b", "+OK"),
			kc("EXISTS a", 0),
			kc("PTTL b", 10000), // keeps the source's TTL
			kc("RENAMENX b b", 0),
			kc("RENAMENX nokey nokey", "-ERR no such key"),
			kc("RENAMENX nokey x", "-ERR no such key"),
			put("c", "3", 0),
			kc("RENAMENX b c", 0),
			kc("EXISTS b c", 2),
			kc("RENAMENX b d", 1),
			kc("PTTL d", 10000),
			kc("RENAME c d", "+OK"), // overwrites d, TTL included
			kc("PTTL d", -1),
			kc("EXISTS c", 0),
			kc("RENAME a", arityErr("rename")),
			kc("RENAMENX a b c", arityErr("renamenx")),
		}},
		{"copy", []kstep{
			put("a", "hello", 5*time.Second),
			kc("COPY a a", "-ERR source and destination objects are the same"),
			kc("COPY nokey nokey", "-ERR source and destination objects are the same"),
			kc("COPY nokey x", 0),
			kc("COPY a b", 1),
			kc("PTTL b", 5000),
			kc("COPY a b", 0),
			kc("COPY a b REPLACE", 1),
			kc("COPY a b replace REPLACE", 1),
			kc("COPY a b db", "-ERR syntax error"),
			kc("COPY a b db abc", "-ERR value is not an integer or out of range"),
			kc("COPY a b db 99", "-ERR DB index is out of range"),
			kc("COPY a b db -1", "-ERR DB index is out of range"),
			kc("COPY a b db 2147483648", "-ERR value is out of range, value must between -2147483648 and 2147483647"),
			kc("COPY a a db 0", "-ERR source and destination objects are the same"),
			kc("COPY a b foo", "-ERR syntax error"),
			kc("COPY nokey b foo", "-ERR syntax error"),
			kc("COPY a c db 0", 1),
			kc("COPY a d db 1", 1),
			kc("COPY a d db 1", 0),
			kc("COPY a d db 1 replace", 1),
			kc("SELECT 1", "+OK"),
			kc("EXISTS d", 1),
			kc("SELECT 0", "+OK"),
			kc("COPY a", arityErr("copy")),
		}},
		{"expire_ttl", []kstep{
			put("k", "v", 0),
			kc("TTL k", -1), kc("PTTL k", -1), kc("EXPIRETIME k", -1), kc("PEXPIRETIME k", -1),
			kc("TTL nokey", -2), kc("PTTL nokey", -2), kc("EXPIRETIME nokey", -2), kc("PEXPIRETIME nokey", -2),
			kc("EXPIRE k 100", 1),
			kc("TTL k", 100), kc("PTTL k", 100000),
			kc("EXPIRETIME k", nowS+100), kc("PEXPIRETIME k", nowMs+100000),
			advance(1500 * time.Millisecond),
			kc("PTTL k", 98500), kc("TTL k", 99), // 98.5 s rounds to 99
			advance(time.Millisecond),
			kc("PTTL k", 98499), kc("TTL k", 98),
			advance(time.Nanosecond),
			kc("PTTL k", 98499), // rounded up: a live key never reports less
			kc("PEXPIRE k 1500", 1),
			kc("PTTL k", 1500), kc("TTL k", 2),
			kc("EXPIREAT k "+fmt.Sprint(nowS+200), 1),
			kc("EXPIRETIME k", nowS+200),
			kc("PTTL k", 200000-1501),
			kc("PEXPIREAT k "+fmt.Sprint(nowMs+300123), 1),
			kc("PEXPIRETIME k", nowMs+300123),
			kc("EXPIRETIME k", nowS+300), // 300.123 rounds down
			kc("PEXPIREAT k "+fmt.Sprint(nowMs+300500), 1),
			kc("EXPIRETIME k", nowS+301), // 300.5 rounds up
			kc("PERSIST k", 1),
			kc("TTL k", -1),
			kc("PERSIST k", 0),
			kc("PERSIST nokey", 0),
			kc("EXPIRE nokey 10", 0),
			kc("PEXPIRE nokey 10", 0),
			kc("EXPIREAT nokey 10", 0),
			kc("PEXPIREAT nokey 10", 0),
			kc("TTL", arityErr("ttl")),
			kc("PTTL a b", arityErr("pttl")),
			kc("EXPIRETIME", arityErr("expiretime")),
			kc("PEXPIRETIME", arityErr("pexpiretime")),
			kc("PERSIST", arityErr("persist")),
			kc("EXPIRE k", arityErr("expire")),
			kc("PEXPIREAT k", arityErr("pexpireat")),
		}},
		{"expire_in_past_deletes", []kstep{
			put("k", "v", 0), kc("EXPIRE k 0", 1), kc("EXISTS k", 0),
			put("k", "v", 0), kc("EXPIRE k -1", 1), kc("EXISTS k", 0),
			put("k", "v", 0), kc("PEXPIRE k -9223372036854775808", 1), kc("EXISTS k", 0),
			put("k", "v", 0), kc("EXPIRE k -9223372036854775", 1), kc("EXISTS k", 0),
			put("k", "v", 0), kc("PEXPIREAT k 1", 1), kc("EXISTS k", 0),
			put("k", "v", 0), kc("PEXPIREAT k 0", 1), kc("EXISTS k", 0),
			put("k", "v", 0), kc("EXPIREAT k "+fmt.Sprint(nowS), 1), kc("EXISTS k", 0),
			put("k", "v", 0), kc("PEXPIREAT k "+fmt.Sprint(nowMs), 1), kc("EXISTS k", 0),
			put("k", "v", 0), kc("PEXPIREAT k "+fmt.Sprint(nowMs+1), 1), kc("PTTL k", 1),
			advance(time.Millisecond), kc("EXISTS k", 0), kc("PTTL k", -2),
			put("k", "v", 0), kc("PEXPIRE k 1", 1), kc("PTTL k", 1),
			advance(999 * time.Microsecond), kc("PTTL k", 1),
			advance(time.Microsecond), kc("TTL k", -2),
		}},
		{"expire_conditions", []kstep{
			put("k", "v", 0),
			kc("EXPIRE k 100 XX", 0),
			kc("EXPIRE k 100 GT", 0), // no TTL counts as infinite
			kc("EXPIRE k 100 LT", 1),
			kc("TTL k", 100),
			kc("EXPIRE k 50 NX", 0),
			kc("EXPIRE k 200 LT", 0),
			kc("EXPIRE k 100 LT", 0), // equal is not less
			kc("EXPIRE k 100 GT", 0), // nor greater
			kc("EXPIRE k 200 GT", 1),
			kc("TTL k", 200),
			kc("EXPIRE k 150 XX", 1),
			kc("TTL k", 150),
			kc("EXPIRE k 300 XX GT", 1),
			kc("EXPIRE k 100 xx lt", 1),
			kc("TTL k", 100),
			kc("PEXPIRE k 100001 GT", 1),
			kc("PTTL k", 100001),
			kc("PEXPIREAT k "+fmt.Sprint(nowMs+100001)+" LT", 0),
			kc("PEXPIREAT k "+fmt.Sprint(nowMs+100000)+" LT", 1),
			kc("PERSIST k", 1),
			kc("EXPIRE k 10 nX", 1),
			kc("TTL k", 10),
			kc("PERSIST k", 1),
			kc("EXPIRE k -1 GT", 0),
			kc("EXISTS k", 1),
			kc("EXPIRE k -1 LT", 1), // infinite > -1: deletes
			kc("EXISTS k", 0),
			kc("EXPIRE nokey 10 NX", 0),
			kc("EXPIRE nokey 10 NX NX", 0),
		}},
		{"expire_errors", []kstep{
			put("k", "v", 0),
			kc("EXPIRE k abc foo", "-ERR Unsupported option foo"),
			kc(`EXPIRE k 100 ""`, "-ERR Unsupported option "),
			kc("EXPIRE k abc", "-ERR value is not an integer or out of range"),
			kc("EXPIRE k 01", "-ERR value is not an integer or out of range"),
			kc("EXPIRE k -0", "-ERR value is not an integer or out of range"),
			kc("EXPIRE k +1", "-ERR value is not an integer or out of range"),
			kc("EXPIRE k 1.5", "-ERR value is not an integer or out of range"),
			kc("EXPIRE k 10 NX XX", "-ERR NX and XX, GT or LT options at the same time are not compatible"),
			kc("EXPIRE k abc XX NX", "-ERR NX and XX, GT or LT options at the same time are not compatible"),
			kc("EXPIRE k 10 NX GT", "-ERR NX and XX, GT or LT options at the same time are not compatible"),
			kc("EXPIRE k 10 LT NX", "-ERR NX and XX, GT or LT options at the same time are not compatible"),
			kc("EXPIRE k 10 GT LT", "-ERR GT and LT options at the same time are not compatible"),
			kc("EXPIRE k 10 NX XX foo", "-ERR Unsupported option foo"),
			kc("EXPIRE nokey 10 foo", "-ERR Unsupported option foo"),
			kc("EXPIRE k 9223372036854776", "-ERR invalid expire time in 'expire' command"),
			kc("EXPIRE k 9223372036854775", "-ERR invalid expire time in 'expire' command"),
			kc("EXPIRE k -9223372036854776", "-ERR invalid expire time in 'expire' command"),
			kc("PEXPIRE k 9223372036854775807", "-ERR invalid expire time in 'pexpire' command"),
			kc("EXPIREAT k 9223372036854776", "-ERR invalid expire time in 'expireat' command"),
			kc("EXPIRE nokey 9223372036854775", "-ERR invalid expire time in 'expire' command"),
			kc("EXPIRE k 9223372036854775808", "-ERR value is not an integer or out of range"),
			kc("TTL k", -1),
			kc("EXISTS k", 1),
			// Past year 2262 the ns expiry saturates (Redis would report
			// 9223372036854775807 here).
			kc("PEXPIREAT k 9223372036854775807", 1),
			kc("PEXPIRETIME k", int64(9223372036854)),
		}},
		{"randomkey", []kstep{
			kc("RANDOMKEY", nil),
			put("only", "1", 0),
			kc("RANDOMKEY", "only"),
			kc("RANDOMKEY x", arityErr("randomkey")),
			put("gone", "1", time.Second),
			kc("DEL only", 1),
			advance(time.Second),
			kc("RANDOMKEY", nil), // an expired key is never returned
		}},
		{"keys_scan_errors", []kstep{
			kc("KEYS", arityErr("keys")),
			kc("KEYS a b", arityErr("keys")),
			kc("SCAN", arityErr("scan")),
			kc("SCAN abc", "-ERR invalid cursor"),
			kc("SCAN abc COUNT 0", "-ERR invalid cursor"),
			kc("SCAN 0x1", "-ERR invalid cursor"),
			kc("SCAN +", "-ERR invalid cursor"),
			kc("SCAN -", "-ERR invalid cursor"),
			kc("SCAN 18446744073709551616", "-ERR invalid cursor"),
			kc("SCAN -18446744073709551616", "-ERR invalid cursor"),
			kc("SCAN 1.0", "-ERR invalid cursor"),
			kc("SCAN 0 COUNT", "-ERR syntax error"),
			kc("SCAN 0 COUNT 0", "-ERR syntax error"),
			kc("SCAN 0 COUNT -1", "-ERR syntax error"),
			kc("SCAN 0 COUNT abc", "-ERR value is not an integer or out of range"),
			kc("SCAN 0 COUNT 9223372036854775808", "-ERR value is not an integer or out of range"),
			kc("SCAN 0 MATCH", "-ERR syntax error"),
			kc("SCAN 0 TYPE", "-ERR syntax error"),
			kc("SCAN 0 TYPE string COUNT 0", "-ERR syntax error"),
			kc("SCAN 0 foo bar", "-ERR syntax error"),
			kc("SCAN 0", []any{"0", []string{}}),
			kc(`SCAN ""`, []any{"0", []string{}}),
			kc("SCAN 18446744073709551615", []any{"0", []string{}}),
			kc("SCAN -1", []any{"0", []string{}}),
			kc("SCAN +0 COUNT 5 MATCH x* TYPE string", []any{"0", []string{}}),
			put("a", "1", 0),
			kc("SCAN 0 count 2 COUNT 1000", []any{"0", []string{"a"}}),
			kc("SCAN 0 TYPE STRING", []any{"0", []string{"a"}}),
			kc("SCAN 0 TYPE hash", []any{"0", []string{}}),
			kc("SCAN 0 TYPE foo", []any{"0", []string{}}),
			kc("SCAN 0 MATCH b*", []any{"0", []string{}}),
			kc("SCAN 0 MATCH [a] MATCH a", []any{"0", []string{"a"}}),
			kc("KEYS [a", []string{"a"}),
			kc("KEYS ?", []string{"a"}),
			kc("KEYS b", []string{}),
		}},
		{"empty_key", []kstep{
			put("", "e", 0),
			kc(`EXISTS ""`, 1),
			kc("KEYS *", []string{""}), // "*" is no filter
			kc("KEYS **", []string{}),  // but the glob "*" never matches ""
			kc(`KEYS ""`, []string{""}),
			kc("SCAN 0 MATCH *", []any{"0", []string{""}}),
			kc("SCAN 0 MATCH **", []any{"0", []string{}}),
			kc("RANDOMKEY", ""),
			kc(`RENAME "" x`, "+OK"),
			kc(`EXISTS "" x`, 1),
		}},
		{"expired_keys_are_gone", []kstep{
			put("k", "v", time.Second), put("k2", "v", time.Second), put("live", "v", 0),
			advance(time.Second),
			kc("EXISTS k", 0), kc("TTL k", -2), kc("PTTL k", -2), kc("TYPE k", "+none"),
			kc("EXPIRETIME k", -2), kc("PERSIST k", 0), kc("EXPIRE k 10", 0),
			kc("RENAME k2 x", "-ERR no such key"), kc("COPY k2 x", 0),
			kc("DEL k k2", 0), kc("TOUCH k2", 0),
			kc("KEYS *", []string{"live"}),
			kc("SCAN 0 COUNT 100", []any{"0", []string{"live"}}),
			kc("RANDOMKEY", "live"),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk.Set(keysEpoch)
			if r := conn.do("FLUSHALL"); r != "+OK\r\n" {
				t.Fatalf("FLUSHALL: %q", r)
			}
			for i, st := range tc.steps {
				if st.act != nil {
					st.act()
					continue
				}
				if got := conn.do(st.cmd...); got != st.want {
					t.Errorf("step %d: %q\n got  %q\n want %q", i, strings.Join(st.cmd, " "), got, st.want)
				}
			}
		})
	}
}

// TestKeysExpiryNeverStoredDead checks that no EXPIRE variant leaves an
// entry whose expiry is <= 0 or <= now.
func TestKeysExpiryNeverStoredDead(t *testing.T) {
	s, addr, clk := startKeysTestServer(t, func(c *Config) { c.Hz = 1 })
	conn := dialKeys(t, addr)
	args := []string{"-9223372036854775808", "-1", "0", "1", "999", "1000", "1700000000", "1700000000000", "1700000000001", "9223372036854775807"}
	for _, cmd := range []string{"EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"} {
		for _, a := range args {
			keysPut(s, 0, "k", "v", 0)
			r := conn.do(cmd, "k", a)
			e, ok := keysEntry(s, 0, "k", clk.Now())
			if ok && (e.Exp < 0 || (e.Exp != 0 && e.Exp <= clk.Now())) {
				t.Errorf("%s k %s: reply %q left Exp=%d", cmd, a, r, e.Exp)
			}
			if !strings.HasPrefix(r, ":1") && !strings.HasPrefix(r, "-ERR invalid expire") {
				t.Errorf("%s k %s: reply %q", cmd, a, r)
			}
		}
	}
}

func TestKeysRESP3(t *testing.T) {
	_, addr, _ := startKeysTestServer(t)
	conn := dialKeys(t, addr)
	conn.do("HELLO", "3")
	if r := conn.do("RANDOMKEY"); r != "_\r\n" {
		t.Errorf("RANDOMKEY on an empty db in RESP3: %q", r)
	}
}

func TestKeysPatterns(t *testing.T) {
	s, addr, _ := startKeysTestServer(t)
	rc := keysClient(t, addr)
	ctx := context.Background()
	all := []string{"hello", "hallo", "hxllo", "hllo", "heeeello", "h*llo", "h?llo", "h[a]llo", "h\\llo", "user:1", "user:2", "user:10", "USER:3", ""}
	for _, k := range all {
		keysPut(s, 0, k, "v", 0)
	}
	cases := []struct {
		pat  string
		want []string
	}{
		{"*", all},
		{"h?llo", []string{"hello", "hallo", "hxllo", "h*llo", "h?llo", "h\\llo"}},
		{"h*llo", []string{"hello", "hallo", "hxllo", "hllo", "heeeello", "h*llo", "h?llo", "h[a]llo", "h\\llo"}},
		{"h[ae]llo", []string{"hello", "hallo"}},
		{"h[^e]llo", []string{"hallo", "hxllo", "h*llo", "h?llo", "h\\llo"}},
		{"h[a-b]llo", []string{"hallo"}},
		{"h[b-a]llo", []string{"hallo"}},
		{"h\\*llo", []string{"h*llo"}},
		{"h\\?llo", []string{"h?llo"}},
		{"h\\[a]llo", []string{"h[a]llo"}},
		{"h\\\\llo", []string{"h\\llo"}},
		{"user:?", []string{"user:1", "user:2"}},
		{"user:*", []string{"user:1", "user:2", "user:10"}},
		{"[uU]SER:*", []string{"USER:3"}},
		{"[uU]ser:1*", []string{"user:1", "user:10"}},
		{"*0", []string{"user:10"}},
		{"nomatch*", nil},
		{"h[", nil},
		{"h[a", nil},
		{"user:[0-9", []string{"user:1", "user:2"}},
	}
	for _, tc := range cases {
		got, err := rc.Keys(ctx, tc.pat).Result()
		if err != nil {
			t.Fatalf("KEYS %q: %v", tc.pat, err)
		}
		if !sameSet(got, tc.want) {
			t.Errorf("KEYS %q = %q, want %q", tc.pat, got, tc.want)
		}
		// SCAN MATCH returns the same set.
		var scanned []string
		var cursor uint64
		for {
			ks, next, err := rc.Scan(ctx, cursor, tc.pat, 3).Result()
			if err != nil {
				t.Fatalf("SCAN MATCH %q: %v", tc.pat, err)
			}
			scanned = append(scanned, ks...)
			if cursor = next; cursor == 0 {
				break
			}
		}
		if !sameSet(scanned, tc.want) {
			t.Errorf("SCAN MATCH %q = %q, want %q", tc.pat, scanned, tc.want)
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// scanAll runs a full SCAN with the given COUNT and returns how many times
// each key was seen.
func scanAll(t *testing.T, rc *redis.Client, count int64) map[string]int {
	t.Helper()
	ctx := context.Background()
	seen := make(map[string]int)
	var cursor uint64
	for calls := 0; ; calls++ {
		if calls > 1_000_000 {
			t.Fatal("SCAN does not terminate")
		}
		keys, next, err := rc.Scan(ctx, cursor, "", count).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			seen[k]++
		}
		if cursor = next; cursor == 0 {
			return seen
		}
	}
}

func TestScanEveryKeyOnce(t *testing.T) {
	s, addr, _ := startKeysTestServer(t)
	rc := keysClient(t, addr)
	const n = 10000
	for i := 0; i < n; i++ {
		keysPut(s, 0, fmt.Sprintf("key:%d", i), "v", 0)
	}
	for _, count := range []int64{10, 1, 1000, 100000} {
		seen := scanAll(t, rc, count)
		if len(seen) != n {
			t.Errorf("COUNT %d: saw %d distinct keys, want %d", count, len(seen), n)
		}
		for k, c := range seen {
			if c != 1 {
				t.Errorf("COUNT %d: key %q returned %d times", count, k, c)
			}
		}
	}
}

// TestScanWithConcurrentChanges scans while other clients insert and delete
// keys (COPY and DEL). Every key present for the whole scan must be returned
// exactly once.
func TestScanWithConcurrentChanges(t *testing.T) {
	s, addr, _ := startKeysTestServer(t, func(c *Config) { c.Shards = 8 })
	rc := keysClient(t, addr)
	const stable = 5000
	for i := 0; i < stable; i++ {
		keysPut(s, 0, fmt.Sprintf("stable:%d", i), "v", 0)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var ops atomic.Int64
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			ctx := context.Background()
			c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true})
			defer c.Close()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for !stop.Load() {
				k := fmt.Sprintf("churn:%d:%d", w, r.IntN(2000))
				if r.IntN(2) == 0 {
					c.Copy(ctx, "stable:0", k, 0, true)
				} else {
					c.Del(ctx, k)
				}
				ops.Add(1)
			}
		}(w)
	}
	for round := 0; round < 3; round++ {
		seen := scanAll(t, rc, 10)
		for i := 0; i < stable; i++ {
			k := fmt.Sprintf("stable:%d", i)
			if seen[k] != 1 {
				t.Fatalf("round %d: stable key %q returned %d times", round, k, seen[k])
			}
		}
		for k, c := range seen {
			if c != 1 {
				t.Fatalf("round %d: key %q returned %d times", round, k, c)
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	if ops.Load() == 0 {
		t.Fatal("no concurrent changes happened")
	}
}

// TestActiveExpiry checks that keys with a TTL disappear once the clock
// passes their expiry, without any client touching them.
func TestActiveExpiry(t *testing.T) {
	s, addr, clk := startKeysTestServer(t, func(c *Config) { c.Hz = 100 })
	rc := keysClient(t, addr)
	ctx := context.Background()
	const withTTL, without = 2000, 100
	for i := 0; i < withTTL; i++ {
		keysPut(s, 0, fmt.Sprintf("ttl:%d", i), "v", clk.Now()+int64(time.Second))
	}
	for i := 0; i < without; i++ {
		keysPut(s, 0, fmt.Sprintf("keep:%d", i), "v", 0)
	}
	// A key in another database expires too.
	keysPut(s, 3, "other-db", "v", clk.Now()+int64(time.Second))
	time.Sleep(50 * time.Millisecond) // some cycles run: nothing is due yet
	if n := rc.DBSize(ctx).Val(); n != withTTL+without {
		t.Fatalf("DBSIZE before expiry = %d, want %d", n, withTTL+without)
	}
	clk.Advance(time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for s.dbs[0].Len() != without || s.dbs[3].Len() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("active expiry left %d keys in db 0 (want %d), %d in db 3",
				s.dbs[0].Len(), without, s.dbs[3].Len())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := rc.DBSize(ctx).Val(); n != without {
		t.Fatalf("DBSIZE = %d, want %d", n, without)
	}
	if got := s.dbs[0].ExpiredKeys(); got != withTTL {
		t.Errorf("ExpiredKeys = %d, want %d", got, withTTL)
	}
	if got := s.dbs[0].Expires(); got != 0 {
		t.Errorf("Expires = %d, want 0", got)
	}
}

// TestLazyExpiry checks that an access removes an expired key at once. The
// background cycle runs once a second here; should a tick fall between the
// clock move and the access it would remove the key itself, and the checks
// below would still hold.
func TestLazyExpiry(t *testing.T) {
	s, addr, clk := startKeysTestServer(t, func(c *Config) { c.Hz = 1 })
	conn := dialKeys(t, addr)
	keysPut(s, 0, "k", "v", clk.Now()+int64(time.Second))
	if r := conn.do("PTTL", "k"); r != ":1000\r\n" {
		t.Fatalf("PTTL = %q", r)
	}
	clk.Advance(time.Second - 1)
	if r := conn.do("PTTL", "k"); r != ":1\r\n" {
		t.Fatalf("PTTL 1ns before expiry = %q", r)
	}
	clk.Advance(1)
	if r := conn.do("EXISTS", "k"); r != ":0\r\n" {
		t.Fatalf("EXISTS after expiry = %q", r)
	}
	if n := s.dbs[0].Len(); n != 0 {
		t.Fatalf("Len after access = %d, want 0", n)
	}
	if n := s.dbs[0].ExpiredKeys(); n != 1 {
		t.Fatalf("ExpiredKeys = %d, want 1", n)
	}
}

// TestKeyspaceCommandsInExec runs KEYS, SCAN and RANDOMKEY inside EXEC,
// where every shard is already held (x.ex.locks.all).
func TestKeyspaceCommandsInExec(t *testing.T) {
	s, addr, _ := startKeysTestServer(t)
	conn := dialKeys(t, addr)
	keysPut(s, 0, "a", "1", 0)
	for _, c := range [][]string{{"MULTI"}, {"KEYS", "*"}, {"SCAN", "0"}, {"RANDOMKEY"}, {"RENAME", "a", "b"}, {"KEYS", "*"}, {"DEL", "b"}, {"RANDOMKEY"}} {
		conn.do(c...)
	}
	want := keysResp([]any{[]string{"a"}, []any{"0", []string{"a"}}, "a", "+OK", []string{"b"}, 1, nil})
	if got := conn.do("EXEC"); got != want {
		t.Errorf("EXEC = %q\nwant %q", got, want)
	}
	// A plain transaction of key commands.
	keysPut(s, 0, "x", "1", 0)
	for _, c := range [][]string{{"MULTI"}, {"EXPIRE", "x", "10"}, {"TTL", "x"}, {"COPY", "x", "y"}, {"PTTL", "y"}, {"EXISTS", "x", "y"}} {
		conn.do(c...)
	}
	want = keysResp([]any{1, 10, 1, 10000, 2})
	if got := conn.do("EXEC"); got != want {
		t.Errorf("EXEC = %q\nwant %q", got, want)
	}
}

// TestKeysWatch checks that key commands invalidate a WATCH on the keys they
// change, and only those.
func TestKeysWatch(t *testing.T) {
	s, addr, _ := startKeysTestServer(t)
	a, b := dialKeys(t, addr), dialKeys(t, addr)
	for _, change := range [][]string{
		{"DEL", "w"}, {"EXPIRE", "w", "100"}, {"PERSIST", "w"}, {"RENAME", "w", "z"},
		{"RENAME", "z", "w"}, {"COPY", "z", "w", "REPLACE"}, {"EXPIRE", "w", "-1"},
	} {
		keysPut(s, 0, "w", "v", 0)
		keysPut(s, 0, "z", "v", int64(1)<<62)
		if change[0] == "PERSIST" {
			keysPut(s, 0, "w", "v", int64(1)<<62)
		}
		a.do("WATCH", "w")
		b.do(change...)
		a.do("MULTI")
		a.do("EXISTS", "w")
		if r := a.do("EXEC"); r != "*-1\r\n" {
			t.Errorf("%v did not abort a WATCH on w: %q", change, r)
		}
	}
	// Commands that change nothing leave the watch intact.
	for _, same := range [][]string{
		{"EXISTS", "w"}, {"TTL", "w"}, {"TYPE", "w"}, {"PERSIST", "w"}, {"EXPIRE", "w", "10", "XX"},
		{"RENAMENX", "z", "w"}, {"COPY", "z", "w"}, {"KEYS", "*"}, {"SCAN", "0"}, {"DEL", "nokey"},
	} {
		keysPut(s, 0, "w", "v", 0)
		a.do("WATCH", "w")
		b.do(same...)
		a.do("MULTI")
		a.do("EXISTS", "w")
		if r := a.do("EXEC"); r != "*1\r\n:1\r\n" {
			t.Errorf("%v aborted a WATCH on w: %q", same, r)
		}
	}
}

// TestKeysNoPanic sends random arguments to every key command: each reply
// must be a proper reply, never the recovered-panic "internal error".
func TestKeysNoPanic(t *testing.T) {
	s, addr, _ := startKeysTestServer(t)
	conn := dialKeys(t, addr)
	words := []string{"", "k", "k2", "0", "-1", "1", "10", "NX", "XX", "GT", "LT", "db", "DB", "0", "1", "16",
		"replace", "match", "count", "type", "*", "[", "\\", "9223372036854775807", "-9223372036854775808",
		"18446744073709551615", "string", "abc", "\x00\xff"}
	r := rand.New(rand.NewPCG(3, 4))
	for _, cmd := range keyCommands() {
		for i := 0; i < 300; i++ {
			if r.IntN(10) == 0 {
				keysPut(s, 0, "k", "v", int64(r.IntN(3))*keysEpoch)
			}
			args := []string{cmd.Name}
			for n := r.IntN(6); n > 0; n-- {
				args = append(args, words[r.IntN(len(words))])
			}
			got := conn.do(args...)
			if strings.Contains(got, "internal error") {
				t.Fatalf("%q: %q", args, got)
			}
		}
	}
}

func TestKeyCommandRows(t *testing.T) {
	want := map[string]struct {
		arity             int
		first, last, step int
		flags             []string
		since             string
	}{
		"del":         {-2, 1, -1, 1, []string{"write"}, "1.0.0"},
		"unlink":      {-2, 1, -1, 1, []string{"write", "fast"}, "4.0.0"},
		"exists":      {-2, 1, -1, 1, []string{"readonly", "fast"}, "1.0.0"},
		"touch":       {-2, 1, -1, 1, []string{"readonly", "fast"}, "3.2.1"},
		"type":        {2, 1, 1, 1, []string{"readonly", "fast"}, "1.0.0"},
		"rename":      {3, 1, 2, 1, []string{"write"}, "1.0.0"},
		"renamenx":    {3, 1, 2, 1, []string{"write", "fast"}, "1.0.0"},
		"copy":        {-3, 1, 2, 1, []string{"write", "denyoom"}, "6.2.0"},
		"expire":      {-3, 1, 1, 1, []string{"write", "fast"}, "1.0.0"},
		"pexpire":     {-3, 1, 1, 1, []string{"write", "fast"}, "2.6.0"},
		"expireat":    {-3, 1, 1, 1, []string{"write", "fast"}, "1.2.0"},
		"pexpireat":   {-3, 1, 1, 1, []string{"write", "fast"}, "2.6.0"},
		"ttl":         {2, 1, 1, 1, []string{"readonly", "fast"}, "1.0.0"},
		"pttl":        {2, 1, 1, 1, []string{"readonly", "fast"}, "2.6.0"},
		"expiretime":  {2, 1, 1, 1, []string{"readonly", "fast"}, "7.0.0"},
		"pexpiretime": {2, 1, 1, 1, []string{"readonly", "fast"}, "7.0.0"},
		"persist":     {2, 1, 1, 1, []string{"write", "fast"}, "2.2.0"},
		"keys":        {2, 0, 0, 0, []string{"readonly"}, "1.0.0"},
		"scan":        {-2, 0, 0, 0, []string{"readonly"}, "2.8.0"},
		"randomkey":   {1, 0, 0, 0, []string{"readonly"}, "1.0.0"},
	}
	rows := keyCommands()
	if len(rows) != len(want) {
		t.Errorf("%d rows, want %d", len(rows), len(want))
	}
	for _, c := range rows {
		w, ok := want[c.Name]
		if !ok {
			t.Errorf("unexpected row %q", c.Name)
			continue
		}
		if c.Arity != w.arity || c.FirstKey != w.first || c.LastKey != w.last || c.Step != w.step || c.Since != w.since || c.Group != "generic" || c.Summary == "" {
			t.Errorf("%s: arity %d keys %d,%d,%d since %s group %s", c.Name, c.Arity, c.FirstKey, c.LastKey, c.Step, c.Since, c.Group)
		}
		if got := c.FlagNames(); !sameSet(got, w.flags) {
			t.Errorf("%s: flags %v, want %v", c.Name, got, w.flags)
		}
		if (c.FirstKey == 0) != c.Has(command.Keyspace) {
			t.Errorf("%s: command.Keyspace must be set exactly on the commands without key positions", c.Name)
		}
	}
}
