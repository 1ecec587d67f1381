package server

import (
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Pub/sub delivery across connections, on both connection loops: an idle
// subscriber is woken by a message (outq.go), in RESP2 and RESP3, and a
// subscription confirmation always precedes the channel's messages.
func TestPubsubDeliveryWakesIdleSubscriber(t *testing.T) {
	eachConnLoop(t, func(t *testing.T, loop func(*Config)) {
		_, addr, _ := newTestServer(t, loop)
		pub := dialRaw(t, addr)
		r2, r3 := dialRaw(t, addr), dialRaw(t, addr)
		if got := r3.do("HELLO", "3"); got[0] != '%' {
			t.Fatalf("HELLO 3: %q", got)
		}
		if got := r2.do("SUBSCRIBE", "ch"); got != "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n" {
			t.Fatalf("SUBSCRIBE: %q", got)
		}
		if got := r3.do("PSUBSCRIBE", "c?"); got != ">3\r\n$10\r\npsubscribe\r\n$2\r\nc?\r\n:1\r\n" {
			t.Fatalf("PSUBSCRIBE: %q", got)
		}
		for i := range 20 {
			// Idle for longer than the raw loop's recheck now and then.
			if i%5 == 4 {
				time.Sleep(idleRecheck + 50*time.Millisecond)
			}
			msg := "m" + strconv.Itoa(i)
			if got := pub.do("PUBLISH", "ch", msg); got != ":2\r\n" {
				t.Fatalf("PUBLISH: %q", got)
			}
			want2 := "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$" + strconv.Itoa(len(msg)) + "\r\n" + msg + "\r\n"
			if got := r2.readReply(); got != want2 {
				t.Fatalf("RESP2 message: %q, want %q", got, want2)
			}
			want3 := ">4\r\n$8\r\npmessage\r\n$2\r\nc?\r\n$2\r\nch\r\n$" + strconv.Itoa(len(msg)) + "\r\n" + msg + "\r\n"
			if got := r3.readReply(); got != want3 {
				t.Fatalf("RESP3 pmessage: %q, want %q", got, want3)
			}
		}
		// The subscriber's own commands interleave with deliveries.
		if got := r2.do("PING"); got != "*2\r\n$4\r\npong\r\n$0\r\n\r\n" {
			t.Fatalf("PING in pub/sub mode: %q", got)
		}
		// Confirmation before messages, under a concurrent publisher.
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := dialRaw(t, addr)
			for {
				select {
				case <-stop:
					return
				default:
				}
				p.do("PUBLISH", "hot", "x")
			}
		}()
		sub := dialRaw(t, addr)
		for range 20 {
			if got := sub.do("SUBSCRIBE", "hot"); got != "*3\r\n$9\r\nsubscribe\r\n$3\r\nhot\r\n:1\r\n" {
				close(stop)
				wg.Wait()
				t.Fatalf("SUBSCRIBE under load: %q", got)
			}
			// UNSUBSCRIBE's confirmation comes after every queued message.
			sub.send(encodeCommand("UNSUBSCRIBE", "hot"))
			for {
				got := sub.readReply()
				if strings.Contains(got, "unsubscribe") {
					break
				}
				if got != "*3\r\n$7\r\nmessage\r\n$3\r\nhot\r\n$1\r\nx\r\n" {
					close(stop)
					wg.Wait()
					t.Fatalf("while unsubscribing: %q", got)
				}
			}
		}
		close(stop)
		wg.Wait()
		if got := sub.do("PING"); got != "+PONG\r\n" {
			t.Fatalf("after the last UNSUBSCRIBE nothing more arrives: %q", got)
		}
	})
}

// A subscriber that stops reading costs at most the queue bound: the
// publisher never waits for it, and it is disconnected once its pending
// output would pass the limit (Redis's pubsub client-output-buffer-limit).
func TestPubsubSlowSubscriberDisconnected(t *testing.T) {
	eachConnLoop(t, func(t *testing.T, loop func(*Config)) {
		s, addr, _ := newTestServer(t, loop, func(c *Config) { c.OutputLimits.Class[classPubSub].Hard = 1 << 20 })
		pub := dialRaw(t, addr)
		slowSubscriber(t, addr, pub)
		big := strings.Repeat("p", 64<<10)
		start := time.Now()
		for i := 0; ; i++ {
			got := pub.do("PUBLISH", "flood", big)
			if got == ":0\r\n" {
				break // the slow subscriber is gone
			}
			if got != ":1\r\n" {
				t.Fatalf("PUBLISH: %q", got)
			}
			if i > 10000 || time.Since(start) > 20*time.Second {
				t.Fatalf("slow subscriber never disconnected after %d messages", i)
			}
		}
		waitClients(t, s, 1)
	})
}

