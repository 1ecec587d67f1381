package server

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Blocking commands over real connections: both connection loops (the
// raw socket loop and the portable one), go-redis in RESP2 and RESP3.

var blockLoops = []struct {
	name     string
	portable bool
}{{"raw", false}, {"portable", true}}

// forBlockLoops runs f on a fresh server for each connection loop.
func forBlockLoops(t *testing.T, f func(t *testing.T, s *Server, addr string), mod ...func(*Config)) {
	for _, loop := range blockLoops {
		t.Run(loop.name, func(t *testing.T) {
			s, addr, _ := newTestServer(t, func(c *Config) {
				c.portableConnLoop = loop.portable
				for _, m := range mod {
					m(c)
				}
			})
			f(t, s, addr)
		})
	}
}

// waitBlockedN waits until n clients are blocked.
func waitBlockedN(t *testing.T, s *Server, n int32) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for s.blocked.n.Load() != n {
		if time.Now().After(deadline) {
			t.Fatalf("blocked clients: %d, want %d", s.blocked.n.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// registryEmpty reports whether no client is registered as blocked and
// no change hook is left counting.
func registryEmpty(s *Server) bool {
	s.blocked.mu.Lock()
	defer s.blocked.mu.Unlock()
	return len(s.blocked.queues) == 0 && s.blocked.n.Load() == 0 && s.blocked.timed.Load() == 0 && s.hooks.Load() == 0
}

func waitRegistryEmpty(t *testing.T, s *Server) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !registryEmpty(s) {
		if time.Now().After(deadline) {
			t.Fatalf("blocked registry not empty: n=%d hooks=%d", s.blocked.n.Load(), s.hooks.Load())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBlockingBRPOPLPUSHServedByScript is bull's pattern: a worker blocks
// in BRPOPLPUSH, a producer's Lua script pushes the job.
func TestBlockingBRPOPLPUSHServedByScript(t *testing.T) {
	forBlockLoops(t, func(t *testing.T, s *Server, addr string) {
		for _, p := range itProtocols {
			t.Run(p.name, func(t *testing.T) {
				ctx := itContext(t)
				worker := itGoRedis(t, addr, p.proto)
				producer := itGoRedis(t, addr, p.proto)
				wait, active := "wait:"+p.name, "active:"+p.name
				got := make(chan string, 1)
				errc := make(chan error, 1)
				go func() {
					v, err := worker.BRPopLPush(ctx, wait, active, 0).Result()
					if err != nil {
						errc <- err
						return
					}
					got <- v
				}()
				waitBlockedN(t, s, 1)
				const push = "redis.call('lpush', KEYS[1], ARGV[1]) return redis.call('llen', KEYS[1])"
				if n, err := producer.Eval(ctx, push, []string{wait}, "job-1").Int(); err != nil || n != 1 {
					t.Fatalf("EVAL: %d, %v", n, err)
				}
				select {
				case v := <-got:
					if v != "job-1" {
						t.Fatalf("BRPOPLPUSH: %q", v)
					}
				case err := <-errc:
					t.Fatal(err)
				case <-time.After(5 * time.Second):
					t.Fatal("BRPOPLPUSH was not served")
				}
				if l, err := producer.LRange(ctx, active, 0, -1).Result(); err != nil || len(l) != 1 || l[0] != "job-1" {
					t.Fatalf("active: %q, %v", l, err)
				}
				if n, _ := producer.Exists(ctx, wait).Result(); n != 0 {
					t.Fatal("the popped list still exists")
				}
				waitRegistryEmpty(t, s)
			})
		}
	})
}

// TestBlockingTimeout: a timeout answers nil (go-redis: redis.Nil) after
// about the time asked, in both protocols.
func TestBlockingTimeout(t *testing.T) {
	forBlockLoops(t, func(t *testing.T, s *Server, addr string) {
		for _, p := range itProtocols {
			t.Run(p.name, func(t *testing.T) {
				ctx := itContext(t)
				rdb := itGoRedis(t, addr, p.proto)
				start := time.Now()
				_, err := rdb.BLPop(ctx, 60*time.Millisecond, "nothing").Result()
				if !errors.Is(err, redis.Nil) {
					t.Fatalf("BLPOP: %v, want redis.Nil", err)
				}
				if d := time.Since(start); d < 60*time.Millisecond || d > 3*time.Second {
					t.Fatalf("BLPOP timed out after %v", d)
				}
				_, err = rdb.BZPopMin(ctx, 30*time.Millisecond, "nothing").Result()
				if !errors.Is(err, redis.Nil) {
					t.Fatalf("BZPOPMIN: %v, want redis.Nil", err)
				}
				waitRegistryEmpty(t, s)
			})
		}
	})
}

// TestBlockingClientGone: a blocked client that disconnects, or is killed,
// leaves the registry, and a later push stays in the list.
func TestBlockingClientGone(t *testing.T) {
	forBlockLoops(t, func(t *testing.T, s *Server, addr string) {
		// Disconnect.
		rc := dialRaw(t, addr)
		rc.send(encodeCommand("BLPOP", "gone", "0"))
		waitBlockedN(t, s, 1)
		rc.c.Close()
		waitRegistryEmpty(t, s)

		// CLIENT KILL.
		rc = dialRaw(t, addr)
		id := strings.Trim(rc.do("CLIENT", "ID"), ":\r\n")
		rc.send(encodeCommand("BRPOPLPUSH", "gone", "dst", "0"))
		waitBlockedN(t, s, 1)
		if r := dialRaw(t, addr).do("CLIENT", "KILL", "ID", id); r != ":1\r\n" {
			t.Fatalf("CLIENT KILL ID %s: %q", id, r)
		}
		rc.expectClosed()
		waitRegistryEmpty(t, s)

		// Killed by the server itself (as Close and the output limit do).
		rc = dialRaw(t, addr)
		id = strings.Trim(rc.do("CLIENT", "ID"), ":\r\n")
		rc.send(encodeCommand("BZPOPMIN", "gonez", "0"))
		waitBlockedN(t, s, 1)
		n, _ := strconv.ParseInt(id, 10, 64)
		c := s.clientByID(n)
		if c == nil {
			t.Fatal("no such client")
		}
		c.kill()
		rc.expectClosed()
		waitRegistryEmpty(t, s)

		other := dialRaw(t, addr)
		if r := other.do("RPUSH", "gone", "x"); r != ":1\r\n" {
			t.Fatalf("RPUSH: %q", r)
		}
		if r := other.do("LRANGE", "gone", "0", "-1"); r != "*1\r\n$1\r\nx\r\n" {
			t.Fatalf("the element went to a client that is gone: %q", r)
		}
	})
}

// TestBlockingCloseWithBlockedClients: Close returns promptly with blocked
// clients (no timeout), and leaves nothing registered.
func TestBlockingCloseWithBlockedClients(t *testing.T) {
	for _, loop := range blockLoops {
		t.Run(loop.name, func(t *testing.T) {
			s, addr, done := startServer(t, func(c *Config) { c.portableConnLoop = loop.portable })
			select {
			case <-s.Ready():
			case <-time.After(10 * time.Second):
				t.Fatal("server did not load")
			}
			const n = 8
			conns := make([]*rawConn, n)
			for i := range conns {
				conns[i] = dialRaw(t, addr)
				if i%2 == 0 {
					conns[i].send(encodeCommand("BLPOP", "q", "0"))
				} else {
					conns[i].send(encodeCommand("BZMPOP", "0", "2", "z", "q"+strconv.Itoa(i), "MIN"))
				}
			}
			waitBlockedN(t, s, n)
			start := time.Now()
			s.Close()
			waitServe(t, done, "server did not stop", t.Fatalf)
			if d := time.Since(start); d > 3*time.Second {
				t.Fatalf("Close took %v", d)
			}
			for _, c := range conns {
				c.expectClosed()
			}
			if !registryEmpty(s) {
				t.Fatal("blocked clients left registered after Close")
			}
		})
	}
}

// TestBlockingClientUnblock: CLIENT UNBLOCK with TIMEOUT and ERROR, and on
// a client that is not blocked.
func TestBlockingClientUnblock(t *testing.T) {
	forBlockLoops(t, func(t *testing.T, s *Server, addr string) {
		admin := dialRaw(t, addr)
		rc := dialRaw(t, addr)
		id := strings.Trim(rc.do("CLIENT", "ID"), ":\r\n")
		if r := admin.do("CLIENT", "UNBLOCK", id); r != ":0\r\n" {
			t.Fatalf("CLIENT UNBLOCK of an idle client: %q", r)
		}
		for _, c := range []struct{ how, want string }{
			{"TIMEOUT", "*-1\r\n"},
			{"error", "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"},
			{"", "*-1\r\n"},
		} {
			rc.send(encodeCommand("BLMPOP", "0", "1", "ub", "LEFT"))
			waitBlockedN(t, s, 1)
			if strings.Contains(admin.do("CLIENT", "LIST"), "flags=b ") == false {
				t.Fatal("CLIENT LIST does not flag the blocked client")
			}
			args := []string{"CLIENT", "UNBLOCK", id}
			if c.how != "" {
				args = append(args, c.how)
			}
			if r := admin.do(args...); r != ":1\r\n" {
				t.Fatalf("%v: %q", args, r)
			}
			if r := rc.readReply(); r != c.want {
				t.Fatalf("%v: the blocked client got %q, want %q", args, r, c.want)
			}
			waitRegistryEmpty(t, s)
		}
		if r := rc.do("PING"); r != "+PONG\r\n" {
			t.Fatalf("PING after unblocking: %q", r)
		}
	})
}

// TestBlockingInfoClients: INFO clients counts blocked clients, and those
// with a timeout.
func TestBlockingInfoClients(t *testing.T) {
	s, addr, _ := newTestServer(t)
	a, b, admin := dialRaw(t, addr), dialRaw(t, addr), dialRaw(t, addr)
	a.send(encodeCommand("BLPOP", "i", "0"))
	b.send(encodeCommand("BLPOP", "i", "100"))
	waitBlockedN(t, s, 2)
	info := admin.do("INFO", "clients")
	for _, want := range []string{"\r\nblocked_clients:2\r\n", "\r\nclients_in_timeout_table:1\r\n"} {
		if !strings.Contains(info, want) {
			t.Fatalf("INFO clients lacks %q: %q", want, info)
		}
	}
	admin.do("RPUSH", "i", "1", "2")
	a.readReply()
	b.readReply()
	waitRegistryEmpty(t, s)
}

// TestBlockingQueueStress: consumers blocked in BLPOP and BRPOPLPUSH on
// a few queues, producers pushing from plain commands, MULTI and scripts:
// every element is received exactly once, and nothing stays registered.
func TestBlockingQueueStress(t *testing.T) {
	forBlockLoops(t, func(t *testing.T, s *Server, addr string) {
		ctx := itContext(t)
		const (
			producers = 4
			perProd   = 150
			consumers = 6
		)
		queues := []string{"sq0", "sq1", "sq2"}
		var (
			mu   sync.Mutex
			seen = map[string]int{}
			wg   sync.WaitGroup
		)
		total := producers * perProd
		received := make(chan struct{}, total)
		stop := make(chan struct{})
		for i := range consumers {
			rdb := itGoRedis(t, addr, 2)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					var v string
					if i%2 == 0 {
						kv, err := rdb.BLPop(ctx, time.Second, queues...).Result()
						if err != nil {
							if errors.Is(err, redis.Nil) {
								continue
							}
							t.Error(err)
							return
						}
						v = kv[1]
					} else {
						q := queues[i%len(queues)]
						got, err := rdb.BRPopLPush(ctx, q, "done:"+strconv.Itoa(i), time.Second).Result()
						if err != nil {
							if errors.Is(err, redis.Nil) {
								continue
							}
							t.Error(err)
							return
						}
						v = got
					}
					mu.Lock()
					seen[v]++
					mu.Unlock()
					received <- struct{}{}
				}
			}()
		}
		for p := range producers {
			rdb := itGoRedis(t, addr, 3)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range perProd {
					q := queues[(p+j)%len(queues)]
					v := fmt.Sprintf("p%d-%d", p, j)
					var err error
					switch j % 3 {
					case 0:
						err = rdb.LPush(ctx, q, v).Err()
					case 1:
						_, err = rdb.TxPipelined(ctx, func(pp redis.Pipeliner) error {
							pp.RPush(ctx, q, v)
							return nil
						})
					default:
						err = rdb.Eval(ctx, "return redis.call('rpush', KEYS[1], ARGV[1])", []string{q}, v).Err()
					}
					if err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		deadline := time.After(20 * time.Second)
		for n := 0; n < total; n++ {
			select {
			case <-received:
			case <-deadline:
				close(stop)
				t.Fatalf("received %d of %d elements", n, total)
			}
		}
		close(stop)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != total {
			t.Fatalf("%d distinct elements, want %d", len(seen), total)
		}
		for v, n := range seen {
			if n != 1 {
				t.Fatalf("%s received %d times", v, n)
			}
		}
		waitRegistryEmpty(t, s)
	})
}

// TestBlockingServedInOrder: clients blocked on one key are served in the
// order they blocked, also when the elements come one push at a time.
func TestBlockingServedInOrder(t *testing.T) {
	forBlockLoops(t, func(t *testing.T, s *Server, addr string) {
		const n = 5
		conns := make([]*rawConn, n)
		for i := range conns {
			conns[i] = dialRaw(t, addr)
			conns[i].send(encodeCommand("BLPOP", "order", "0"))
			waitBlockedN(t, s, int32(i+1))
		}
		pusher := dialRaw(t, addr)
		for i := range conns {
			pusher.do("RPUSH", "order", strconv.Itoa(i))
		}
		for i, c := range conns {
			want := fmt.Sprintf("*2\r\n$5\r\norder\r\n$1\r\n%d\r\n", i)
			if r := c.readReply(); r != want {
				t.Fatalf("client %d got %q, want %q", i, r, want)
			}
		}
		waitRegistryEmpty(t, s)
	})
}

// TestBlockingSurvivesRestart: a served BLMOVE is logged like LMOVE.
func TestBlockingSurvivesRestart(t *testing.T) {
	r := newRestartable(t, func(c *Config) { c.Persist.AppendOnly = true })
	addr := r.srv.Addr().String()
	w := dialRaw(t, addr)
	w.send(encodeCommand("BLMOVE", "src", "dst", "RIGHT", "LEFT", "0"))
	waitBlockedN(t, r.srv, 1)
	r.expect(":2\r\n", "RPUSH", "src", "a", "b")
	if got := w.readReply(); got != "$1\r\nb\r\n" {
		t.Fatalf("BLMOVE: %q", got)
	}
	w.send(encodeCommand("BZPOPMAX", "z", "0"))
	waitBlockedN(t, r.srv, 1)
	r.expect(":2\r\n", "ZADD", "z", "1", "x", "2", "y")
	if got := w.readReply(); got != "*3\r\n$1\r\nz\r\n$1\r\ny\r\n$1\r\n2\r\n" {
		t.Fatalf("BZPOPMAX: %q", got)
	}
	r.restart()
	r.expect("*1\r\n$1\r\na\r\n", "LRANGE", "src", "0", "-1")
	r.expect("*1\r\n$1\r\nb\r\n", "LRANGE", "dst", "0", "-1")
	r.expect("*2\r\n$1\r\nx\r\n$1\r\n1\r\n", "ZRANGE", "z", "0", "-1", "WITHSCORES")
}

// TestBlockingPipelinedFlush: the replies of the requests before a
// blocking command, sent in one write, arrive before it blocks; those after
// it run once it is served.
func TestBlockingPipelinedFlush(t *testing.T) {
	forBlockLoops(t, func(t *testing.T, s *Server, addr string) {
		rc := dialRaw(t, addr)
		rc.send(encodeCommand("SET", "a", "1") + encodeCommand("INCR", "a") +
			encodeCommand("BLPOP", "pf", "0") + encodeCommand("GET", "a"))
		for _, want := range []string{"+OK\r\n", ":2\r\n"} {
			if r := rc.readReply(); r != want {
				t.Fatalf("got %q, want %q", r, want)
			}
		}
		waitBlockedN(t, s, 1)
		if rc.pending() {
			t.Fatal("a reply arrived while the client is blocked")
		}
		dialRaw(t, addr).do("LPUSH", "pf", "v")
		for _, want := range []string{"*2\r\n$2\r\npf\r\n$1\r\nv\r\n", "$1\r\n2\r\n"} {
			if r := rc.readReply(); r != want {
				t.Fatalf("got %q, want %q", r, want)
			}
		}
	})
}

// TestBlockingHugeTimeout: a timeout beyond time.Duration's range blocks
// (it must not wrap around into the past).
func TestBlockingHugeTimeout(t *testing.T) {
	s, addr, _ := newTestServer(t)
	rc := dialRaw(t, addr)
	rc.send(encodeCommand("BLPOP", "huge", "1e13"))
	waitBlockedN(t, s, 1)
	if rc.pending() {
		t.Fatal("BLPOP with a huge timeout answered at once")
	}
	dialRaw(t, addr).do("RPUSH", "huge", "x")
	if r := rc.readReply(); r != "*2\r\n$4\r\nhuge\r\n$1\r\nx\r\n" {
		t.Fatalf("BLPOP: %q", r)
	}
}
