package server

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/shards"
)

// Times used by the TTL tests: the manual clock starts at testEpoch.
const (
	strEpochMs = testEpoch / 1e6
	strSec     = int64(time.Second)
	strMs      = int64(time.Millisecond)
)

func newStrGoRedis(t *testing.T, addr string, proto int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto, MaxRetries: -1, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return c
}

// strEntry reads key from database 0 directly, locking its shard.
func strEntry(s *Server, key string) (shards.Entry, bool) {
	db := s.dbs[0]
	i := db.ShardOf([]byte(key))
	db.Lock(i)
	defer db.Unlock(i)
	return db.Get([]byte(key), s.clock.Now())
}

// strExpOf returns the stored expiry of key (0: none); the test fails when the
// key is missing.
func strExpOf(t *testing.T, s *Server, key string) int64 {
	t.Helper()
	e, ok := strEntry(s, key)
	if !ok {
		t.Fatalf("key %q missing", key)
	}
	return e.Exp
}

// putNonString stores a value of a non-string kind, as a future hash would be.
func putNonString(s *Server, key string) {
	db := s.dbs[0]
	i := db.ShardOf([]byte(key))
	db.Lock(i)
	db.Put([]byte(key), shards.Entry{Kind: shards.Kind(9), Obj: "hash"})
	db.Unlock(i)
}

// strScript is a table of raw commands and their exact RESP replies.
type strScript []struct {
	cmd  []string
	want string
}

func (sc strScript) run(t *testing.T, rc *rawConn) {
	t.Helper()
	for _, st := range sc {
		if got := rc.do(st.cmd...); got != st.want {
			t.Errorf("%q:\n got  %q\n want %q", st.cmd, got, st.want)
		}
	}
}

func cmdArgs(args ...string) []string { return args }

const (
	strOK          = "+OK\r\n"
	strNil         = "$-1\r\n"
	strEmpty       = "$0\r\n\r\n"
	strSyntax      = "-ERR syntax error\r\n"
	strNotInt      = "-ERR value is not an integer or out of range\r\n"
	strNotFloat    = "-ERR value is not a valid float\r\n"
	strWrongType   = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
	strOverflow    = "-ERR increment or decrement would overflow\r\n"
	strNaNInf      = "-ERR increment would produce NaN or Infinity\r\n"
	strTooBig      = "-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n"
	strOffset      = "-ERR offset is out of range\r\n"
	strDecOverflow = "-ERR decrement would overflow\r\n"
)

func strBulk(s string) string { return fmt.Sprintf("$%d\r\n%s\r\n", len(s), s) }
func strInt(n int64) string   { return fmt.Sprintf(":%d\r\n", n) }
func strArity(cmd string) string {
	return "-ERR wrong number of arguments for '" + cmd + "' command\r\n"
}
func strInvalidExp(cmd string) string {
	return "-ERR invalid expire time in '" + cmd + "' command\r\n"
}

func TestStringsGoRedis(t *testing.T) {
	_, addr, _ := newTestServer(t)
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprint("resp", proto), func(t *testing.T) {
			rdb := newStrGoRedis(t, addr, proto)
			rdb.FlushAll(ctx)
			if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if v, err := rdb.Get(ctx, "k").Result(); err != nil || v != "v" {
				t.Fatalf("GET = %q, %v", v, err)
			}
			if _, err := rdb.Get(ctx, "missing").Result(); !errors.Is(err, redis.Nil) {
				t.Fatalf("GET missing: %v", err)
			}
			if ok, _ := rdb.SetNX(ctx, "k", "x", 0).Result(); ok {
				t.Fatal("SETNX on existing key succeeded")
			}
			if ok, _ := rdb.SetXX(ctx, "k", "w", 0).Result(); !ok {
				t.Fatal("SET XX on existing key failed")
			}
			if v, _ := rdb.GetSet(ctx, "k", "z").Result(); v != "w" {
				t.Fatalf("GETSET = %q", v)
			}
			if err := rdb.MSet(ctx, "a", "1", "b", "2").Err(); err != nil {
				t.Fatal(err)
			}
			vals, err := rdb.MGet(ctx, "a", "nope", "b").Result()
			if err != nil || vals[0] != "1" || vals[1] != nil || vals[2] != "2" {
				t.Fatalf("MGET = %v, %v", vals, err)
			}
			if ok, _ := rdb.MSetNX(ctx, "a", "x", "c", "y").Result(); ok {
				t.Fatal("MSETNX with an existing key succeeded")
			}
			if n, _ := rdb.Incr(ctx, "a").Result(); n != 2 {
				t.Fatalf("INCR = %d", n)
			}
			if n, _ := rdb.IncrBy(ctx, "a", 40).Result(); n != 42 {
				t.Fatalf("INCRBY = %d", n)
			}
			if n, _ := rdb.DecrBy(ctx, "a", 2).Result(); n != 40 {
				t.Fatalf("DECRBY = %d", n)
			}
			if n, _ := rdb.Decr(ctx, "a").Result(); n != 39 {
				t.Fatalf("DECR = %d", n)
			}
			if f, _ := rdb.IncrByFloat(ctx, "fl", 0.5).Result(); f != 0.5 {
				t.Fatalf("INCRBYFLOAT = %v", f)
			}
			if n, _ := rdb.Append(ctx, "ap", "abc").Result(); n != 3 {
				t.Fatalf("APPEND = %d", n)
			}
			if n, _ := rdb.StrLen(ctx, "ap").Result(); n != 3 {
				t.Fatalf("STRLEN = %d", n)
			}
			if n, _ := rdb.SetRange(ctx, "ap", 1, "XY").Result(); n != 3 {
				t.Fatalf("SETRANGE = %d", n)
			}
			if v, _ := rdb.GetRange(ctx, "ap", 0, -1).Result(); v != "aXY" {
				t.Fatalf("GETRANGE = %q", v)
			}
			if v, _ := rdb.GetDel(ctx, "ap").Result(); v != "aXY" {
				t.Fatalf("GETDEL = %q", v)
			}
			if _, err := rdb.Get(ctx, "ap").Result(); !errors.Is(err, redis.Nil) {
				t.Fatalf("GET after GETDEL: %v", err)
			}
			if err := rdb.Incr(ctx, "k").Err(); err == nil || err.Error() != "ERR value is not an integer or out of range" {
				t.Fatalf("INCR on text: %v", err)
			}
			big := strings.Repeat("x", 1<<20)
			if err := rdb.Set(ctx, "big", big, 0).Err(); err != nil {
				t.Fatal(err)
			}
			if v, _ := rdb.Get(ctx, "big").Result(); v != big {
				t.Fatal("large value changed")
			}
		})
	}
}