// Disconnecting cleans up every subscription; CLIENT LIST shows sub=,
// psub= and the P flag, and TYPE pubsub selects subscribers.
func TestPubsubClientListAndCleanup(t *testing.T) {
	s, addr, _ := newTestServer(t)
	sub := dialRaw(t, addr)
	sub.send(encodeCommand("SUBSCRIBE", "a", "b") + encodeCommand("PSUBSCRIBE", "p*"))
	for range 3 {
		sub.readReply()
	}
	c := dialRaw(t, addr)
	list := c.do("CLIENT", "LIST", "TYPE", "pubsub")
	if !strings.Contains(list, " flags=P ") || !strings.Contains(list, " sub=2 psub=1 ") || strings.Count(list, "id=") != 1 {
		t.Fatalf("CLIENT LIST TYPE pubsub: %q", list)
	}
	if normal := c.do("CLIENT", "LIST", "TYPE", "normal"); strings.Contains(normal, "flags=P") || strings.Count(normal, "id=") != 1 {
		t.Fatalf("CLIENT LIST TYPE normal: %q", normal)
	}
	sub.c.Close()
	waitClients(t, s, 1)
	if got := c.do("PUBSUB", "NUMSUB", "a", "b"); got != "*4\r\n$1\r\na\r\n:0\r\n$1\r\nb\r\n:0\r\n" {
		t.Fatalf("NUMSUB after disconnect: %q", got)
	}
	if got := c.do("PUBSUB", "NUMPAT"); got != ":0\r\n" {
		t.Fatalf("NUMPAT after disconnect: %q", got)
	}
	if got := c.do("PUBLISH", "a", "x"); got != ":0\r\n" {
		t.Fatalf("PUBLISH after disconnect: %q", got)
	}
}

// go-redis's PubSub (its own connection, RESP2 or RESP3) subscribes,
// receives, pattern-subscribes and unsubscribes.
func TestIntegrationPubsubGoRedis(t *testing.T) {
	itEachProtocol(t, func(t *testing.T, e *itEnv) {
		ctx := e.ctx
		ps := e.rdb.Subscribe(ctx, "orders")
		defer ps.Close()
		if _, err := ps.Receive(ctx); err != nil { // the confirmation
			t.Fatalf("subscribe: %v", err)
		}
		if err := ps.PSubscribe(ctx, "ord*"); err != nil {
			t.Fatal(err)
		}
		ch := ps.Channel()
		waitUntil(t, func() bool {
			n, _ := e.rdb.PubSubNumPat(ctx).Result()
			return n == 1
		})
		if n, err := e.rdb.Publish(ctx, "orders", "o1").Result(); err != nil || n != 2 {
			t.Fatalf("PUBLISH = %d, %v; want 2", n, err)
		}
		got := map[string]bool{}
		for range 2 {
			select {
			case m := <-ch:
				got[m.Channel+"/"+m.Pattern+"/"+m.Payload] = true
			case <-time.After(5 * time.Second):
				t.Fatalf("messages not delivered; got %v", got)
			}
		}
		if !got["orders//o1"] || !got["orders/ord*/o1"] {
			t.Fatalf("messages: %v", got)
		}
		chans, err := e.rdb.PubSubChannels(ctx, "*").Result()
		if err != nil || len(chans) != 1 || chans[0] != "orders" {
			t.Fatalf("PUBSUB CHANNELS = %v, %v", chans, err)
		}
		subs, err := e.rdb.PubSubNumSub(ctx, "orders", "none").Result()
		if err != nil || subs["orders"] != 1 || subs["none"] != 0 {
			t.Fatalf("PUBSUB NUMSUB = %v, %v", subs, err)
		}
		if err := ps.Unsubscribe(ctx, "orders"); err != nil {
			t.Fatal(err)
		}
		if err := ps.PUnsubscribe(ctx, "ord*"); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, func() bool {
			n, _ := e.rdb.Publish(ctx, "orders", "o2").Result()
			return n == 0
		})
		// go-redis pings a subscribed connection in the RESP2 pub/sub form.
		if err := ps.Ping(ctx, "hi"); err != nil {
			t.Fatalf("PubSub.Ping: %v", err)
		}
	})
}

