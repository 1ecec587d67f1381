package server

import (
	"strings"
	"testing"
	"time"
)

// TestIdleClientTimeout: with "timeout 1", a client idle for more than a
// second is closed without a reply, while blocked clients (with and without
// their own timeout), subscribers, a client that is sending a request and
// an active one stay. timeout 0 closes no one. (Before, "timeout" was an
// unknown option and idle clients stayed for ever.)
func TestIdleClientTimeout(t *testing.T) {
	s, addr, clk := newTestServer(t)
	ctl := dialRaw(t, addr)
	if got := ctl.do("CONFIG", "GET", "timeout"); got != "*2\r\n$7\r\ntimeout\r\n$1\r\n0\r\n" {
		t.Fatalf("CONFIG GET timeout = %q, want the default 0", got)
	}
	if got := ctl.do("CONFIG", "SET", "timeout", "-1"); !strings.Contains(got, "argument must be between 0 and 2147483647 inclusive") {
		t.Fatalf("CONFIG SET timeout -1 = %q", got)
	}
	if got := ctl.do("CONFIG", "SET", "timeout", "1"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET timeout 1 = %q", got)
	}
	if got := ctl.do("CONFIG", "GET", "timeout"); got != "*2\r\n$7\r\ntimeout\r\n$1\r\n1\r\n" {
		t.Fatalf("CONFIG GET timeout = %q", got)
	}
	idle, partial := dialRaw(t, addr), dialRaw(t, addr)
	for _, rc := range []*rawConn{idle, partial} {
		if got := rc.do("PING"); got != "+PONG\r\n" {
			t.Fatalf("PING = %q", got)
		}
	}
	blocked, blockedTimed, sub := dialRaw(t, addr), dialRaw(t, addr), dialRaw(t, addr)
	blocked.send(encodeCommand("BLPOP", "q", "0"))
	blockedTimed.send(encodeCommand("BLPOP", "q2", "3600"))
	if got := sub.do("SUBSCRIBE", "ch"); !strings.HasPrefix(got, "*3\r\n$9\r\nsubscribe") {
		t.Fatalf("SUBSCRIBE = %q", got)
	}
	for deadline := time.Now().Add(5 * time.Second); s.blocked.n.Load() < 2; {
		if time.Now().After(deadline) {
			t.Fatal("the BLPOPs did not block")
		}
		time.Sleep(5 * time.Millisecond)
	}

	clk.Advance(1500 * time.Millisecond)
	if got := ctl.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING = %q", got)
	}
	partial.send("*1\r\n$4\r\nPI") // half a request: input in progress
	idle.expectClosed()            // within the background loop's second

	if got := ctl.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("active client: PING = %q", got)
	}
	partial.send("NG\r\n")
	if got := partial.readReply(); got != "+PONG\r\n" {
		t.Fatalf("client that was sending: PING = %q", got)
	}
	if got := ctl.do("PUBLISH", "ch", "m"); got != ":1\r\n" {
		t.Fatalf("PUBLISH = %q (the subscriber was closed?)", got)
	}
	if got := sub.readReply(); got != "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\nm\r\n" {
		t.Fatalf("subscriber got %q", got)
	}
	ctl.do("RPUSH", "q", "a")
	ctl.do("RPUSH", "q2", "b")
	if got := blocked.readReply(); got != "*2\r\n$1\r\nq\r\n$1\r\na\r\n" {
		t.Fatalf("blocked client got %q", got)
	}
	if got := blockedTimed.readReply(); got != "*2\r\n$2\r\nq2\r\n$1\r\nb\r\n" {
		t.Fatalf("blocked client with a timeout got %q", got)
	}

	// timeout 0: nobody is idle for too long.
	ctl.do("CONFIG", "SET", "timeout", "0")
	clk.Advance(time.Hour)
	if n := s.closeIdleClients(clk.Now()); n != 0 {
		t.Fatalf("timeout 0 closed %d clients", n)
	}
	ctl.do("CONFIG", "SET", "timeout", "1")
	// partial and the two served BLPOP clients; not ctl (its CONFIG SET
	// just ran) nor the subscriber.
	if n := s.closeIdleClients(clk.Now()); n != 3 {
		t.Fatalf("timeout 1 after an hour closed %d clients, want 3", n)
	}
}