func TestSetOptionsAndTTL(t *testing.T) {
	s, addr, clk := newTestServer(t)
	rc := dialRaw(t, addr)
	now := clk.Now()

	strScript{
		{cmdArgs("SET", "k", "v", "EX", "100"), strOK},
	}.run(t, rc)
	if got := strExpOf(t, s, "k"); got != now+100*strSec {
		t.Fatalf("EX 100: exp %d, want %d", got, now+100*strSec)
	}
	rc.do("SET", "k", "v", "PX", "1500")
	if got := strExpOf(t, s, "k"); got != now+1500*strMs {
		t.Fatalf("PX 1500: exp %d", got)
	}
	rc.do("SET", "k", "v", "EXAT", fmt.Sprint(strEpochMs/1000+50))
	if got := strExpOf(t, s, "k"); got != now+50*strSec {
		t.Fatalf("EXAT: exp %d", got)
	}
	rc.do("SET", "k", "v", "PXAT", fmt.Sprint(strEpochMs+1234))
	if got := strExpOf(t, s, "k"); got != now+1234*strMs {
		t.Fatalf("PXAT: exp %d", got)
	}
	// KEEPTTL keeps it, with and without GET; a plain SET clears it.
	strScript{
		{cmdArgs("SET", "k", "v2", "KEEPTTL"), strOK},
		{cmdArgs("SET", "k", "v3", "KEEPTTL", "GET"), strBulk("v2")},
	}.run(t, rc)
	if got := strExpOf(t, s, "k"); got != now+1234*strMs {
		t.Fatalf("KEEPTTL: exp %d", got)
	}
	rc.do("SET", "k", "v4")
	if got := strExpOf(t, s, "k"); got != 0 {
		t.Fatalf("SET without KEEPTTL kept exp %d", got)
	}
	// KEEPTTL on a new key: no expiry.
	rc.do("SET", "fresh", "v", "KEEPTTL")
	if got := strExpOf(t, s, "fresh"); got != 0 {
		t.Fatalf("KEEPTTL on new key: exp %d", got)
	}
	// XX with an expiry updates value and TTL.
	rc.do("SET", "k", "v5", "XX", "EX", "7")
	if got := strExpOf(t, s, "k"); got != now+7*strSec {
		t.Fatalf("XX EX: exp %d", got)
	}
	// The key expires when the clock passes its time.
	clk.Advance(7 * time.Second)
	strScript{
		{cmdArgs("GET", "k"), strNil},
		{cmdArgs("SET", "k", "a", "XX"), strNil},
		{cmdArgs("SET", "k", "a", "NX", "PX", "10"), strOK},
	}.run(t, rc)
	clk.Advance(9 * time.Millisecond)
	strScript{{cmdArgs("GET", "k"), strBulk("a")}}.run(t, rc)
	clk.Advance(time.Millisecond)
	strScript{{cmdArgs("GET", "k"), strNil}, {cmdArgs("SET", "k", "b", "NX", "GET"), strNil}, {cmdArgs("GET", "k"), strBulk("b")}}.run(t, rc)

	// An absolute time at or before now deletes the key, whatever it held.
	now = clk.Now()
	strScript{
		{cmdArgs("SET", "k", "c", "PXAT", fmt.Sprint(now/1e6)), strOK},
		{cmdArgs("GET", "k"), strNil},
		{cmdArgs("SET", "k", "d"), strOK},
		{cmdArgs("SET", "k", "e", "EXAT", "1", "GET"), strBulk("d")},
		{cmdArgs("GET", "k"), strNil},
		{cmdArgs("SET", "k", "f", "PXAT", fmt.Sprint(now/1e6+1)), strOK},
		{cmdArgs("GET", "k"), strBulk("f")},
	}.run(t, rc)
	if e, _ := strEntry(s, "k"); e.Exp <= 0 {
		t.Fatalf("stored exp %d", e.Exp)
	}
}

// Relative expiry follows Redis: milliseconds from the current Unix strMs.
func TestSetSubMillisecondClock(t *testing.T) {
	s, addr, clk := newTestServer(t)
	rc := dialRaw(t, addr)
	clk.Set(testEpoch + 700_000) // 0.7 strMs past a millisecond
	rc.do("SET", "k", "v", "PX", "1")
	if got, want := strExpOf(t, s, "k"), testEpoch+strMs; got != want {
		t.Fatalf("exp %d, want %d", got, want)
	}
	rc.do("PSETEX", "p", "5", "v")
	if got, want := strExpOf(t, s, "p"), testEpoch+5*strMs; got != want {
		t.Fatalf("PSETEX exp %d, want %d", got, want)
	}
}

