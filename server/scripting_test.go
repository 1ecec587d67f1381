package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/turnstile/turnstile/script"
)

func newScriptClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DisableIdentity: true, ReadTimeout: time.Minute})
	t.Cleanup(func() { c.Close() })
	return c
}

// TestScriptBusyAndKill: a script that overruns busy-reply-threshold makes
// other clients' commands answer BUSY (SCRIPT KILL still works), SCRIPT
// KILL stops a script that has not written, and refuses (UNKILLABLE) one
// that has; after it the server serves normally.
func TestScriptBusyAndKill(t *testing.T) {
	// A low threshold: the writing script below (5e6 iterations) may end
	// in a fifth of a second on a fast machine without the race detector,
	// and BUSY must show well before that.
	_, addr, _ := newTestServer(t, func(c *Config) { c.BusyReplyThreshold = 10 })
	ctx := context.Background()
	a, b := newScriptClient(t, addr), newScriptClient(t, addr)

	done := make(chan error, 1)
	go func() { done <- a.Eval(ctx, "while true do end", nil).Err() }()
	waitBusy(t, b)
	if err := b.Get(ctx, "k").Err(); err == nil || !strings.HasPrefix(err.Error(), "BUSY ") {
		t.Fatalf("GET during a busy script: %v, want BUSY", err)
	}
	if err := b.Do(ctx, "SCRIPT", "KILL").Err(); err != nil {
		t.Fatalf("SCRIPT KILL: %v", err)
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "Script killed by user with SCRIPT KILL") {
			t.Fatalf("killed script replied %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("killed script did not return")
	}
	if err := b.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET after the kill: %v", err)
	}
	if err := b.Do(ctx, "SCRIPT", "KILL").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOTBUSY") {
		t.Fatalf("SCRIPT KILL with no script: %v", err)
	}

	// A script that wrote cannot be killed; it ends on its own.
	go func() {
		done <- a.Eval(ctx, "redis.call('set', KEYS[1], 'x') local t = redis.call('time')[1] + 0 local n = 0 while n < 5e6 do n = n + 1 end return 1", []string{"w"}).Err()
	}()
	waitBusy(t, b)
	if err := b.Do(ctx, "SCRIPT", "KILL").Err(); err == nil || !strings.HasPrefix(err.Error(), "UNKILLABLE") {
		t.Fatalf("SCRIPT KILL of a writing script: %v, want UNKILLABLE", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("writing script: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("writing script did not end")
	}
	if v, err := b.Get(ctx, "w").Result(); err != nil || v != "x" {
		t.Fatalf("GET w = %q, %v", v, err)
	}
}

// waitBusy waits until c gets BUSY replies.
func waitBusy(t *testing.T, c *redis.Client) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		err := c.Ping(context.Background()).Err()
		if err != nil && strings.HasPrefix(err.Error(), "BUSY") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the script never made the server busy")
}

// TestScriptShutdownNosaveWhileBusy: SHUTDOWN NOSAVE stops a busy script
// that has written, and the server ends.
func TestScriptShutdownNosaveWhileBusy(t *testing.T) {
	s, addr, done := startServer(t, func(c *Config) { c.BusyReplyThreshold = 50 })
	<-s.Ready()
	ctx := context.Background()
	a, b := newScriptClient(t, addr), newScriptClient(t, addr)
	go a.Eval(ctx, "redis.call('set', 'k', 'v') while true do end", nil)
	waitBusy(t, b)
	if err := b.Do(ctx, "SHUTDOWN").Err(); err == nil || !strings.HasPrefix(err.Error(), "BUSY") {
		t.Fatalf("SHUTDOWN (saving) while busy: %v, want BUSY", err)
	}
	b.Do(ctx, "SHUTDOWN", "NOSAVE")
	waitServe(t, done, "server did not stop after SHUTDOWN NOSAVE", t.Fatalf)
}

