package server

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnstile/turnstile/shards"
)

// End-to-end CL.THROTTLE tests over TCP with the manual clock. Expected
// replies follow /work/shared/reference/redis-cell-semantics.md (redis-cell
// 0.5.0 in Redis 7.0.15).

// itInts is the wire form of an array of integers, e.g. a CL.THROTTLE reply.
func itInts(vals ...int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(vals))
	for _, v := range vals {
		fmt.Fprintf(&b, ":%d\r\n", v)
	}
	return b.String()
}

// itEntry reads key from database db directly, with its shard locked.
func itEntry(s *Server, db int, key string, now int64) (shards.Entry, bool) {
	m := s.dbs[db]
	k := []byte(key)
	i := m.ShardOf(k)
	m.Lock(i)
	defer m.Unlock(i)
	return m.Get(k, now)
}

// itSameEntry compares integer entries (Obj is not comparable in general).
func itSameEntry(a, b shards.Entry) bool {
	return a.Kind == b.Kind && a.Int == b.Int && a.Exp == b.Exp && a.Obj == nil && b.Obj == nil
}

const itSec = int64(time.Second)

const (
	itErrUsage = "-Cell error: Store error: Usage: cl.throttle <key> <max_burst> <count per period> <period> [<quantity>]\r\n"
	itErrParse = "-Cell error: Store error: Couldn't parse as integer: "
	itErrZero  = "-Cell error: Store error: Zero rates are not supported\r\n"
)

func TestIntegrationThrottleBurstAndRefill(t *testing.T) {
	_, addr, clk := newTestServer(t)
	rc := dialRaw(t, addr)
	if got := rc.do("CL.THROTTLE", "user123", "15", "30", "60"); got != itInts(0, 16, 15, -1, 2) {
		t.Fatalf("first call = %q", got)
	}
	// The burst: calls 2..16 are allowed, remaining counts down, reset grows by E = 2 s.
	for k := int64(2); k <= 16; k++ {
		if got := rc.do("CL.THROTTLE", "user123", "15", "30", "60"); got != itInts(0, 16, 16-k, -1, 2*k) {
			t.Fatalf("call %d = %q, want %q", k, got, itInts(0, 16, 16-k, -1, 2*k))
		}
	}
	for i := 0; i < 4; i++ {
		if got := rc.do("cl.throttle", "user123", "15", "30", "60"); got != itInts(1, 16, 0, 2, 32) {
			t.Fatalf("limited call %d = %q", i, got)
		}
	}
	// Time passing refills: after 1 s still limited, with the retry counting down.
	clk.Advance(time.Second)
	if got := rc.do("CL.THROTTLE", "user123", "15", "30", "60"); got != itInts(1, 16, 0, 1, 31) {
		t.Fatalf("after 1 s = %q", got)
	}
	// After 2 s exactly one more token.
	clk.Advance(time.Second)
	if got := rc.do("CL.THROTTLE", "user123", "15", "30", "60"); got != itInts(0, 16, 0, -1, 32) {
		t.Fatalf("after 2 s = %q", got)
	}
	if got := rc.do("CL.THROTTLE", "user123", "15", "30", "60"); got != itInts(1, 16, 0, 2, 32) {
		t.Fatalf("right after the refill = %q", got)
	}
	// Sub-millisecond remainders are dropped, a remainder of >= 1 ms rounds up.
	clk.Advance(1999*time.Millisecond + 999*time.Microsecond)
	if got := rc.do("CL.THROTTLE", "user123", "15", "30", "60"); got != itInts(1, 16, 0, 0, 30) {
		t.Fatalf("1 µs before the next token = %q", got)
	}
	clk.Advance(time.Microsecond)
	if got := rc.do("CL.THROTTLE", "user123", "15", "30", "60"); got != itInts(0, 16, 0, -1, 32) {
		t.Fatalf("at the next token = %q", got)
	}
	// After the whole bucket drains, the key is gone and the next call is a first call.
	clk.Advance(32 * time.Second)
	if got := rc.do("CL.THROTTLE", "user123", "15", "30", "60"); got != itInts(0, 16, 15, -1, 2) {
		t.Fatalf("after a full refill = %q", got)
	}
	// Keys are independent.
	if got := rc.do("CL.THROTTLE", "user124", "15", "30", "60"); got != itInts(0, 16, 15, -1, 2) {
		t.Fatalf("other key = %q", got)
	}
	// 1000 per 60 s: E = 60 ms, reset rounds up to 1 s.
	if got := rc.do("CL.THROTTLE", "fast", "1000", "1000", "60"); got != itInts(0, 1001, 1000, -1, 1) {
		t.Fatalf("1000 1000 60 = %q", got)
	}
}