func TestSetExPSetEx(t *testing.T) {
	s, addr, clk := newTestServer(t)
	rc := dialRaw(t, addr)
	now := clk.Now()
	strScript{
		{cmdArgs("SETEX", "k", "10", "v"), strOK},
		{cmdArgs("GET", "k"), strBulk("v")},
		{cmdArgs("PSETEX", "p", "2500", "w"), strOK},
		{cmdArgs("GET", "p"), strBulk("w")},
		{cmdArgs("SETEX", "k", "0", "v"), strInvalidExp("setex")},
		{cmdArgs("SETEX", "k", "-3", "v"), strInvalidExp("setex")},
		{cmdArgs("SETEX", "k", "9223372036854775", "v"), strInvalidExp("setex")},
		{cmdArgs("SETEX", "k", "x", "v"), strNotInt},
		{cmdArgs("PSETEX", "k", "0", "v"), strInvalidExp("psetex")},
		{cmdArgs("PSETEX", "k", "9223372036854775807", "v"), strInvalidExp("psetex")},
		{cmdArgs("PSETEX", "k", "1.5", "v"), strNotInt},
		{cmdArgs("SETEX", "k", "10"), strArity("setex")},
		{cmdArgs("PSETEX", "k", "10", "v", "x"), strArity("psetex")},
	}.run(t, rc)
	if got := strExpOf(t, s, "k"); got != now+10*strSec {
		t.Fatalf("SETEX exp %d", got)
	}
	if got := strExpOf(t, s, "p"); got != now+2500*strMs {
		t.Fatalf("PSETEX exp %d", got)
	}
	// SETEX replaces the TTL and the value of a key that had one.
	clk.Advance(time.Second)
	rc.do("SETEX", "k", "100", "v2")
	if got := strExpOf(t, s, "k"); got != now+101*strSec {
		t.Fatalf("SETEX again: exp %d", got)
	}
}

func TestSetSyntax(t *testing.T) {
	_, addr, _ := newTestServer(t)
	rc := dialRaw(t, addr)
	strScript{
		{cmdArgs("SET", "k", "v", "EX", "10", "PX", "10"), strSyntax},
		{cmdArgs("SET", "k", "v", "PX", "10", "EXAT", "10"), strSyntax},
		{cmdArgs("SET", "k", "v", "EXAT", "10", "PXAT", "10"), strSyntax},
		{cmdArgs("SET", "k", "v", "KEEPTTL", "EX", "10"), strSyntax},
		{cmdArgs("SET", "k", "v", "EX", "10", "KEEPTTL"), strSyntax},
		{cmdArgs("SET", "k", "v", "NX", "XX"), strSyntax},
		{cmdArgs("SET", "k", "v", "XX", "NX"), strSyntax},
		{cmdArgs("SET", "k", "v", "EX"), strSyntax},
		{cmdArgs("SET", "k", "v", "PERSIST"), strSyntax},
		{cmdArgs("SET", "k", "v", "bogus"), strSyntax},
		{cmdArgs("SET", "k", "v", "EX", "x", "NX", "XX"), strSyntax}, // syntax before value
		{cmdArgs("SET", "k", "v", "EX", "x"), strNotInt},
		{cmdArgs("SET", "k", "v", "EX", "0"), strInvalidExp("set")},
		{cmdArgs("SET", "k", "v", "EX", "-1"), strInvalidExp("set")},
		{cmdArgs("SET", "k", "v", "PXAT", "0"), strInvalidExp("set")},
		{cmdArgs("SET", "k", "v", "EX", "9223372036854775807"), strInvalidExp("set")},
		{cmdArgs("SET", "k", "v", "PX", "9223372036854775807"), strInvalidExp("set")},
		{cmdArgs("SET", "k", "v", "EXAT", "9223372036854775807"), strInvalidExp("set")},
		{cmdArgs("SET", "k", "v", "EX", "9223372036854775"), strInvalidExp("set")},
		{cmdArgs("SET", "k", "v", "EX", "x", "EX", "5"), strOK}, // the last one counts
		{cmdArgs("SET", "k", "v", "nx", "NX"), strNil},
		{cmdArgs("SET", "k", "v", "xX", "Get", "Ex", "5", "ex", "6"), strBulk("v")},
		{cmdArgs("SET", "k", "w", "KEEPTTL", "keepttl"), strOK},
		{cmdArgs("SET", "k", "v", "nx\x00junk"), strNil}, // Redis compares C strings
		{cmdArgs("SET", "k", "v", "nxx"), strSyntax},
		{cmdArgs("SET", "k"), strArity("set")},
		{cmdArgs("GET"), strArity("get")},
		{cmdArgs("GET", "a", "b"), strArity("get")},
	}.run(t, rc)
}

