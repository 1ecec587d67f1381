package server

import "testing"

// parityCase is one command and Redis 7.0.15's exact reply to it.
type parityCase struct {
	args []string
	want string
}

func runParityCases(t *testing.T, r *rawConn, cases []parityCase) {
	t.Helper()
	for _, c := range cases {
		if got := r.do(c.args...); got != c.want {
			t.Errorf("%q:\n got  %q\n want %q", c.args, got, c.want)
		}
	}
}

// TestSetExpiredSignalsWatchers: SET with an EXAT/PXAT in the past
// deletes the key and, as in Redis, breaks a WATCH of it even when the key
// was missing (Redis stores, then deletes).
func TestSetExpiredSignalsWatchers(t *testing.T) {
	_, addr, _ := newTestServer(t)
	r := dialRaw(t, addr)
	runParityCases(t, r, []parityCase{
		{[]string{"WATCH", "k"}, "+OK\r\n"},
		{[]string{"SET", "k", "1", "PXAT", "1"}, "+OK\r\n"},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"PING"}, "+QUEUED\r\n"},
		{[]string{"EXEC"}, "*-1\r\n"},
		{[]string{"SET", "k", "v"}, "+OK\r\n"},
		{[]string{"WATCH", "k"}, "+OK\r\n"},
		{[]string{"SET", "k", "1", "EXAT", "1"}, "+OK\r\n"},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"PING"}, "+QUEUED\r\n"},
		{[]string{"EXEC"}, "*-1\r\n"},
		{[]string{"EXISTS", "k"}, ":0\r\n"},
		// NX refused: nothing was written, the WATCH holds.
		{[]string{"SET", "k", "v"}, "+OK\r\n"},
		{[]string{"WATCH", "k"}, "+OK\r\n"},
		{[]string{"SET", "k", "1", "NX", "PXAT", "1"}, "$-1\r\n"},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"PING"}, "+QUEUED\r\n"},
		{[]string{"EXEC"}, "*1\r\n+PONG\r\n"},
	})
}

// TestCommandGetKeysChecks: COMMAND GETKEYS's arity (-4) and Redis's
// checks in Redis's order: the command or subcommand exists, has keys,
// fits its arity, and its keys are where they should be.
func TestCommandGetKeysChecks(t *testing.T) {
	_, addr, _ := newTestServer(t)
	r := dialRaw(t, addr)
	arity := "-ERR wrong number of arguments for 'command|getkeys' command\r\n"
	runParityCases(t, r, []parityCase{
		{[]string{"COMMAND", "GETKEYS"}, arity},
		{[]string{"COMMAND", "GETKEYS", "get"}, arity},
		{[]string{"COMMAND", "GETKEYS", "nosuch", "a"}, "-ERR Invalid command specified\r\n"},
		{[]string{"COMMAND", "GETKEYS", "client", "nosuch"}, "-ERR Invalid command specified\r\n"},
		{[]string{"COMMAND", "GETKEYS", "object", "nosuch", "k"}, "-ERR Invalid command specified\r\n"},
		{[]string{"COMMAND", "GETKEYS", "client", "list"}, "-ERR The command has no key arguments\r\n"},
		{[]string{"COMMAND", "GETKEYS", "ping", "x"}, "-ERR The command has no key arguments\r\n"},
		{[]string{"COMMAND", "GETKEYS", "get", "a", "b"}, "-ERR Invalid number of arguments specified for command\r\n"},
		{[]string{"COMMAND", "GETKEYS", "object", "encoding"}, "-ERR Invalid number of arguments specified for command\r\n"},
		{[]string{"COMMAND", "GETKEYS", "sintercard", "3", "a", "b"}, "-ERR Invalid arguments specified for command\r\n"},
		{[]string{"COMMAND", "GETKEYS", "eval", "return 1", "0"}, "*0\r\n"},
		{[]string{"COMMAND", "GETKEYS", "eval", "return 1", "2", "a"}, "*0\r\n"},
		{[]string{"COMMAND", "GETKEYS", "object", "encoding", "k"}, "*1\r\n$1\r\nk\r\n"},
		{[]string{"COMMAND", "GETKEYS", "mset", "a", "1", "b", "2"}, "*2\r\n$1\r\na\r\n$1\r\nb\r\n"},
		{[]string{"COMMAND", "GETKEYS", "move", "k", "5"}, "*1\r\n$1\r\nk\r\n"},
	})
	info := r.do("COMMAND", "INFO", "command|getkeys")
	if want := "*1\r\n*10\r\n$15\r\ncommand|getkeys\r\n:-4\r\n"; len(info) < len(want) || info[:len(want)] != want {
		t.Errorf("COMMAND INFO command|getkeys = %q, want arity -4", info)
	}
}

// TestKeywordsAreCStrings: Redis compares keywords and cursors as C
// strings, so an argument ends at its first NUL byte, and quotes arguments
// in error texts up to that byte.
func TestKeywordsAreCStrings(t *testing.T) {
	_, addr, _ := newTestServer(t)
	r := dialRaw(t, addr)
	runParityCases(t, r, []parityCase{
		{[]string{"SET", "k", "v", "nx\x00abc"}, "+OK\r\n"},
		{[]string{"get\x00x", "a\x00b"}, "-ERR unknown command 'get', with args beginning with: 'a' \r\n"},
		{[]string{"CLIENT", "foo\x00bar"}, "-ERR unknown subcommand 'foo'. Try CLIENT HELP.\r\n"},
		{[]string{"SCAN", "0\x00x"}, "*2\r\n$1\r\n0\r\n*1\r\n$1\r\nk\r\n"},
		{[]string{"SCAN", "0", "count\x00", "10", "match\x00q", "*", "type\x00", "string"}, "*2\r\n$1\r\n0\r\n*1\r\n$1\r\nk\r\n"},
		{[]string{"EXPIRE", "k", "10", "nx\x00"}, ":1\r\n"},
		{[]string{"EXPIRE", "k", "10", "foo\x00bar"}, "-ERR Unsupported option foo\r\n"},
		{[]string{"COPY", "k", "k2", "db\x00", "1", "replace\x00"}, ":1\r\n"},
		{[]string{"CLIENT", "NO-EVICT", "on\x00x"}, "+OK\r\n"},
		{[]string{"ZADD", "z", "gt\x00", "ch\x00", "1", "a"}, ":1\r\n"},
		{[]string{"ZRANGE", "z", "0", "-1", "withscores\x00"}, "*2\r\n$1\r\na\r\n$1\r\n1\r\n"},
		{[]string{"HSET", "h", "a", "1"}, ":1\r\n"},
		{[]string{"HSCAN", "h", "0\x00x", "count\x00", "5"}, "*2\r\n$1\r\n0\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n"},
		{[]string{"SCRIPT", "FLUSH", "sync\x00"}, "+OK\r\n"},
		{[]string{"FLUSHALL", "async\x00z"}, "+OK\r\n"},
	})
}
