//go:build lockcheck

package server

import (
	"strings"
	"testing"

	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/shards"
)

// TestLockCheckCatchesUndeclaredKey: in lockcheck builds a handler that
// touches a key whose shard its execution does not hold panics (and the
// client gets ERR internal error), the same rule Lua's undeclared keys and
// the cluster's key routing rely on. The row declares only argument 1 as
// a key, and the handler writes argument 2 too.
func TestLockCheckCatchesUndeclaredKey(t *testing.T) {
	sneaky := &Command{Name: "test.sneaky", Arity: 3, Flags: command.Write, FirstKey: 1, LastKey: 1, Step: 1,
		Handler: func(x *Ctx) {
			x.put(x.args[1], shards.IntEntry(1, 0))
			x.put(x.args[2], shards.IntEntry(2, 0))
			x.w.OK()
		}}
	s, addr, _ := newTestServer(t, func(c *Config) { c.extraCommands = []*Command{sneaky} })
	r := dialRaw(t, addr)
	// Two keys in different shards.
	other := "b"
	for i := 0; s.dbs[0].ShardOf([]byte(other)) == s.dbs[0].ShardOf([]byte("a")); i++ {
		other = "b" + strings.Repeat("x", i)
	}
	if got := r.do("TEST.SNEAKY", "a", other); got != "-ERR internal error\r\n" {
		t.Fatalf("undeclared key write = %q, want the lock check's panic as ERR internal error", got)
	}
	if got := r.do("TEST.SNEAKY", "a", "a"); got != "+OK\r\n" {
		t.Fatalf("declared key = %q", got)
	}
	if got := r.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("server after the panic: %q", got)
	}
}