func TestGetEx(t *testing.T) {
	s, addr, clk := newTestServer(t)
	rc := dialRaw(t, addr)
	now := clk.Now()
	strScript{
		{cmdArgs("GETEX", "nokey"), strNil},
		{cmdArgs("GETEX", "nokey", "EX", "0"), strNil},   // no key: no validation
		{cmdArgs("GETEX", "nokey", "EX", "abc"), strNil}, // likewise
		{cmdArgs("GETEX", "nokey", "FOO"), strSyntax},
		{cmdArgs("SET", "k", "v"), strOK},
		{cmdArgs("GETEX", "k"), strBulk("v")},
	}.run(t, rc)
	if got := strExpOf(t, s, "k"); got != 0 {
		t.Fatalf("GETEX without options set exp %d", got)
	}
	steps := []struct {
		args []string
		exp  int64
	}{
		{cmdArgs("EX", "100"), now + 100*strSec},
		{cmdArgs("PX", "1500"), now + 1500*strMs},
		{cmdArgs("EXAT", fmt.Sprint(strEpochMs/1000+30)), now + 30*strSec},
		{cmdArgs("PXAT", fmt.Sprint(strEpochMs+20)), now + 20*strMs},
		{cmdArgs("PERSIST"), 0},
		{cmdArgs("PERSIST"), 0},
		{cmdArgs("ex", "5", "EX", "6"), now + 6*strSec},
	}
	for _, st := range steps {
		if got := rc.do(append(cmdArgs("GETEX", "k"), st.args...)...); got != strBulk("v") {
			t.Fatalf("GETEX %v: %q", st.args, got)
		}
		if got := strExpOf(t, s, "k"); got != st.exp {
			t.Fatalf("GETEX %v: exp %d, want %d", st.args, got, st.exp)
		}
	}
	strScript{
		{cmdArgs("GETEX", "k", "EX", "10", "PX", "10"), strSyntax},
		{cmdArgs("GETEX", "k", "PERSIST", "EX", "10"), strSyntax},
		{cmdArgs("GETEX", "k", "EX", "10", "PERSIST"), strSyntax},
		{cmdArgs("GETEX", "k", "KEEPTTL"), strSyntax},
		{cmdArgs("GETEX", "k", "NX"), strSyntax},
		{cmdArgs("GETEX", "k", "XX"), strSyntax},
		{cmdArgs("GETEX", "k", "GET"), strSyntax},
		{cmdArgs("GETEX", "k", "EX"), strSyntax},
		{cmdArgs("GETEX", "k", "EX", "0"), strInvalidExp("getex")},
		{cmdArgs("GETEX", "k", "PX", "-1"), strInvalidExp("getex")},
		{cmdArgs("GETEX", "k", "EX", "x"), strNotInt},
		{cmdArgs("GETEX", "k", "PX", "9223372036854775807"), strInvalidExp("getex")},
		{cmdArgs("GETEX", "k", "EXAT", "9223372036854775807"), strInvalidExp("getex")},
		{cmdArgs("GETEX"), strArity("getex")},
	}.run(t, rc)
	if got := strExpOf(t, s, "k"); got != now+6*strSec {
		t.Fatalf("failed GETEX changed exp to %d", got)
	}
	// An absolute time in the past deletes the key after replying.
	strScript{
		{cmdArgs("GETEX", "k", "EXAT", "1"), strBulk("v")},
		{cmdArgs("GET", "k"), strNil},
		{cmdArgs("SET", "k", "7"), strOK},
		{cmdArgs("GETEX", "k", "PXAT", fmt.Sprint(clk.Now()/1e6)), strBulk("7")},
		{cmdArgs("GET", "k"), strNil},
	}.run(t, rc)
}

func TestTTLKeptOrCleared(t *testing.T) {
	s, addr, clk := newTestServer(t)
	rc := dialRaw(t, addr)
	exp := clk.Now() + 100*strSec
	setup := func(key, val string) {
		t.Helper()
		if r := rc.do("SET", key, val, "EX", "100"); r != strOK {
			t.Fatalf("SET: %q", r)
		}
	}
	kept := []struct {
		setup string
		cmd   []string
		want  string
	}{
		{"5", cmdArgs("INCR", "k"), strInt(6)},
		{"5", cmdArgs("DECR", "k"), strInt(4)},
		{"5", cmdArgs("INCRBY", "k", "10"), strInt(15)},
		{"5", cmdArgs("DECRBY", "k", "10"), strInt(-5)},
		{"5", cmdArgs("INCRBYFLOAT", "k", "0.5"), strBulk("5.5")},
		{"ab", cmdArgs("APPEND", "k", "cd"), strInt(4)},
		{"ab", cmdArgs("APPEND", "k", ""), strInt(2)},
		{"ab", cmdArgs("SETRANGE", "k", "1", "XY"), strInt(3)},
		{"ab", cmdArgs("SET", "k", "z", "KEEPTTL"), strOK},
		{"ab", cmdArgs("GETEX", "k"), strBulk("ab")},
	}
	for _, k := range kept {
		setup("k", k.setup)
		if got := rc.do(k.cmd...); got != k.want {
			t.Fatalf("%q: %q, want %q", k.cmd, got, k.want)
		}
		if got := strExpOf(t, s, "k"); got != exp {
			t.Fatalf("%q lost the TTL: exp %d", k.cmd, got)
		}
	}
	cleared := [][]string{
		cmdArgs("SET", "k", "z"),
		cmdArgs("GETSET", "k", "z"),
		cmdArgs("MSET", "k", "z"),
		cmdArgs("GETEX", "k", "PERSIST"),
	}
	for _, cmd := range cleared {
		setup("k", "v")
		rc.do(cmd...)
		if got := strExpOf(t, s, "k"); got != 0 {
			t.Fatalf("%q kept the TTL: exp %d", cmd, got)
		}
	}
	// MSETNX sets keys without TTL.
	rc.do("MSETNX", "n1", "a", "n2", "b")
	if got := strExpOf(t, s, "n1"); got != 0 {
		t.Fatalf("MSETNX exp %d", got)
	}
	// An expired counter restarts from zero without a TTL.
	setup("cnt", "41")
	clk.Advance(100 * time.Second)
	strScript{{cmdArgs("INCR", "cnt"), strInt(1)}}.run(t, rc)
	if got := strExpOf(t, s, "cnt"); got != 0 {
		t.Fatalf("INCR on expired key: exp %d", got)
	}
}