// TestIntegrationThrottleGoRedis runs the burst through go-redis in both
// protocols: the reply is an array of 5 integers either way.
func TestIntegrationThrottleGoRedis(t *testing.T) {
	itEachProtocol(t, func(t *testing.T, e *itEnv) {
		for k := int64(1); k <= 16; k++ {
			r, err := itThrottle(e.ctx, e.rdb, "user123", 15, 30, 60)
			itWantSlice(t, fmt.Sprintf("call %d", k), r, err, 0, 16, 16-k, -1, 2*k)
		}
		r, err := itThrottle(e.ctx, e.rdb, "user123", 15, 30, 60)
		itWantSlice(t, "limited", r, err, 1, 16, 0, 2, 32)
		e.clk.Advance(2 * time.Second)
		r, err = itThrottle(e.ctx, e.rdb, "user123", 15, 30, 60)
		itWantSlice(t, "after 2 s", r, err, 0, 16, 0, -1, 32)
		r, err = itThrottle(e.ctx, e.rdb, "user123", 15, 30, 60, 0)
		itWantSlice(t, "peek", r, err, 0, 16, 0, -1, 32)
		itWantErr(t, "zero rate", e.rdb.Do(e.ctx, "CL.THROTTLE", "k", 15, 0, 60).Err(),
			"Cell error: Store error: Zero rates are not supported")
	})
}

func TestIntegrationThrottleQuantity(t *testing.T) {
	s, addr, _ := newTestServer(t)
	rc := dialRaw(t, addr)
	now := testEpoch
	// Peek on a missing key: remaining = limit, nothing stored.
	if got := rc.do("CL.THROTTLE", "q", "15", "30", "60", "0"); got != itInts(0, 16, 16, -1, 0) {
		t.Fatalf("peek on a missing key = %q", got)
	}
	if _, ok := itEntry(s, 0, "q", now); ok {
		t.Fatalf("peek created the key")
	}
	if got := rc.do("DBSIZE"); got != ":0\r\n" {
		t.Fatalf("DBSIZE after peek = %q", got)
	}
	// Quantity > limit on a missing key: limited, can never succeed, nothing stored.
	if got := rc.do("CL.THROTTLE", "q", "15", "30", "60", "17"); got != itInts(1, 16, 16, -1, 0) {
		t.Fatalf("quantity 17 on a missing key = %q", got)
	}
	if got := rc.do("DBSIZE"); got != ":0\r\n" {
		t.Fatalf("DBSIZE after an oversized request = %q", got)
	}
	// Quantity == limit on a fresh key is allowed and empties the bucket.
	if got := rc.do("CL.THROTTLE", "full", "15", "30", "60", "16"); got != itInts(0, 16, 0, -1, 32) {
		t.Fatalf("quantity 16 on a fresh key = %q", got)
	}
	// One call, then peek: the peek reports the state and changes nothing.
	if got := rc.do("CL.THROTTLE", "q", "15", "30", "60", "1"); got != itInts(0, 16, 15, -1, 2) {
		t.Fatalf("quantity 1 = %q", got)
	}
	before, ok := itEntry(s, 0, "q", now)
	if !ok {
		t.Fatal("key missing after an allowed call")
	}
	for i := 0; i < 3; i++ {
		if got := rc.do("CL.THROTTLE", "q", "15", "30", "60", "0"); got != itInts(0, 16, 15, -1, 2) {
			t.Fatalf("peek %d = %q", i, got)
		}
	}
	// Oversized on an existing key: limited with retry -1, state unchanged.
	if got := rc.do("CL.THROTTLE", "q", "15", "30", "60", "17"); got != itInts(1, 16, 15, -1, 2) {
		t.Fatalf("quantity 17 on an existing key = %q", got)
	}
	if after, _ := itEntry(s, 0, "q", now); !itSameEntry(after, before) {
		t.Fatalf("peek/oversized changed the entry: %+v -> %+v", before, after)
	}
	// 15 more fit exactly, then not even one.
	if got := rc.do("CL.THROTTLE", "q", "15", "30", "60", "15"); got != itInts(0, 16, 0, -1, 32) {
		t.Fatalf("quantity 15 = %q", got)
	}
	if got := rc.do("CL.THROTTLE", "q", "15", "30", "60", "1"); got != itInts(1, 16, 0, 2, 32) {
		t.Fatalf("quantity 1 on an empty bucket = %q", got)
	}
	// A refund (negative quantity) gives tokens back.
	if got := rc.do("CL.THROTTLE", "q", "15", "30", "60", "-2"); got != itInts(0, 16, 2, -1, 28) {
		t.Fatalf("refund of 2 = %q", got)
	}
	if e, _ := itEntry(s, 0, "q", now); e.Int != now+28*itSec || e.Exp != e.Int {
		t.Fatalf("entry after refund = %+v", e)
	}
	// Leading '+' and zeros are accepted like Rust's parse::<i64>.
	if got := rc.do("CL.THROTTLE", "plus", "+15", "030", "+60", "+1"); got != itInts(0, 16, 15, -1, 2) {
		t.Fatalf("+15 030 +60 +1 = %q", got)
	}
}

