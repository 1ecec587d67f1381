package server

import (
	"strings"
	"testing"
)

// TestSubcommandRows: subcommands are rows of the command table; HELP,
// COMMAND INFO and the dispatcher all read those rows.
func TestSubcommandRows(t *testing.T) {
	s, addr, _ := newTestServer(t)
	r := dialRaw(t, addr)
	for _, container := range []string{"CONFIG", "CLIENT", "COMMAND"} {
		help := r.do(container, "HELP")
		c := s.table.Lookup([]byte(container))
		for _, sub := range c.Subs {
			if !strings.Contains(help, "+"+strings.ToUpper(sub.Name)) || !strings.Contains(help, "+    "+sub.Summary+"\r\n") {
				t.Errorf("%s HELP lacks %s: %q", container, sub.Name, help)
			}
		}
	}
	if got := r.do("COMMAND", "INFO", "config|get"); !strings.HasPrefix(got, "*1\r\n*10\r\n$10\r\nconfig|get\r\n:-3\r\n") {
		t.Errorf("COMMAND INFO config|get = %q", got)
	}
	if got := r.do("CONFIG", "NOPE"); got != "-ERR unknown subcommand 'NOPE'. Try CONFIG HELP.\r\n" {
		t.Errorf("CONFIG NOPE = %q", got)
	}
	if got := r.do("CONFIG", "GET"); got != "-ERR wrong number of arguments for 'config|get' command\r\n" {
		t.Errorf("CONFIG GET = %q", got)
	}
	if got := r.do("COMMAND", "GETKEYS", "CONFIG", "GET", "x"); got != "-ERR The command has no key arguments\r\n" {
		t.Errorf("COMMAND GETKEYS CONFIG GET x = %q", got)
	}
}