func TestWrongType(t *testing.T) {
	s, addr, _ := newTestServer(t)
	rc := dialRaw(t, addr)
	steps := strScript{
		{cmdArgs("GET", "h"), strWrongType},
		{cmdArgs("GETEX", "h"), strWrongType},
		{cmdArgs("GETEX", "h", "EX", "0"), strWrongType}, // type before expire validity
		{cmdArgs("GETEX", "h", "FOO"), strSyntax},        // syntax before type
		{cmdArgs("GETDEL", "h"), strWrongType},
		{cmdArgs("GETSET", "h", "v"), strWrongType},
		{cmdArgs("SET", "h", "v", "GET"), strWrongType},
		{cmdArgs("SET", "h", "v", "NX", "GET"), strWrongType},
		{cmdArgs("SET", "h", "v", "EX", "0", "GET"), strInvalidExp("set")},
		{cmdArgs("SETNX", "h", "v"), strInt(0)},
		{cmdArgs("SET", "h", "v", "NX"), strNil},
		{cmdArgs("MSETNX", "x", "1", "h", "v"), strInt(0)},
		{cmdArgs("MGET", "x", "h"), "*2\r\n$-1\r\n$-1\r\n"},
		{cmdArgs("INCR", "h"), strWrongType},
		{cmdArgs("DECR", "h"), strWrongType},
		{cmdArgs("INCRBY", "h", "1"), strWrongType},
		{cmdArgs("INCRBY", "h", "x"), strNotInt}, // argument before type
		{cmdArgs("DECRBY", "h", "-9223372036854775808"), strDecOverflow},
		{cmdArgs("INCRBYFLOAT", "h", "1"), strWrongType},
		{cmdArgs("INCRBYFLOAT", "h", "x"), strWrongType}, // type before argument
		{cmdArgs("APPEND", "h", "x"), strWrongType},
		{cmdArgs("STRLEN", "h"), strWrongType},
		{cmdArgs("SETRANGE", "h", "0", "x"), strWrongType},
		{cmdArgs("SETRANGE", "h", "0", ""), strWrongType},
		{cmdArgs("SETRANGE", "h", "-1", "x"), strOffset},
		{cmdArgs("GETRANGE", "h", "0", "1"), strWrongType},
		{cmdArgs("GETRANGE", "h", "x", "1"), strNotInt},
		{cmdArgs("SUBSTR", "h", "0", "1"), strWrongType},
	}
	for _, st := range steps {
		putNonString(s, "h")
		if got := rc.do(st.cmd...); got != st.want {
			t.Errorf("%q:\n got  %q\n want %q", st.cmd, got, st.want)
		}
		if e, ok := strEntry(s, "h"); !ok || e.IsString() {
			t.Errorf("%q changed the key: %+v %v", st.cmd, e, ok)
		}
	}
	// Commands that replace the value regardless of its type.
	for _, cmd := range [][]string{cmdArgs("SET", "h", "v"), cmdArgs("SET", "h", "v", "XX"), cmdArgs("MSET", "h", "v"), cmdArgs("SETEX", "h", "10", "v"), cmdArgs("PSETEX", "h", "10", "v")} {
		putNonString(s, "h")
		rc.do(cmd...)
		if got := rc.do("GET", "h"); got != strBulk("v") {
			t.Errorf("%q then GET: %q", cmd, got)
		}
	}
}

func TestMGetMSet(t *testing.T) {
	_, addr, _ := newTestServer(t)
	rc := dialRaw(t, addr)
	strScript{
		{cmdArgs("MSET", "a", "1", "b", "x"), strOK},
		{cmdArgs("MGET", "a", "b", "c"), "*3\r\n$1\r\n1\r\n$1\r\nx\r\n$-1\r\n"},
		{cmdArgs("MGET", "c"), "*1\r\n$-1\r\n"},
		{cmdArgs("MSET", "a"), strArity("mset")},
		{cmdArgs("MSET", "a", "1", "b"), strArity("mset")},
		{cmdArgs("MSETNX", "a", "1", "b"), strArity("msetnx")},
		{cmdArgs("MGET"), strArity("mget")},
		{cmdArgs("MSET", "d", "1", "d", "2"), strOK},
		{cmdArgs("GET", "d"), strBulk("2")},
		{cmdArgs("MSETNX", "e", "1", "e", "2"), strInt(1)},
		{cmdArgs("GET", "e"), strBulk("2")},
		{cmdArgs("MSETNX", "e", "3", "f", "4"), strInt(0)},
		{cmdArgs("GET", "f"), strNil},
		{cmdArgs("MSETNX", "f", "3", "g", "4"), strInt(1)},
		{cmdArgs("MGET", "f", "g"), "*2\r\n$1\r\n3\r\n$1\r\n4\r\n"},
	}.run(t, rc)
	// Many keys, spread over shards.
	args := []string{"MSET"}
	get := []string{"MGET"}
	for i := 0; i < 200; i++ {
		args = append(args, fmt.Sprint("key:", i), fmt.Sprint(i))
		get = append(get, fmt.Sprint("key:", i))
	}
	strScript{{args, strOK}}.run(t, rc)
	want := "*200\r\n"
	for i := 0; i < 200; i++ {
		want += strBulk(fmt.Sprint(i))
	}
	strScript{{get, want}}.run(t, rc)
}