func TestIntegrationThrottleErrors(t *testing.T) {
	_, addr, _ := newTestServer(t)
	rc := dialRaw(t, addr)
	// Wrong argument counts: 0..3 and 6+ arguments after the name.
	for _, args := range [][]string{
		{"CL.THROTTLE"},
		{"CL.THROTTLE", "k"},
		{"CL.THROTTLE", "k", "15"},
		{"CL.THROTTLE", "k", "15", "30"},
		{"CL.THROTTLE", "k", "15", "30", "60", "1", "extra"},
		{"CL.THROTTLE", "k", "15", "30", "60", "1", "2", "3"},
		{"Cl.Throttle", "k"},
		{"CL.THROTTLE", "k", "x", "y", "z", "1", "extra"}, // the count is checked before parsing
	} {
		if got := rc.do(args...); got != itErrUsage {
			t.Errorf("%q = %q, want the usage error", args, got)
		}
	}
	// Parse errors echo the argument; CR/LF become spaces, trailing CR/LF are trimmed.
	for _, c := range []struct {
		args []string
		echo string
	}{
		{[]string{"k", "abc", "30", "60"}, "abc"},
		{[]string{"k", "15", "abc", "60"}, "abc"},
		{[]string{"k", "15", "30", "abc"}, "abc"},
		{[]string{"k", "15", "30", "60", "abc"}, "abc"},
		{[]string{"k", "", "30", "60"}, ""},
		{[]string{"k", "1\n2", "30", "60"}, "1 2"},
		{[]string{"k", "1\n", "30", "60"}, "1"},
		{[]string{"k", "\r\n1", "30", "60"}, "  1"},
		{[]string{"k", "a\rb", "30", "60"}, "a b"},
		{[]string{"k", " 1", "30", "60"}, " 1"},
		{[]string{"k", "1 ", "30", "60"}, "1 "},
		{[]string{"k", "1.5", "30", "60"}, "1.5"},
		{[]string{"k", "0x10", "30", "60"}, "0x10"},
		{[]string{"k", "1e3", "30", "60"}, "1e3"},
		{[]string{"k", "++1", "30", "60"}, "++1"},
		{[]string{"k", "-", "30", "60"}, "-"},
		{[]string{"k", "9223372036854775808", "30", "60"}, "9223372036854775808"},
		{[]string{"k", "15", "30", "60", "-9223372036854775809"}, "-9223372036854775809"},
		{[]string{"k", "１", "30", "60"}, "１"},
		{[]string{"k", "x", "y", "z"}, "x"},         // first failure wins
		{[]string{"k", "15", "0", "z"}, "z"},        // parse errors before the zero-rate check
		{[]string{"k", "15", "30", "60", "q"}, "q"}, // quantity is parsed too
	} {
		want := itErrParse + c.echo + "\r\n"
		if got := rc.do(append([]string{"CL.THROTTLE"}, c.args...)...); got != want {
			t.Errorf("%q = %q, want %q", c.args, got, want)
		}
	}
	// Zero rates.
	for _, args := range [][]string{
		{"k", "15", "0", "60"},
		{"k", "15", "30", "0"},
		{"k", "5", "2000000000", "1"},
		{"k", "5", "9223372036854775807", "1"},
	} {
		if got := rc.do(append([]string{"CL.THROTTLE"}, args...)...); got != itErrZero {
			t.Errorf("%q = %q, want the zero-rate error", args, got)
		}
	}
	// Turnstile rejects negative parameters (redis-cell computes nonsense).
	if got := rc.do("CL.THROTTLE", "k", "-1", "30", "60"); got != "-Cell error: Store error: Negative values are not supported\r\n" {
		t.Errorf("negative max_burst = %q", got)
	}
	// No error created a key, and the connection still works.
	if got := rc.do("DBSIZE"); got != ":0\r\n" {
		t.Fatalf("DBSIZE after errors = %q", got)
	}
	if got := rc.do("CL.THROTTLE", "k", "15", "30", "60"); got != itInts(0, 16, 15, -1, 2) {
		t.Fatalf("valid call after errors = %q", got)
	}
}

