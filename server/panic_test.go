package server

import (
	"testing"

	"github.com/turnstile/turnstile/command"
)

// TestHandlerPanicIsContained checks that a panicking handler costs only
// its own reply: the shard lock it held is released, the connection and the
// server keep working, and no partial reply leaks out.
func TestHandlerPanicIsContained(t *testing.T) {
	boom := &Command{Name: "test.panic", Arity: 2, Flags: command.Write, FirstKey: 1, LastKey: 1, Step: 1,
		Handler: func(x *Ctx) {
			x.w.Array(3) // a partial reply that must be discarded
			panic("boom")
		}}
	_, addr, _ := newTestServer(t, func(c *Config) { c.extraCommands = []*Command{boom} })
	rc := dialRaw(t, addr)
	for i := 0; i < 3; i++ {
		if got := rc.do("TEST.PANIC", "k"); got != "-ERR internal error\r\n" {
			t.Fatalf("panic reply: %q", got)
		}
	}
	// The same key's shard must be unlocked again.
	if got := rc.do("CL.THROTTLE", "k", "1", "1", "60"); got != "*5\r\n:0\r\n:2\r\n:1\r\n:-1\r\n:60\r\n" {
		t.Fatalf("after panic: %q", got)
	}
	if got := dialRaw(t, addr).do("PING"); got != "+PONG\r\n" {
		t.Fatalf("new connection: %q", got)
	}
}