func TestIncrDecr(t *testing.T) {
	s, addr, _ := newTestServer(t)
	rc := dialRaw(t, addr)
	strScript{
		{cmdArgs("INCR", "n"), strInt(1)},
		{cmdArgs("INCRBY", "n", "41"), strInt(42)},
		{cmdArgs("DECRBY", "n", "50"), strInt(-8)},
		{cmdArgs("DECR", "n"), strInt(-9)},
		{cmdArgs("INCRBY", "n", "0"), strInt(-9)},
		{cmdArgs("GET", "n"), strBulk("-9")},
		{cmdArgs("SET", "max", "9223372036854775807"), strOK},
		{cmdArgs("INCR", "max"), strOverflow},
		{cmdArgs("INCRBY", "max", "-1"), strInt(9223372036854775806)},
		{cmdArgs("SET", "min", "-9223372036854775808"), strOK},
		{cmdArgs("DECR", "min"), strOverflow},
		{cmdArgs("DECRBY", "min", "1"), strOverflow},
		{cmdArgs("INCRBY", "min", "-9223372036854775808"), strOverflow},
		{cmdArgs("INCRBY", "min", "9223372036854775807"), strInt(-1)},
		{cmdArgs("DECRBY", "z", "-9223372036854775808"), strDecOverflow},
		{cmdArgs("GET", "z"), strNil},
		{cmdArgs("DECRBY", "z", "9223372036854775807"), strInt(-9223372036854775807)},
		{cmdArgs("DECR", "z"), strInt(-9223372036854775808)},
		{cmdArgs("INCRBY", "n", "x"), strNotInt},
		{cmdArgs("INCRBY", "n", "1.0"), strNotInt},
		{cmdArgs("INCRBY", "n", "+1"), strNotInt},
		{cmdArgs("INCRBY", "n", "-0"), strNotInt},
		{cmdArgs("INCRBY", "n", "01"), strNotInt},
		{cmdArgs("INCRBY", "n", ""), strNotInt},
		{cmdArgs("INCRBY", "n", "9223372036854775808"), strNotInt},
		{cmdArgs("INCR", "n", "1"), strArity("incr")},
		{cmdArgs("DECRBY", "n"), strArity("decrby")},
	}.run(t, rc)
	for _, bad := range []string{"abc", "1.0", " 1", "1 ", "+1", "-0", "01", "", "99999999999999999999", "1e3"} {
		rc.do("SET", "t", bad)
		for _, cmd := range []string{"INCR", "DECR"} {
			if got := rc.do(cmd, "t"); got != strNotInt {
				t.Errorf("%s on %q: %q", cmd, bad, got)
			}
		}
	}
	// Counters are stored in the compact integer form.
	if e, _ := strEntry(s, "n"); e.Kind != shards.KindInt || e.Int != -9 {
		t.Fatalf("stored %+v", e)
	}
}

func TestIncrByFloatCommand(t *testing.T) {
	_, addr, _ := newTestServer(t)
	rc := dialRaw(t, addr)
	strScript{
		{cmdArgs("INCRBYFLOAT", "f", "0.1"), strBulk("0.1")},
		{cmdArgs("INCRBYFLOAT", "f", "0.1"), strBulk("0.2")},
		{cmdArgs("INCRBYFLOAT", "f", "0.1"), strBulk("0.3")},
		{cmdArgs("GET", "f"), strBulk("0.3")},
		{cmdArgs("SET", "f", "10.5"), strOK},
		{cmdArgs("INCRBYFLOAT", "f", "0.1"), strBulk("10.6")},
		{cmdArgs("INCRBYFLOAT", "f", "-5"), strBulk("5.6")},
		{cmdArgs("SET", "f", "5.0e3"), strOK},
		{cmdArgs("INCRBYFLOAT", "f", "2.0e2"), strBulk("5200")},
		{cmdArgs("GET", "f"), strBulk("5200")},
		{cmdArgs("INCR", "f"), strInt(5201)},
		{cmdArgs("INCRBYFLOAT", "f", "inf"), strNaNInf},
		{cmdArgs("INCRBYFLOAT", "f", "-infinity"), strNaNInf},
		{cmdArgs("INCRBYFLOAT", "f", "nan"), strNotFloat},
		{cmdArgs("INCRBYFLOAT", "f", "x"), strNotFloat},
		{cmdArgs("INCRBYFLOAT", "f", ""), strNotFloat},
		{cmdArgs("INCRBYFLOAT", "f", "1\x00"), strNotFloat},
		{cmdArgs("GET", "f"), strBulk("5201")},
		{cmdArgs("SET", "g", "abc"), strOK},
		{cmdArgs("INCRBYFLOAT", "g", "1"), strNotFloat},
		{cmdArgs("INCRBYFLOAT", "g", "x"), strNotFloat},
		{cmdArgs("SET", "g", "inf"), strOK},
		{cmdArgs("INCRBYFLOAT", "g", "1"), strNaNInf},
		{cmdArgs("SET", "g", "1.18e4932"), strOK},
		{cmdArgs("INCRBYFLOAT", "g", "1.18e4932"), strNaNInf},
		{cmdArgs("INCRBYFLOAT", "g", "1e5000"), strNotFloat},
		{cmdArgs("INCRBYFLOAT", "h", "-0.0"), strBulk("0")},
		{cmdArgs("INCRBYFLOAT", "h", "1e-18"), strBulk("0")},
		{cmdArgs("INCRBYFLOAT", "h", "1.5e-17"), strBulk("0.00000000000000002")},
		{cmdArgs("INCRBYFLOAT", "f"), strArity("incrbyfloat")},
	}.run(t, rc)
}

func TestAppendStrlen(t *testing.T) {
	s, addr, _ := newTestServer(t)
	rc := dialRaw(t, addr)
	strScript{
		{cmdArgs("APPEND", "a", "hello"), strInt(5)},
		{cmdArgs("APPEND", "a", " world"), strInt(11)},
		{cmdArgs("GET", "a"), strBulk("hello world")},
		{cmdArgs("STRLEN", "a"), strInt(11)},
		{cmdArgs("STRLEN", "none"), strInt(0)},
		{cmdArgs("APPEND", "e", ""), strInt(0)},
		{cmdArgs("GET", "e"), strEmpty},
		{cmdArgs("SET", "i", "-123"), strOK},
		{cmdArgs("STRLEN", "i"), strInt(4)},
		{cmdArgs("APPEND", "i", "4"), strInt(5)},
		{cmdArgs("INCR", "i"), strInt(-1233)},
		{cmdArgs("APPEND", "i", "x"), strInt(6)},
		{cmdArgs("GET", "i"), strBulk("-1233x")},
	}.run(t, rc)
	// APPEND never writes into the stored slice: an old reference is unchanged.
	e, _ := strEntry(s, "a")
	before := e.Bytes()
	rc.do("APPEND", "a", "!")
	if string(before) != "hello world" {
		t.Fatalf("stored value modified in place: %q", before)
	}
	// The stored value does not alias the request buffer.
	rc.do("SET", "alias", "original")
	rc.do("SET", "other", "XXXXXXXX")
	if got := rc.do("GET", "alias"); got != strBulk("original") {
		t.Fatalf("value aliased the read buffer: %q", got)
	}
}