// TestIntegrationThrottleStoredForm checks what CL.THROTTLE leaves in the
// keyspace: the TAT in Unix ns as an integer entry that expires at the TAT;
// limited calls write nothing.
func TestIntegrationThrottleStoredForm(t *testing.T) {
	s, addr, clk := newTestServer(t)
	rc := dialRaw(t, addr)
	now := testEpoch
	rc.do("CL.THROTTLE", "st", "15", "30", "60")
	e, ok := itEntry(s, 0, "st", now)
	if !ok || e.Kind != shards.KindInt || e.Int != now+2*itSec || e.Exp != e.Int {
		t.Fatalf("entry after 1 call = %+v (ok %v), want int %d expiring at the same instant", e, ok, now+2*itSec)
	}
	if got := string(e.AppendString(nil)); got != fmt.Sprint(now+2*itSec) {
		t.Fatalf("string form = %q", got)
	}
	for i := 0; i < 15; i++ {
		rc.do("CL.THROTTLE", "st", "15", "30", "60")
	}
	full, _ := itEntry(s, 0, "st", now)
	if full.Int != now+32*itSec || full.Exp != full.Int {
		t.Fatalf("entry after 16 calls = %+v, want TAT %d", full, now+32*itSec)
	}
	// Limited calls (also with other parameters) change nothing...
	if got := rc.do("CL.THROTTLE", "st", "15", "30", "60"); got != itInts(1, 16, 0, 2, 32) {
		t.Fatalf("limited call = %q", got)
	}
	if got := rc.do("CL.THROTTLE", "st", "0", "1", "60"); got != itInts(1, 1, 0, 32, 32) {
		t.Fatalf("limited call with other parameters = %q", got)
	}
	if after, _ := itEntry(s, 0, "st", now); !itSameEntry(after, full) {
		t.Fatalf("limited calls changed the entry: %+v -> %+v", full, after)
	}
	// ...and do not even touch the key: a WATCH on it survives them.
	w := dialRaw(t, addr)
	if got := w.do("WATCH", "st"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	rc.do("CL.THROTTLE", "st", "15", "30", "60")
	w.do("MULTI")
	w.do("PING")
	if got := w.do("EXEC"); got != "*1\r\n+PONG\r\n" {
		t.Fatalf("EXEC after a limited call on the watched key = %q, want it to run", got)
	}
	// The key expires exactly at its TAT.
	clk.Advance(32*time.Second - 1)
	if _, ok := itEntry(s, 0, "st", testEpoch+32*itSec-1); !ok {
		t.Fatal("key gone 1 ns before its TAT")
	}
	clk.Advance(1)
	if _, ok := itEntry(s, 0, "st", testEpoch+32*itSec); ok {
		t.Fatal("key still there at its TAT")
	}
	if got := rc.do("CL.THROTTLE", "st", "15", "30", "60"); got != itInts(0, 16, 15, -1, 2) {
		t.Fatalf("call after expiry = %q", got)
	}
	if e, _ := itEntry(s, 0, "st", testEpoch+32*itSec); e.Int != testEpoch+34*itSec {
		t.Fatalf("entry after expiry and a new call = %+v", e)
	}
}

// TestIntegrationThrottleFlushResets: FLUSHDB (DEL is not in this build)
// fully resets a limiter, and only in the flushed database.
func TestIntegrationThrottleFlushResets(t *testing.T) {
	_, addr, _ := newTestServer(t)
	rc := dialRaw(t, addr)
	for i := 0; i < 16; i++ {
		rc.do("CL.THROTTLE", "reset-me", "15", "30", "60")
	}
	if got := rc.do("CL.THROTTLE", "reset-me", "15", "30", "60"); got != itInts(1, 16, 0, 2, 32) {
		t.Fatalf("limited = %q", got)
	}
	rc.do("SELECT", "1")
	if got := rc.do("FLUSHDB"); got != "+OK\r\n" {
		t.Fatalf("FLUSHDB in db 1 = %q", got)
	}
	rc.do("SELECT", "0")
	if got := rc.do("CL.THROTTLE", "reset-me", "15", "30", "60"); got != itInts(1, 16, 0, 2, 32) {
		t.Fatalf("after FLUSHDB of another db = %q, want still limited", got)
	}
	if got := rc.do("FLUSHDB"); got != "+OK\r\n" {
		t.Fatalf("FLUSHDB = %q", got)
	}
	if got := rc.do("CL.THROTTLE", "reset-me", "15", "30", "60"); got != itInts(0, 16, 15, -1, 2) {
		t.Fatalf("after FLUSHDB = %q, want a fresh bucket", got)
	}
}

func TestIntegrationThrottleBinaryKeys(t *testing.T) {
	s, addr, _ := newTestServer(t)
	rc := dialRaw(t, addr)
	keys := []string{"\xff\xfe\x00key", "\xff\xfe", "\x00", "key with spaces\r\n", "日本"}
	for i, k := range keys {
		for j := int64(1); j <= int64(i+1); j++ {
			if got := rc.do("CL.THROTTLE", k, "15", "30", "60"); got != itInts(0, 16, 16-j, -1, 2*j) {
				t.Fatalf("key %q call %d = %q", k, j, got)
			}
		}
	}
	for i, k := range keys {
		e, ok := itEntry(s, 0, k, testEpoch)
		if !ok || e.Int != testEpoch+2*itSec*int64(i+1) {
			t.Fatalf("key %q entry = %+v, %v", k, e, ok)
		}
	}
	if got := rc.do("DBSIZE"); got != fmt.Sprintf(":%d\r\n", len(keys)) {
		t.Fatalf("DBSIZE = %q", got)
	}
	if got := rc.do("COMMAND", "GETKEYS", "CL.THROTTLE", keys[0], "15", "30", "60"); got != "*1\r\n$6\r\n"+keys[0]+"\r\n" {
		t.Fatalf("GETKEYS binary key = %q", got)
	}
	// Non-UTF-8 numbers are a parse error echoing the raw bytes (redis-cell
	// would abort the server here), in any position.
	for _, c := range []struct {
		args []string
		echo string
	}{
		{[]string{"\xff", "\xff", "30", "60"}, "\xff"},
		{[]string{"k", "15", "\xfe\xff", "60"}, "\xfe\xff"},
		{[]string{"k", "15", "30", "6\xc0"}, "6\xc0"},
		{[]string{"k", "15", "30", "60", "\x80"}, "\x80"},
	} {
		want := itErrParse + c.echo + "\r\n"
		if got := rc.do(append([]string{"CL.THROTTLE"}, c.args...)...); got != want {
			t.Errorf("%q = %q, want %q", c.args, got, want)
		}
	}
	// The server keeps running, on this connection and on new ones.
	if got := rc.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING after non-UTF-8 args = %q", got)
	}
	if got := dialRaw(t, addr).do("CL.THROTTLE", keys[0], "15", "30", "60", "0"); got != itInts(0, 16, 15, -1, 2) {
		t.Fatalf("peek from a new connection = %q", got)
	}
}