// TestScriptAtomicAndUndeclaredKeys: scripts that move a unit between two
// keys, one of them not declared in KEYS (lock escalation), run beside
// multi-key commands and other scripts without deadlock (the lock
// protocol of lockSet.lock and escalate), and no MGET of every key sees
// the sum change. (That a script's undeclared key is locked at all is
// TestScriptUndeclaredKeyHidden's to show: an MGET of every key waits for
// the script's declared shard anyway.)
func TestScriptAtomicAndUndeclaredKeys(t *testing.T) {
	_, addr, _ := newTestServer(t, func(c *Config) { c.Shards = 4 })
	ctx := context.Background()
	setup := newScriptClient(t, addr)
	const nkeys = 16
	keys := make([]string, nkeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("acct:%d", i)
		setup.Set(ctx, keys[i], 100, 0)
	}
	move := redis.NewScript(`
		local from = KEYS[1]
		local to = ARGV[1]           -- not declared: the script escalates
		redis.call('incr', to)
		for i = 1, 300 do end        -- widen the window a reader must not see
		redis.call('decr', from)
		return 1`)
	deadline := time.Now().Add(2 * time.Second)
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newScriptClient(t, addr)
			for i := 0; time.Now().Before(deadline) && i < 3000; i++ {
				from, to := keys[(w*7+i)%nkeys], keys[(w*3+i*5+1)%nkeys]
				if err := move.Run(ctx, c, []string{from}, to).Err(); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	for range 2 { // multi-key readers and writers that are not scripts
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newScriptClient(t, addr)
			for i := 0; time.Now().Before(deadline) && i < 3000; i++ {
				vals, err := c.MGet(ctx, keys...).Result()
				if err != nil {
					errc <- err
					return
				}
				sum := 0
				for _, v := range vals {
					var n int
					fmt.Sscan(v.(string), &n)
					sum += n
				}
				if sum != 100*nkeys {
					errc <- fmt.Errorf("MGET saw a sum of %d, want %d", sum, 100*nkeys)
					return
				}
				if err := c.MSet(ctx, "x:"+keys[i%nkeys], i, "y:"+keys[(i+3)%nkeys], i).Err(); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
}

// TestScriptInMulti: EVAL queued in MULTI runs inside the EXEC.
func TestScriptInMulti(t *testing.T) {
	_, addr, _ := newTestServer(t)
	ctx := context.Background()
	c := newScriptClient(t, addr)
	cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "a", 1, 0)
		p.Eval(ctx, "return redis.call('incrby', KEYS[1], ARGV[1]) + redis.call('incr', 'undeclared')", []string{"a"}, 5)
		p.Get(ctx, "a")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := cmds[1].(*redis.Cmd).Val(); got != int64(7) {
		t.Fatalf("EVAL in MULTI = %v, want 7", got)
	}
	if got := cmds[2].(*redis.StringCmd).Val(); got != "6" {
		t.Fatalf("GET after = %v", got)
	}
}

// TestScriptEffectsSurviveRestart: the append-only log holds a script's
// effects, not its text: after a restart the state is what the script
// left, though the script read the clock (TIME) and a random source.
func TestScriptEffectsSurviveRestart(t *testing.T) {
	r := newRestartable(t, func(c *Config) { c.Persist.AppendOnly = true; c.Persist.Save = nil })
	r.expect("+OK\r\n", "SET", "base", "10")
	body := "local t = redis.call('time') " +
		"redis.call('set', KEYS[1], t[1] .. '.' .. t[2]) " +
		"redis.call('hset', KEYS[2], 'r', tostring(math.random(1000000))) " +
		"redis.call('incrby', 'base', 5) " +
		"redis.call('expire', KEYS[1], 100) return 1"
	r.expect(":1\r\n", "EVAL", body, "2", "when", "h")
	before := []string{r.rc.do("GET", "when"), r.rc.do("HGET", "h", "r"), r.rc.do("GET", "base"), r.rc.do("TTL", "when")}
	r.expect("+OK\r\n", "SCRIPT", "FLUSH")
	r.restart()
	after := []string{r.rc.do("GET", "when"), r.rc.do("HGET", "h", "r"), r.rc.do("GET", "base"), r.rc.do("TTL", "when")}
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("after restart %q, before %q", after, before)
	}
	if !strings.Contains(after[0], ".") || after[2] != "$2\r\n15\r\n" {
		t.Fatalf("unexpected state %q", after)
	}
}

// TestScriptErrorsKeepConnection: a failing script leaves the connection
// and the data usable.
func TestScriptErrorsKeepConnection(t *testing.T) {
	_, addr, _ := newTestServer(t)
	ctx := context.Background()
	c := newScriptClient(t, addr)
	var rerr redis.Error
	if err := c.Eval(ctx, "redis.call('set', 'p', 1) error('late')", nil).Err(); !errors.As(err, &rerr) {
		t.Fatalf("EVAL error = %v", err)
	}
	if v, err := c.Get(ctx, "p").Result(); err != nil || v != "1" {
		t.Fatalf("a script's writes before its error stay (as in Redis): %q %v", v, err)
	}
	if err := c.EvalSha(ctx, strings.Repeat("0", 40), nil).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOSCRIPT") {
		t.Fatalf("EVALSHA unknown: %v", err)
	}
	if err := c.EvalRO(ctx, "return redis.call('set', 'q', 1)", nil).Err(); err == nil || !strings.Contains(err.Error(), "read-only scripts") {
		t.Fatalf("EVAL_RO write: %v", err)
	}
}