func TestStringSizeLimit(t *testing.T) {
	_, addr, _ := newTestServer(t, func(c *Config) { c.Limits.MaxBulkLen = 20 })
	rc := dialRaw(t, addr)
	strScript{
		{cmdArgs("SET", "a", "0123456789"), strOK},
		{cmdArgs("APPEND", "a", "0123456789"), strInt(20)},
		{cmdArgs("APPEND", "a", "x"), strTooBig},
		{cmdArgs("APPEND", "a", ""), strInt(20)},
		{cmdArgs("SETRANGE", "a", "19", "y"), strInt(20)},
		{cmdArgs("SETRANGE", "a", "20", "y"), strTooBig},
		{cmdArgs("SETRANGE", "a", "20", ""), strInt(20)},
		{cmdArgs("SETRANGE", "b", "19", "y"), strInt(20)},
		{cmdArgs("SETRANGE", "c", "20", "y"), strTooBig},
		{cmdArgs("SETRANGE", "c", "9223372036854775807", "y"), strTooBig},
		{cmdArgs("GET", "c"), strNil},
	}.run(t, rc)
}

func TestRanges(t *testing.T) {
	s, addr, clk := newTestServer(t)
	rc := dialRaw(t, addr)
	strScript{
		{cmdArgs("SET", "r", "Hello World", "EX", "10"), strOK},
		{cmdArgs("SETRANGE", "r", "6", "Redis"), strInt(11)},
		{cmdArgs("GET", "r"), strBulk("Hello Redis")},
		{cmdArgs("SETRANGE", "r", "13", "!"), strInt(14)},
		{cmdArgs("GET", "r"), strBulk("Hello Redis\x00\x00!")},
		{cmdArgs("SETRANGE", "n", "2", "x"), strInt(3)},
		{cmdArgs("GET", "n"), strBulk("\x00\x00x")},
		{cmdArgs("SETRANGE", "m", "0", ""), strInt(0)},
		{cmdArgs("GET", "m"), strNil},
		{cmdArgs("SETRANGE", "r", "-1", "x"), strOffset},
		{cmdArgs("SETRANGE", "r", "x", "x"), strNotInt},
		{cmdArgs("SET", "i", "1234"), strOK},
		{cmdArgs("SETRANGE", "i", "0", "9"), strInt(4)},
		{cmdArgs("INCR", "i"), strInt(9235)},
		{cmdArgs("SET", "s", "This is a string"), strOK},
		{cmdArgs("GETRANGE", "s", "0", "3"), strBulk("This")},
		{cmdArgs("GETRANGE", "s", "-3", "-1"), strBulk("ing")},
		{cmdArgs("GETRANGE", "s", "0", "-1"), strBulk("This is a string")},
		{cmdArgs("GETRANGE", "s", "10", "100"), strBulk("string")},
		{cmdArgs("GETRANGE", "s", "5", "2"), strEmpty},
		{cmdArgs("GETRANGE", "s", "-1", "-5"), strEmpty},
		{cmdArgs("GETRANGE", "s", "-100", "-50"), strBulk("T")},
		{cmdArgs("GETRANGE", "s", "16", "20"), strEmpty},
		{cmdArgs("GETRANGE", "s", "-9223372036854775808", "9223372036854775807"), strBulk("This is a string")},
		{cmdArgs("GETRANGE", "none", "0", "-1"), strEmpty},
		{cmdArgs("GETRANGE", "s", "a", "1"), strNotInt},
		{cmdArgs("GETRANGE", "s", "1", "b"), strNotInt},
		{cmdArgs("SUBSTR", "s", "5", "6"), strBulk("is")},
		{cmdArgs("GETRANGE", "i", "1", "2"), strBulk("23")},
		{cmdArgs("SET", "e", ""), strOK},
		{cmdArgs("GETRANGE", "e", "0", "0"), strEmpty},
	}.run(t, rc)
	if got := strExpOf(t, s, "r"); got != clk.Now()+10*strSec {
		t.Fatalf("SETRANGE lost the TTL: %d", got)
	}
}

func TestGetSetGetDel(t *testing.T) {
	s, addr, _ := newTestServer(t)
	rc := dialRaw(t, addr)
	strScript{
		{cmdArgs("GETSET", "k", "1"), strNil},
		{cmdArgs("GETSET", "k", "2"), strBulk("1")},
		{cmdArgs("GETDEL", "k"), strBulk("2")},
		{cmdArgs("GETDEL", "k"), strNil},
		{cmdArgs("SETNX", "k", "a"), strInt(1)},
		{cmdArgs("SETNX", "k", "b"), strInt(0)},
		{cmdArgs("GET", "k"), strBulk("a")},
	}.run(t, rc)
	if _, ok := strEntry(s, "gone"); ok {
		t.Fatal("phantom key")
	}
}

func TestStringsRESP3(t *testing.T) {
	_, addr, _ := newTestServer(t)
	rc := dialRaw(t, addr)
	rc.do("HELLO", "3")
	strScript{
		{cmdArgs("GET", "x"), "_\r\n"},
		{cmdArgs("MGET", "x"), "*1\r\n_\r\n"},
		{cmdArgs("SET", "x", "v", "NX", "GET"), "_\r\n"},
		{cmdArgs("SET", "x", "v", "NX"), "_\r\n"},
		{cmdArgs("INCRBYFLOAT", "f", "1.5"), strBulk("1.5")},
	}.run(t, rc)
}

