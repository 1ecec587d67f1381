package server

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// infoField returns the value of name in an INFO reply, or "".
func infoField(info, name string) string {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `:(.*)\r$`).FindStringSubmatch(info)
	if m == nil {
		return ""
	}
	return m[1]
}

// TestCommandStatsCountErrors: INFO commandstats counts calls rejected
// before running (arity, authentication...) and calls that ran and failed,
// as Redis 7 does (they were a constant 0), and CONFIG RESETSTAT resets
// them and the other counters (it answered OK and reset nothing).
func TestCommandStatsCountErrors(t *testing.T) {
	_, addr, clk := newTestServer(t)
	r := dialRaw(t, addr)
	r.do("SET", "s", "v")
	r.do("SET", "k", "v", "PX", "1000")
	r.do("GET")           // rejected: arity
	r.do("INCR", "s")     // failed: not an integer
	r.do("NOSUCHCOMMAND") // unknown
	r.do("CONFIG", "GET", "port")
	clk.Advance(2 * time.Second)
	r.do("GET", "k") // expires k
	info := r.do("INFO", "all")
	if got := infoField(info, "cmdstat_get"); !strings.HasPrefix(got, "calls=1,") || !strings.HasSuffix(got, "rejected_calls=1,failed_calls=0") {
		t.Errorf("cmdstat_get = %q", got)
	}
	if got := infoField(info, "cmdstat_incr"); !strings.HasSuffix(got, "rejected_calls=0,failed_calls=1") {
		t.Errorf("cmdstat_incr = %q", got)
	}
	if got := infoField(info, "cmdstat_config|get"); !strings.HasPrefix(got, "calls=1,") {
		t.Errorf("cmdstat_config|get = %q (subcommands are counted apart)", got)
	}
	for name, want := range map[string]string{"unknown_commands": "1", "total_error_replies": "3", "expired_keys": "1", "total_connections_received": "1"} {
		if got := infoField(info, name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}

	if got := r.do("CONFIG", "RESETSTAT"); got != "+OK\r\n" {
		t.Fatalf("CONFIG RESETSTAT = %q", got)
	}
	info = r.do("INFO", "all")
	for _, name := range []string{"cmdstat_get", "cmdstat_incr", "cmdstat_set"} {
		if got := infoField(info, name); got != "" {
			t.Errorf("after RESETSTAT %s = %q, want no line", name, got)
		}
	}
	for _, name := range []string{"unknown_commands", "total_error_replies", "expired_keys", "total_connections_received"} {
		if got := infoField(info, name); got != "0" {
			t.Errorf("after RESETSTAT %s = %q, want 0", name, got)
		}
	}
	// As Redis 7.0: RESETSTAT itself is counted after the reset.
	if got := infoField(info, "total_commands_processed"); got != "1" {
		t.Errorf("after RESETSTAT total_commands_processed = %q, want 1", got)
	}
	if got := infoField(info, "connected_clients"); got != "1" {
		t.Errorf("connected_clients after RESETSTAT = %q (a count, not a statistic)", got)
	}
}

// TestClientListFields: idle, qbuf, multi and flags are true values (they
// were hard-coded).
func TestClientListFields(t *testing.T) {
	_, addr, clk := newTestServer(t)
	a, b := dialRaw(t, addr), dialRaw(t, addr)
	a.do("CLIENT", "SETNAME", "a")
	a.do("MULTI")
	a.do("SET", "k", "v")
	a.do("GET", "k")
	clk.Advance(7 * time.Second)
	list := b.do("CLIENT", "LIST")
	var line string
	for _, l := range strings.Split(list, "\n") {
		if strings.Contains(l, " name=a ") {
			line = l
		}
	}
	for _, want := range []string{" idle=7 ", " flags=x ", " multi=2 ", " qbuf=0 ", " cmd=get "} {
		if !strings.Contains(line, want) {
			t.Errorf("CLIENT LIST line lacks %q: %s", want, line)
		}
	}
	if strings.Contains(line, " fd=0 ") || strings.Contains(line, " rbs=0 ") {
		t.Errorf("fd or rbs not filled in: %s", line)
	}
	a.do("EXEC")
	own := b.do("CLIENT", "INFO")
	if !strings.Contains(own, " idle=0 ") || !strings.Contains(own, " multi=-1 ") || !strings.Contains(own, " flags=N ") {
		t.Errorf("CLIENT INFO of an active client outside MULTI: %s", own)
	}
}