// TestScriptUndeclaredKeyHidden: a key a script writes without declaring
// it is locked by the script until it ends (lock escalation): a reader
// never sees the script's intermediate value.
func TestScriptUndeclaredKeyHidden(t *testing.T) {
	_, addr, _ := newTestServer(t)
	ctx := context.Background()
	a, b := newScriptClient(t, addr), newScriptClient(t, addr)
	done := make(chan error, 1)
	go func() {
		done <- a.Eval(ctx, "redis.call('set', 'hidden', 'mid') local n = 0 while n < 3e6 do n = n + 1 end redis.call('set', 'hidden', 'end') return 1", nil).Err()
	}()
	for i := 0; ; i++ {
		v, err := b.Get(ctx, "hidden").Result()
		if err != nil && err != redis.Nil {
			t.Fatal(err)
		}
		if v == "mid" {
			t.Fatal("a reader saw the script's intermediate value")
		}
		if v == "end" {
			break
		}
		if i > 100000 {
			t.Fatal("the script never finished")
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestNativeScriptInMulti: a known script sent by EVAL (its text, not yet
// cached) inside MULTI runs natively in the EXEC, and is cached after.
func TestNativeScriptInMulti(t *testing.T) {
	body, err := os.ReadFile("../libtest/testdata/seed000-token-bucket.lua")
	if err != nil {
		t.Fatal(err)
	}
	_, addr, _ := newTestServer(t)
	rc := dialRaw(t, addr)
	for _, c := range [][]string{
		{"+OK\r\n", "MULTI"},
		{"+QUEUED\r\n", "EVAL", string(body), "1", "tb", "10", "20", "1000", "1"},
		{"+QUEUED\r\n", "EVAL", "return 1", "0"},
		{"*2\r\n*2\r\n:1\r\n:19\r\n:1\r\n", "EXEC"},
		{"*1\r\n:1\r\n", "SCRIPT", "EXISTS", script.SHA1Hex(body)},
	} {
		if got := rc.do(c[1:]...); got != c[0] {
			t.Fatalf("%q: got %q, want %q", c[1:3], got, c[0])
		}
	}
}

// TestScriptReadsAreTracked: keys a script reads are remembered for the
// calling client's client-side cache, in Lua and natively alike: a change
// by another client sends the invalidation.
func TestScriptReadsAreTracked(t *testing.T) {
	for _, native := range []bool{false, true} {
		t.Run(map[bool]string{false: "lua", true: "native"}[native], func(t *testing.T) {
			_, addr, _ := newTestServer(t, func(c *Config) { c.NativeScripts = native })
			tr, w := dialRaw(t, addr), dialRaw(t, addr)
			tr.do("HELLO", "3")
			if got := tr.do("CLIENT", "TRACKING", "on"); got != "+OK\r\n" {
				t.Fatalf("TRACKING: %q", got)
			}
			// rate-limit-redis's get script (a native when enabled).
			body, err := os.ReadFile("../libtest/testdata/scripts/rate-limit-redis-get.lua")
			if err != nil {
				t.Fatal(err)
			}
			w.do("SET", "hits", "3")
			if got := tr.do("EVAL", string(body), "1", "hits"); got != "*2\r\n$1\r\n3\r\n:-1\r\n" {
				t.Fatalf("EVAL: %q", got)
			}
			w.do("INCR", "hits")
			if got := tr.readReply(); got != ">2\r\n$10\r\ninvalidate\r\n*1\r\n$4\r\nhits\r\n" {
				t.Fatalf("invalidation: %q", got)
			}
		})
	}
}

// TestScriptLoadInMultiBesideEscalation: an EXEC that queues SCRIPT LOAD
// after a write takes the script lock before its shards, so a running
// script that then escalates to that write's shard does not deadlock
// with it.
func TestScriptLoadInMultiBesideEscalation(t *testing.T) {
	_, addr, _ := newTestServer(t)
	ctx := context.Background()
	a, b := newScriptClient(t, addr), newScriptClient(t, addr)
	done := make(chan error, 2)
	go func() {
		// Busy for a while, then touch k, which it did not declare.
		done <- a.Eval(ctx, "local n = 0 while n < 3e6 do n = n + 1 end return redis.call('incr', 'k')", nil).Err()
	}()
	time.Sleep(50 * time.Millisecond) // the script runs
	go func() {
		_, err := b.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "k", 10, 0)
			p.ScriptLoad(ctx, "return 1")
			return nil
		})
		done <- err
	}()
	for range 2 {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("deadlock: a script escalating beside an EXEC with SCRIPT LOAD")
		}
	}
}