func TestStringsInTransaction(t *testing.T) {
	_, addr, _ := newTestServer(t)
	rc := dialRaw(t, addr)
	strScript{
		{cmdArgs("MULTI"), strOK},
		{cmdArgs("SET", "a", "1"), "+QUEUED\r\n"},
		{cmdArgs("INCR", "a"), "+QUEUED\r\n"},
		{cmdArgs("MSET", "b", "1", "c"), "+QUEUED\r\n"},
		{cmdArgs("MGET", "a", "b"), "+QUEUED\r\n"},
		{cmdArgs("EXEC"), "*4\r\n+OK\r\n:2\r\n" + strArity("mset") + "*2\r\n$1\r\n2\r\n$-1\r\n"},
	}.run(t, rc)
	// WATCH sees string writes, an empty APPEND included.
	other := dialRaw(t, addr)
	for _, cmd := range [][]string{cmdArgs("APPEND", "a", ""), cmdArgs("INCR", "a"), cmdArgs("SETRANGE", "a", "0", "5"), cmdArgs("GETEX", "a", "EX", "100"), cmdArgs("GETEX", "a", "PERSIST")} {
		strScript{{cmdArgs("WATCH", "a"), strOK}, {cmdArgs("MULTI"), strOK}, {cmdArgs("GET", "a"), "+QUEUED\r\n"}}.run(t, rc)
		other.do(cmd...)
		if got := rc.do("EXEC"); got != "*-1\r\n" {
			t.Errorf("%q did not break WATCH: %q", cmd, got)
		}
	}
}

// Concurrent counters on shared keys must not lose updates.
func TestIncrConcurrent(t *testing.T) {
	_, addr, _ := newTestServer(t)
	ctx := context.Background()
	rdb := newStrGoRedis(t, addr, 2)
	const workers, each = 8, 200
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				rdb.Incr(ctx, "ctr")
				rdb.IncrByFloat(ctx, "fctr", 0.5)
				rdb.Append(ctx, "log", "x")
			}
		}()
	}
	wg.Wait()
	if n, _ := rdb.Get(ctx, "ctr").Int(); n != workers*each {
		t.Fatalf("INCR lost updates: %d", n)
	}
	if v, _ := rdb.Get(ctx, "fctr").Result(); v != fmt.Sprint(workers*each/2) {
		t.Fatalf("INCRBYFLOAT lost updates: %s", v)
	}
	if n, _ := rdb.StrLen(ctx, "log").Result(); n != workers*each {
		t.Fatalf("APPEND lost updates: %d", n)
	}
}

func TestStringCommandRows(t *testing.T) {
	for _, cmd := range stringCommands() {
		if cmd.Group != "string" || cmd.Since == "" || cmd.Summary == "" {
			t.Errorf("%s: incomplete row %+v", cmd.Name, cmd)
		}
		if cmd.FirstKey != 1 || cmd.Step < 1 {
			t.Errorf("%s: key spec %d %d %d", cmd.Name, cmd.FirstKey, cmd.LastKey, cmd.Step)
		}
		if cmd.Has(command.Write) == cmd.Has(command.Readonly) {
			t.Errorf("%s: must be exactly one of write and readonly", cmd.Name)
		}
	}
}

// Random argument lists never make a string command fail internally (a
// recovered panic replies errInternal).
func TestStringCommandsRandomArgs(t *testing.T) {
	s, addr, clk := newTestServer(t)
	rc := dialRaw(t, addr)
	vocab := []string{"", "0", "1", "-1", "2", "100", "9223372036854775807", "-9223372036854775808",
		"9223372036854775", "1.5", "1e400", "-1e-5000", "inf", "nan", "0x1p-16445", "\x00", "abc",
		"EX", "PX", "EXAT", "PXAT", "NX", "XX", "GET", "KEEPTTL", "PERSIST", "k1", "k2", "h"}
	rng := rand.New(rand.NewPCG(1, 2))
	cmds := stringCommands()
	for i := 0; i < 5000; i++ {
		if i%500 == 0 {
			putNonString(s, "h")
			clk.Advance(time.Second)
		}
		cmd := cmds[rng.IntN(len(cmds))]
		args := []string{cmd.Name, []string{"k1", "k2", "h"}[rng.IntN(3)]}
		for n := rng.IntN(6); n > 0; n-- {
			args = append(args, vocab[rng.IntN(len(vocab))])
		}
		if got := rc.do(args...); strings.HasPrefix(got, "-"+errInternal) {
			t.Fatalf("%q: %q", args, got)
		}
	}
}

// TestLCSTableLimit: LCS refuses a table of more than proto-max-bulk-len
// bytes ((len1+1)×(len2+1) cells of 4 bytes) before allocating it, as
// Redis does; at the limit it runs.
func TestLCSTableLimit(t *testing.T) {
	_, addr, _ := newTestServer(t, func(c *Config) { c.Limits.MaxBulkLen = 400 })
	rc := dialRaw(t, addr)
	strScript{
		{cmdArgs("SET", "a", "123456789"), strOK}, // 10×10 cells: 400 bytes
		{cmdArgs("SET", "b", "923456780"), strOK},
		{cmdArgs("LCS", "a", "b", "LEN"), strInt(7)},
		{cmdArgs("SET", "b", "9234567801"), strOK}, // 10×11 cells: 440 bytes
		{cmdArgs("LCS", "a", "b"), "-ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len\r\n"},
	}.run(t, rc)
}