func TestIntegrationThrottleMultiExec(t *testing.T) {
	for _, proto := range []string{"2", "3"} {
		t.Run("resp"+proto, func(t *testing.T) {
			s, addr, _ := newTestServer(t)
			rc := dialRaw(t, addr)
			if got := rc.do("HELLO", proto); !strings.Contains(got, "proto\r\n:"+proto+"\r\n") {
				t.Fatalf("HELLO %s = %q", proto, got)
			}
			if got := rc.do("MULTI"); got != "+OK\r\n" {
				t.Fatal(got)
			}
			for _, args := range [][]string{
				{"CL.THROTTLE", "tx", "15", "30", "60"},
				{"CL.THROTTLE", "tx", "15", "30", "60", "2"},
				{"CL.THROTTLE", "tx", "15", "0", "60"}, // fails inside EXEC
				{"CL.THROTTLE", "tx"},                  // arity -1: queued, usage error inside EXEC
				{"CL.THROTTLE", "tx", "15", "30", "60", "0"},
			} {
				if got := rc.do(args...); got != "+QUEUED\r\n" {
					t.Fatalf("%q in MULTI = %q", args, got)
				}
			}
			// Nothing ran yet.
			if _, ok := itEntry(s, 0, "tx", testEpoch); ok {
				t.Fatal("queued CL.THROTTLE ran before EXEC")
			}
			want := "*5\r\n" + itInts(0, 16, 15, -1, 2) + itInts(0, 16, 13, -1, 6) + itErrZero + itErrUsage + itInts(0, 16, 13, -1, 6)
			if got := rc.do("EXEC"); got != want {
				t.Fatalf("EXEC =\n%q\nwant\n%q", got, want)
			}
			if e, ok := itEntry(s, 0, "tx", testEpoch); !ok || e.Int != testEpoch+6*itSec {
				t.Fatalf("entry after EXEC = %+v, %v", e, ok)
			}
			// SELECT inside the transaction moves the following calls.
			rc.do("MULTI")
			rc.do("SELECT", "2")
			rc.do("CL.THROTTLE", "tx", "15", "30", "60")
			if got := rc.do("EXEC"); got != "*2\r\n+OK\r\n"+itInts(0, 16, 15, -1, 2) {
				t.Fatalf("EXEC with SELECT = %q", got)
			}
			if _, ok := itEntry(s, 2, "tx", testEpoch); !ok {
				t.Fatal("CL.THROTTLE after SELECT 2 in EXEC did not write db 2")
			}
		})
	}
}