// RESP2 client-side caching: invalidations go, as messages on
// __redis__:invalidate, to the connection named by REDIRECT; when that one
// goes away, the redirect is reported broken.
func TestTrackingRedirectRESP2(t *testing.T) {
	eachConnLoop(t, func(t *testing.T, loop func(*Config)) {
		s, addr, _ := newTestServer(t, loop)
		inv, tr, w := dialRaw(t, addr), dialRaw(t, addr), dialRaw(t, addr)
		id := strings.TrimSuffix(inv.do("CLIENT", "ID")[1:], "\r\n")
		if got := inv.do("SUBSCRIBE", "__redis__:invalidate"); !strings.Contains(got, "subscribe") {
			t.Fatalf("SUBSCRIBE: %q", got)
		}
		if got := tr.do("CLIENT", "TRACKING", "on", "REDIRECT", id); got != "+OK\r\n" {
			t.Fatalf("TRACKING: %q", got)
		}
		if got := tr.do("CLIENT", "GETREDIR"); got != ":"+id+"\r\n" {
			t.Fatalf("GETREDIR: %q", got)
		}
		if l := w.do("CLIENT", "LIST"); !strings.Contains(l, "flags=t ") || !strings.Contains(l, "redir="+id+" ") {
			t.Fatalf("CLIENT LIST: %q", l)
		}
		tr.do("GET", "k")
		tr.do("MGET", "k2", "k3")
		w.do("SET", "k", "v")
		if got := inv.readReply(); got != "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*1\r\n$1\r\nk\r\n" {
			t.Fatalf("invalidation: %q", got)
		}
		w.do("SET", "k3", "x")
		if got := inv.readReply(); got != "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*1\r\n$2\r\nk3\r\n" {
			t.Fatalf("invalidation of one key of an MGET: %q", got)
		}
		w.do("FLUSHALL")
		if got := inv.readReply(); got != "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n$-1\r\n" {
			t.Fatalf("flush invalidation: %q", got)
		}
		inv.c.Close()
		waitClients(t, s, 2) // the target is gone before the next write
		tr.do("GET", "k")
		w.do("SET", "k", "v")
		waitUntil(t, func() bool {
			return strings.Contains(tr.do("CLIENT", "TRACKINGINFO"), "broken_redirect")
		})
		if l := w.do("CLIENT", "LIST"); !strings.Contains(l, "flags=tR ") {
			t.Fatalf("CLIENT LIST after the target left: %q", l)
		}
	})
}

// The invalidation hook costs nothing until a client tracks, and stops
// costing once none does.
func TestTrackingCounter(t *testing.T) {
	s, addr, _ := newTestServer(t)
	c := dialRaw(t, addr)
	c.do("CLIENT", "TRACKING", "on")
	c.do("CLIENT", "TRACKING", "on") // again: still one
	if n := s.track.n.Load(); n != 1 {
		t.Fatalf("tracking clients = %d, want 1", n)
	}
	c.do("RESET")
	if n := s.track.n.Load(); n != 0 {
		t.Fatalf("after RESET: %d", n)
	}
	c.do("CLIENT", "TRACKING", "on", "BCAST")
	c.c.Close()
	waitUntil(t, func() bool { return s.track.n.Load() == 0 })
}

// waitUntil polls cond for up to 5 s.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// With no client tracking, pub/sub and client-side caching add nothing to
// the GET/SET path: no allocation (the invalidation hook is one atomic
// load, the outbound queue check another).
func TestGetSetPathAllocsWithoutTracking(t *testing.T) {
	s, c := newPathClient(t)
	get := []byte(encodeCommand("GET", "k"))
	set := []byte(encodeCommand("SET", "k", "v"))
	feed(t, s, c, set)
	feed(t, s, c, get)
	allocs := testing.AllocsPerRun(1000, func() {
		feed(t, s, c, set)
		feed(t, s, c, get)
	})
	if allocs != 0 {
		t.Fatalf("GET/SET path: %.2f allocations per pair, want 0", allocs)
	}
}

// TestTrackingInvalidatesExpiredKeys: a key removed because its expiry
// passed is invalidated, whether a command's access or the active expiry
// cycle removes it, so a client-side cache never keeps it forever.
func TestTrackingInvalidatesExpiredKeys(t *testing.T) {
	s, addr, clk := newTestServer(t)
	tr, w := dialRaw(t, addr), dialRaw(t, addr)
	tr.do("HELLO", "3")
	if got := tr.do("CLIENT", "TRACKING", "on"); got != "+OK\r\n" {
		t.Fatalf("TRACKING: %q", got)
	}
	w.do("SET", "lazy", "v", "PX", "100")
	w.do("SET", "active", "v", "PX", "100")
	tr.do("GET", "lazy")
	tr.do("GET", "active")
	clk.Advance(time.Second)
	if got := w.do("GET", "lazy"); got != "$-1\r\n" { // expires on access
		t.Fatalf("GET lazy: %q", got)
	}
	if got := tr.readReply(); got != ">2\r\n$10\r\ninvalidate\r\n*1\r\n$4\r\nlazy\r\n" {
		t.Fatalf("invalidation on access: %q", got)
	}
	removed := 0
	for i := 0; i < 1000 && removed == 0; i++ {
		removed = s.dbs[0].ExpireCycle(clk.Now(), s.dbs[0].NumShards())
	}
	if got := tr.readReply(); got != ">2\r\n$10\r\ninvalidate\r\n*1\r\n$6\r\nactive\r\n" {
		t.Fatalf("invalidation by the expiry cycle: %q", got)
	}
}

// slowSubscriber connects a subscriber of channel "flood" with a small
// receive buffer that never reads, and waits (through pub) until the
// subscription is in place. It is closed when the test ends.
func slowSubscriber(t *testing.T, addr string, pub *rawConn) {
	t.Helper()
	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slow.Close() })
	if tc, ok := slow.(*net.TCPConn); ok {
		tc.SetReadBuffer(4096)
	}
	slow.Write([]byte(encodeCommand("SUBSCRIBE", "flood")))
	waitUntil(t, func() bool { return pub.do("PUBSUB", "NUMSUB", "flood") == "*2\r\n$5\r\nflood\r\n:1\r\n" })
}
