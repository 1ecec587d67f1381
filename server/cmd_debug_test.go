package server

import (
	"strings"
	"testing"
	"time"
)

// TestDebugRefusedByDefault: as in Redis 7, DEBUG needs
// enable-debug-command; "local" admits loopback clients.
func TestDebugRefusedByDefault(t *testing.T) {
	_, addr, _ := newTestServer(t)
	r := dialRaw(t, addr)
	if got := r.do("DEBUG", "SLEEP", "0"); got != "-"+errDebugNotAllowed+"\r\n" {
		t.Fatalf("DEBUG with enable-debug-command no: %q", got)
	}
	_, addr, _ = newTestServer(t, func(c *Config) { c.EnableDebugCommand = "local" })
	if got := dialRaw(t, addr).do("DEBUG", "SLEEP", "0"); got != "+OK\r\n" {
		t.Fatalf("DEBUG from loopback with enable-debug-command local: %q", got)
	}
	if debugAllowed("local", "10.1.2.3:5000") || !debugAllowed("local", "[::1]:5000") || debugAllowed("no", "127.0.0.1:1") {
		t.Fatal("debugAllowed misjudges an address")
	}
}

// TestDebugSubcommands: the subcommands tools call answer as Redis
// 7.0.15 does (RESP2 and RESP3 for PROTOCOL).
func TestDebugSubcommands(t *testing.T) {
	_, addr, clk := newTestServer(t, func(c *Config) { c.EnableDebugCommand = "yes" })
	r := dialRaw(t, addr)
	unknown := func(sub string) string {
		return "-ERR unknown subcommand or wrong number of arguments for '" + sub + "'. Try DEBUG HELP.\r\n"
	}
	runParityCases(t, r, []parityCase{
		{[]string{"DEBUG", "SLEEP", "0"}, "+OK\r\n"},
		{[]string{"DEBUG", "SLEEP", "abc"}, "+OK\r\n"},
		{[]string{"DEBUG", "sleep\x00", "0.001"}, "+OK\r\n"},
		{[]string{"DEBUG", "SLEEP"}, unknown("SLEEP")},
		{[]string{"DEBUG", "JMAP"}, unknown("JMAP")},
		{[]string{"DEBUG", "OBJECT", "nokey"}, "-ERR no such key\r\n"},
		{[]string{"DEBUG", "CHANGE-REPL-ID"}, "+OK\r\n"},
		{[]string{"DEBUG", "LOG", "hello"}, "+OK\r\n"},
		{[]string{"DEBUG", "ERROR", "WRONGTYPE bad"}, "-WRONGTYPE bad\r\n"},
		{[]string{"DEBUG", "PROTOCOL", "map"}, "*6\r\n:0\r\n:0\r\n:1\r\n:1\r\n:2\r\n:0\r\n"},
		{[]string{"DEBUG", "PROTOCOL", "attrib"}, "$39\r\nSome real reply following the attribute\r\n"},
		{[]string{"DEBUG", "PROTOCOL", "push"}, "-ERR RESP2 is not supported by this command\r\n"},
		{[]string{"DEBUG", "PROTOCOL", "foo"}, "-ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false\r\n"},
		{[]string{"COMMAND", "GETKEYS", "DEBUG", "OBJECT", "k"}, "-ERR The command has no key arguments\r\n"},
		{[]string{"SET", "k", "hello"}, "+OK\r\n"},
		{[]string{"RPUSH", "l", "a", "b"}, ":2\r\n"},
	})
	for key, want := range map[string]string{"k": "encoding:embstr serializedlength:6 ", "l": "encoding:listpack serializedlength:5 "} {
		if got := r.do("DEBUG", "OBJECT", key); !strings.HasPrefix(got, "+Value at:") || !strings.Contains(got, want) {
			t.Errorf("DEBUG OBJECT %s = %q, want %q in it", key, got, want)
		}
	}
	r.do("HELLO", "3")
	// An attribute or a push comes before the reply, as a frame of its own.
	for _, c := range []parityCase{
		{[]string{"DEBUG", "PROTOCOL", "attrib"}, "|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n$39\r\nSome real reply following the attribute\r\n"},
		{[]string{"DEBUG", "PROTOCOL", "push"}, ">2\r\n$16\r\nserver-cpu-usage\r\n:42\r\n$40\r\nSome real reply following the push reply\r\n"},
	} {
		if got := r.do(c.args...) + r.readReply(); got != c.want {
			t.Errorf("%q:\n got  %q\n want %q", c.args, got, c.want)
		}
	}
	runParityCases(t, r, []parityCase{
		{[]string{"DEBUG", "PROTOCOL", "verbatim"}, "=29\r\ntxt:This is a verbatim\nstring\r\n"},
		{[]string{"DEBUG", "PROTOCOL", "map"}, "%3\r\n:0\r\n#f\r\n:1\r\n#t\r\n:2\r\n#f\r\n"},
	})

	// SET-ACTIVE-EXPIRE 0 keeps expired keys until they are touched.
	r.do("HELLO", "2")
	runParityCases(t, r, []parityCase{
		{[]string{"DEBUG", "SET-ACTIVE-EXPIRE", "0"}, "+OK\r\n"},
		{[]string{"FLUSHALL"}, "+OK\r\n"},
		{[]string{"SET", "gone", "x", "PX", "10"}, "+OK\r\n"},
	})
	clk.Advance(time.Second)
	time.Sleep(300 * time.Millisecond) // three active expiry periods at hz 10
	if got := r.do("DBSIZE"); got != ":1\r\n" {
		t.Fatalf("DBSIZE with active expiry off = %q, want the expired key still counted", got)
	}
	r.do("DEBUG", "SET-ACTIVE-EXPIRE", "1")
	deadline := time.Now().Add(3 * time.Second)
	for r.do("DBSIZE") != ":0\r\n" {
		if time.Now().After(deadline) {
			t.Fatal("active expiry did not resume")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