// itHammer runs calls CL.THROTTLE requests on key from each of workers
// connections at once and returns how many were allowed.
func itHammer(t *testing.T, addr, key string, workers, calls int, params ...string) int {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	errs := make(chan error, workers)
	start := make(chan struct{})
	req := encodeCommand(append([]string{"CL.THROTTLE", key}, params...)...)
	for w := 0; w < workers; w++ {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(60 * time.Second))
		wg.Add(1)
		go func() {
			defer wg.Done()
			br := bufio.NewReader(c)
			<-start
			mine := 0
			for i := 0; i < calls; i++ {
				if _, err := c.Write([]byte(req)); err != nil {
					errs <- err
					return
				}
				r, err := readRawReply(br)
				if err != nil {
					errs <- err
					return
				}
				switch {
				case strings.HasPrefix(r, "*5\r\n:0\r\n"):
					mine++
				case strings.HasPrefix(r, "*5\r\n:1\r\n"):
				default:
					errs <- fmt.Errorf("unexpected reply %q", r)
					return
				}
			}
			mu.Lock()
			allowed += mine
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return allowed
}

// TestIntegrationThrottleConcurrent proves the read-modify-write is atomic:
// with a frozen clock, concurrent callers on one key get exactly limit
// tokens in total.
func TestIntegrationThrottleConcurrent(t *testing.T) {
	t.Run("limit1", func(t *testing.T) {
		s, addr, _ := newTestServer(t)
		if n := itHammer(t, addr, "hot", 8, 200, "0", "1", "3600"); n != 1 {
			t.Fatalf("allowed %d of 1600 calls, want exactly 1", n)
		}
		if e, ok := itEntry(s, 0, "hot", testEpoch); !ok || e.Int != testEpoch+3600*itSec {
			t.Fatalf("entry = %+v, %v", e, ok)
		}
	})
	t.Run("limit100", func(t *testing.T) {
		s, addr, _ := newTestServer(t)
		if n := itHammer(t, addr, "hot", 8, 200, "99", "1", "3600"); n != 100 {
			t.Fatalf("allowed %d of 1600 calls, want exactly 100", n)
		}
		if e, ok := itEntry(s, 0, "hot", testEpoch); !ok || e.Int != testEpoch+100*3600*itSec {
			t.Fatalf("entry = %+v, %v", e, ok)
		}
	})
}
