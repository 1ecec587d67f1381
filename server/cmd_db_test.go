package server

import (
	"strings"
	"testing"
	"time"
)

// TestMoveSwapDBWait: MOVE, SWAPDB and WAIT answer as Redis 7.0.15 does
// (replies and errors in Redis's order), and SWAPDB breaks the WATCH of a
// key that exists in either database.
func TestMoveSwapDBWait(t *testing.T) {
	_, addr, _ := newTestServer(t)
	r := dialRaw(t, addr)
	runParityCases(t, r, []parityCase{
		{[]string{"SET", "k", "v", "PX", "100000"}, "+OK\r\n"},
		{[]string{"MOVE", "k", "abc"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"MOVE", "k", "99"}, "-ERR DB index is out of range\r\n"},
		{[]string{"MOVE", "k", "2147483648"}, "-ERR value is out of range, value must between -2147483648 and 2147483647\r\n"},
		{[]string{"MOVE", "nokey", "0"}, "-ERR source and destination objects are the same\r\n"},
		{[]string{"MOVE", "nokey", "1"}, ":0\r\n"},
		{[]string{"MOVE", "k", "1"}, ":1\r\n"},
		{[]string{"EXISTS", "k"}, ":0\r\n"},
		{[]string{"SELECT", "1"}, "+OK\r\n"},
		{[]string{"PTTL", "k"}, ":100000\r\n"},
		{[]string{"RPUSH", "l", "a", "b"}, ":2\r\n"},
		{[]string{"SELECT", "0"}, "+OK\r\n"},
		{[]string{"SET", "k", "mine"}, "+OK\r\n"},
		{[]string{"MOVE", "k", "1"}, ":0\r\n"},
		{[]string{"SWAPDB", "a", "1"}, "-ERR invalid first DB index\r\n"},
		{[]string{"SWAPDB", "0", "2147483648"}, "-ERR invalid second DB index\r\n"},
		{[]string{"SWAPDB", "0", "99"}, "-ERR DB index is out of range\r\n"},
		{[]string{"SWAPDB", "0", "0"}, "+OK\r\n"},
		{[]string{"WATCH", "l"}, "+OK\r\n"},
		{[]string{"SWAPDB", "0", "1"}, "+OK\r\n"},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"LRANGE", "l", "0", "-1"}, "+QUEUED\r\n"},
		{[]string{"EXEC"}, "*-1\r\n"},
		{[]string{"LRANGE", "l", "0", "-1"}, "*2\r\n$1\r\na\r\n$1\r\nb\r\n"},
		{[]string{"PTTL", "k"}, ":100000\r\n"},
		{[]string{"SELECT", "1"}, "+OK\r\n"},
		{[]string{"GET", "k"}, "$4\r\nmine\r\n"},
		{[]string{"DBSIZE"}, ":1\r\n"},
		{[]string{"WAIT", "0", "0"}, ":0\r\n"},
		{[]string{"WAIT", "1", "10"}, ":0\r\n"},
		{[]string{"WAIT", "a", "0"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"WAIT", "0", "a"}, "-ERR timeout is not an integer or out of range\r\n"},
		{[]string{"WAIT", "0", "-1"}, "-ERR timeout is negative\r\n"},
	})
}

// TestMoveSwapDBReplay: MOVE and SWAPDB reach the append-only log as
// effects that replay to the same databases.
func TestMoveSwapDBReplay(t *testing.T) {
	r := newRestartable(t, func(c *Config) {
		c.Persist.AppendOnly = true
		c.Persist.Save = nil
	})
	r.expect("+OK\r\n", "SET", "a", "1")
	r.expect(":1\r\n", "HSET", "h", "f", "v")
	r.expect(":1\r\n", "MOVE", "h", "2")
	r.expect("+OK\r\n", "SWAPDB", "0", "2")
	r.restart()
	r.expect(":1\r\n", "DBSIZE")
	r.expect("$1\r\nv\r\n", "HGET", "h", "f")
	r.expect("+OK\r\n", "SELECT", "2")
	r.expect("$1\r\n1\r\n", "GET", "a")
	r.expect(":1\r\n", "DBSIZE")
}

// TestSwapDBWakesBlockedClient: a client blocked on a key of database 0
// is served when SWAPDB brings in a database where the key exists, as in
// Redis.
func TestSwapDBWakesBlockedClient(t *testing.T) {
	_, addr, _ := newTestServer(t)
	blocked, other := dialRaw(t, addr), dialRaw(t, addr)
	blocked.send(encodeCommand("BLPOP", "l", "5"))
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(other.do("INFO", "clients"), "\r\nblocked_clients:1\r\n") {
		if time.Now().After(deadline) {
			t.Fatal("BLPOP did not block")
		}
		time.Sleep(2 * time.Millisecond)
	}
	runParityCases(t, other, []parityCase{
		{[]string{"SELECT", "1"}, "+OK\r\n"},
		{[]string{"RPUSH", "l", "x"}, ":1\r\n"},
		{[]string{"SWAPDB", "0", "1"}, "+OK\r\n"},
	})
	if got := blocked.readReply(); got != "*2\r\n$1\r\nl\r\n$1\r\nx\r\n" {
		t.Fatalf("BLPOP after SWAPDB: %q", got)
	}
}
