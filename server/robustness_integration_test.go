package server

import (
	"bufio"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/turnstile/turnstile/command"
)

// Robustness tests: hostile or malformed input costs only its own
// connection, never the server; connection limits, authentication, deep
// pipelines, QUIT/RESET and MULTI/EXEC/WATCH edge cases. Expected texts were
// checked against redis-server 7.0.15.

// itSendAsync writes payload from another goroutine, ignoring errors: the
// server may close the connection before it has read everything.
func itSendAsync(rc *rawConn, payload string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		rc.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		rc.c.Write([]byte(payload))
	}()
	return done
}

func TestIntegrationRobustProtocolErrors(t *testing.T) {
	s, addr, _ := newTestServer(t)
	// A connection opened before the attacks, holding some state.
	survivor := dialRaw(t, addr)
	if got := survivor.do("CL.THROTTLE", "keep", "15", "30", "60"); got != itInts(0, 16, 15, -1, 2) {
		t.Fatalf("setup = %q", got)
	}
	if got := survivor.do("CLIENT", "SETNAME", "survivor"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	bigInline := strings.Repeat("a", 70<<10)
	for _, c := range []struct {
		name, payload, want string
	}{
		{"huge bulk length", "*1\r\n$9223372036854775807\r\nab\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"negative bulk length", "*1\r\n$-5\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"non-numeric bulk length", "PING\r\n*1\r\n$x\r\n", "+PONG\r\n-ERR Protocol error: invalid bulk length\r\n"},
		{"huge multibulk length", "*1000000000000000000\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"non-numeric multibulk length", "*abc\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"missing dollar", "*1\r\nx\r\n", "-ERR Protocol error: expected '$', got 'x'\r\n"},
		{"70 KB inline without newline", bigInline, "-ERR Protocol error: too big inline request\r\n"},
		{"unbalanced double quote", "PING \"abc\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
		{"unbalanced single quote", "ECHO 'abc\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
		{"closing quote glued to text", "SET 'a'b\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
		{"error after a pipelined request", "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\nhi\r\n", "+PONG\r\n-ERR Protocol error: expected '$', got 'h'\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rc := dialRaw(t, addr)
			sent := itSendAsync(rc, c.payload)
			var got strings.Builder
			for got.Len() < len(c.want) {
				got.WriteString(rc.readReply())
			}
			if got.String() != c.want {
				t.Fatalf("reply = %q, want %q", got.String(), c.want)
			}
			rc.expectClosed()
			<-sent
		})
	}
	// The server and the earlier connection are unharmed, and so is the data.
	if got := survivor.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("survivor PING = %q", got)
	}
	if got := survivor.do("CLIENT", "GETNAME"); got != "$8\r\nsurvivor\r\n" {
		t.Fatalf("survivor name = %q", got)
	}
	if got := survivor.do("CL.THROTTLE", "keep", "15", "30", "60", "0"); got != itInts(0, 16, 15, -1, 2) {
		t.Fatalf("data after the attacks = %q", got)
	}
	if got := dialRaw(t, addr).do("DBSIZE"); got != ":1\r\n" {
		t.Fatalf("DBSIZE from a new connection = %q", got)
	}
	// The attackers' connections are gone from the client list.
	deadline := time.Now().Add(5 * time.Second)
	for s.Clients() != 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := s.Clients(); n != 2 {
		t.Fatalf("%d clients connected, want 2", n)
	}
}

// TestIntegrationRobustInline covers the inline (telnet) protocol.
func TestIntegrationRobustInline(t *testing.T) {
	s, addr, _ := newTestServer(t)
	rc := dialRaw(t, addr)
	rc.send("PING\r\n")
	if got := rc.readReply(); got != "+PONG\r\n" {
		t.Fatalf("inline PING = %q", got)
	}
	rc.send("\r\n\n   \r\nPING\n")
	if got := rc.readReply(); got != "+PONG\r\n" {
		t.Fatalf("inline PING after blank lines = %q", got)
	}
	rc.send("CL.THROTTLE \"inline key\" 15 30 60\r\n")
	if got := rc.readReply(); got != itInts(0, 16, 15, -1, 2) {
		t.Fatalf("inline CL.THROTTLE = %q", got)
	}
	if _, ok := itEntry(s, 0, "inline key", testEpoch); !ok {
		t.Fatal("inline quoted key not stored")
	}
	rc.send("ECHO \"a\\x41\\n\" 'it''s'\r\n")
	if got := rc.readReply(); got != "-ERR Protocol error: unbalanced quotes in request\r\n" {
		t.Fatalf("glued single quotes = %q", got)
	}
	rc.expectClosed()
	rc = dialRaw(t, addr)
	rc.send("ECHO \"a\\x41\\n\"\r\nECHO 'it\\'s'\r\n")
	if got := rc.readReply(); got != "$3\r\naA\n\r\n" {
		t.Fatalf("inline ECHO with escapes = %q", got)
	}
	if got := rc.readReply(); got != "$4\r\nit's\r\n" {
		t.Fatalf("inline ECHO with single quotes = %q", got)
	}
}

func TestIntegrationRobustMaxClients(t *testing.T) {
	s, addr, _ := newTestServer(t, func(c *Config) { c.MaxClients = 2 })
	c1 := dialRaw(t, addr)
	c2 := dialRaw(t, addr)
	for _, c := range []*rawConn{c1, c2} {
		if got := c.do("PING"); got != "+PONG\r\n" {
			t.Fatalf("PING = %q", got)
		}
	}
	c3 := dialRaw(t, addr)
	if got := c3.readReply(); got != "-ERR max number of clients reached\r\n" {
		t.Fatalf("third connection got %q", got)
	}
	c3.expectClosed()
	if got := c1.do("INFO", "stats"); !strings.Contains(got, "\r\nrejected_connections:1\r\n") {
		t.Fatalf("INFO stats = %q", got)
	}
	if got := c1.do("INFO", "clients"); !strings.Contains(got, "\r\nconnected_clients:2\r\n") || !strings.Contains(got, "\r\nmaxclients:2\r\n") {
		t.Fatalf("INFO clients = %q", got)
	}
	// The two admitted connections still work.
	if got := c2.do("CL.THROTTLE", "k", "15", "30", "60"); got != itInts(0, 16, 15, -1, 2) {
		t.Fatalf("c2 = %q", got)
	}
	// A freed slot can be used again.
	c2.c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for s.Clients() != 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := dialRaw(t, addr).do("PING"); got != "+PONG\r\n" {
		t.Fatalf("connection after a slot was freed = %q", got)
	}
	// CONFIG SET maxclients applies to new connections.
	if got := c1.do("CONFIG", "SET", "maxclients", "3"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET maxclients = %q", got)
	}
	if got := dialRaw(t, addr).do("PING"); got != "+PONG\r\n" {
		t.Fatalf("third connection with maxclients 3 = %q", got)
	}
}

func TestIntegrationRobustRequirePass(t *testing.T) {
	s, addr, _ := newTestServer(t, func(c *Config) { c.RequirePass = "s3cret" })
	const noauth = "-NOAUTH Authentication required.\r\n"
	const wrongpass = "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
	rc := dialRaw(t, addr)
	for _, args := range [][]string{
		{"PING"}, {"ECHO", "x"}, {"CL.THROTTLE", "k", "15", "30", "60"}, {"SELECT", "1"},
		{"MULTI"}, {"CLIENT", "ID"}, {"INFO"}, {"COMMAND", "COUNT"}, {"FLUSHALL"}, {"CL.THROTTLE"},
	} {
		if got := rc.do(args...); got != noauth {
			t.Errorf("%q before AUTH = %q", args, got)
		}
	}
	if n := s.dbs[0].Len(); n != 0 {
		t.Fatalf("an unauthenticated CL.THROTTLE wrote %d keys", n)
	}
	// Unknown commands are reported as such, before the auth check (as Redis does).
	if got := rc.do("nosuch"); got != "-ERR unknown command 'nosuch', with args beginning with: \r\n" {
		t.Errorf("unknown command before AUTH = %q", got)
	}
	if got := rc.do("HELLO", "3"); !strings.HasPrefix(got, "-NOAUTH HELLO must be called with the client already authenticated") {
		t.Errorf("HELLO 3 before AUTH = %q", got)
	}
	for _, args := range [][]string{
		{"AUTH", "wrong"}, {"AUTH", "default", "wrong"}, {"AUTH", "admin", "s3cret"}, {"AUTH", ""},
		{"HELLO", "3", "AUTH", "default", "wrong"},
	} {
		if got := rc.do(args...); got != wrongpass {
			t.Errorf("%q = %q", args, got)
		}
	}
	if got := rc.do("AUTH", "a", "b", "c"); got != "-ERR syntax error\r\n" {
		t.Errorf("AUTH a b c = %q", got)
	}
	if got := rc.do("PING"); got != noauth {
		t.Fatalf("PING after failed AUTHs = %q", got)
	}
	if got := rc.do("AUTH", "s3cret"); got != "+OK\r\n" {
		t.Fatalf("AUTH = %q", got)
	}
	if got := rc.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING after AUTH = %q", got)
	}
	// A failed AUTH later does not log the connection out.
	if got := rc.do("AUTH", "wrong"); got != wrongpass {
		t.Fatalf("AUTH wrong after AUTH = %q", got)
	}
	if got := rc.do("CL.THROTTLE", "k", "15", "30", "60"); got != itInts(0, 16, 15, -1, 2) {
		t.Fatalf("CL.THROTTLE after AUTH = %q", got)
	}
	// RESET logs out again.
	if got := rc.do("RESET"); got != "+RESET\r\n" {
		t.Fatalf("RESET = %q", got)
	}
	if got := rc.do("PING"); got != noauth {
		t.Fatalf("PING after RESET = %q", got)
	}
	if got := rc.do("AUTH", "default", "s3cret"); got != "+OK\r\n" {
		t.Fatalf("AUTH default = %q", got)
	}

	// HELLO 3 AUTH authenticates and switches protocol at once.
	h := dialRaw(t, addr)
	got := h.do("HELLO", "3", "AUTH", "default", "s3cret", "SETNAME", "helloer")
	if !strings.HasPrefix(got, "%7\r\n$6\r\nserver\r\n") || !strings.Contains(got, "$5\r\nproto\r\n:3\r\n") {
		t.Fatalf("HELLO 3 AUTH = %q", got)
	}
	if got := h.do("CLIENT", "GETNAME"); got != "$7\r\nhelloer\r\n" {
		t.Fatalf("name after HELLO AUTH SETNAME = %q", got)
	}
	if got := h.do("CL.THROTTLE", "k", "15", "30", "60"); got != itInts(0, 16, 14, -1, 4) {
		t.Fatalf("CL.THROTTLE after HELLO AUTH = %q", got)
	}
	// QUIT needs no authentication.
	q := dialRaw(t, addr)
	if got := q.do("QUIT"); got != "+OK\r\n" {
		t.Fatalf("unauthenticated QUIT = %q", got)
	}
	q.expectClosed()
}

func TestIntegrationRobustUnauthLimits(t *testing.T) {
	_, addr, _ := newTestServer(t, func(c *Config) { c.RequirePass = "s3cret" })
	rc := dialRaw(t, addr)
	rc.send("*11\r\n")
	if got := rc.readReply(); got != "-ERR Protocol error: unauthenticated multibulk length\r\n" {
		t.Fatalf("*11 before AUTH = %q", got)
	}
	rc.expectClosed()

	rc = dialRaw(t, addr)
	rc.send("*2\r\n$4\r\nAUTH\r\n$16385\r\n")
	if got := rc.readReply(); got != "-ERR Protocol error: unauthenticated bulk length\r\n" {
		t.Fatalf("16385-byte bulk before AUTH = %q", got)
	}
	rc.expectClosed()

	// 10 arguments and 16384-byte bulks are still fine before AUTH.
	rc = dialRaw(t, addr)
	ten := append([]string{"PING"}, strings.Split("a b c d e f g h i", " ")...)
	if got := rc.do(ten...); got != "-NOAUTH Authentication required.\r\n" {
		t.Fatalf("10 arguments before AUTH = %q", got)
	}
	if got := rc.do("AUTH", strings.Repeat("p", 16384)); got != "-WRONGPASS invalid username-password pair or user is disabled.\r\n" {
		t.Fatalf("16384-byte password = %q", got)
	}
	// After AUTH the limits are lifted.
	if got := rc.do("AUTH", "s3cret"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	eleven := append(ten, "j")
	if got := rc.do(eleven...); got != "-ERR wrong number of arguments for 'ping' command\r\n" {
		t.Fatalf("11 arguments after AUTH = %q", got)
	}
	payload := strings.Repeat("x", 100000)
	if got := rc.do("ECHO", payload); got != "$100000\r\n"+payload+"\r\n" {
		t.Fatalf("100000-byte ECHO after AUTH: %d bytes", len(got))
	}
}

// TestIntegrationRobustDeepPipeline writes 20,000 requests in one write and
// reads the replies concurrently; every reply arrives, in order.
func TestIntegrationRobustDeepPipeline(t *testing.T) {
	s, addr, _ := newTestServer(t)
	const n = 20000
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i%2 == 0 {
			b.WriteString(encodeCommand("PING", strconv.Itoa(i)))
		} else {
			b.WriteString(encodeCommand("CL.THROTTLE", "deep", "99999", "1", "3600"))
		}
	}
	payload := b.String()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	writeErr := make(chan error, 1)
	go func() {
		_, err := c.Write([]byte(payload))
		writeErr <- err
	}()
	br := bufio.NewReaderSize(c, 64<<10)
	for i := 0; i < n; i++ {
		got, err := readRawReply(br)
		if err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		var want string
		if i%2 == 0 {
			v := strconv.Itoa(i)
			want = "$" + strconv.Itoa(len(v)) + "\r\n" + v + "\r\n"
		} else {
			j := int64(i / 2) // throttle calls before this one
			want = itInts(0, 100000, 99999-j, -1, (j+1)*3600)
		}
		if got != want {
			t.Fatalf("reply %d = %q, want %q", i, got, want)
		}
	}
	if err := <-writeErr; err != nil {
		t.Fatalf("write: %v", err)
	}
	// Nothing more was sent.
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if extra, err := br.ReadByte(); err == nil {
		t.Fatalf("extra byte after %d replies: %q", n, extra)
	}
	if e, ok := itEntry(s, 0, "deep", testEpoch); !ok || e.Int != testEpoch+n/2*3600*itSec {
		t.Fatalf("entry after the pipeline = %+v, %v", e, ok)
	}
}

func TestIntegrationRobustQuit(t *testing.T) {
	_, addr, _ := newTestServer(t)
	rc := dialRaw(t, addr)
	if got := rc.do("QUIT"); got != "+OK\r\n" {
		t.Fatalf("QUIT = %q", got)
	}
	rc.expectClosed()

	// Requests pipelined after QUIT are not run.
	rc = dialRaw(t, addr)
	rc.send(encodeCommand("PING") + encodeCommand("QUIT") + encodeCommand("CL.THROTTLE", "after-quit", "15", "30", "60"))
	if got := rc.readReply() + rc.readReply(); got != "+PONG\r\n+OK\r\n" {
		t.Fatalf("PING QUIT pipeline = %q", got)
	}
	rc.expectClosed()
	if got := dialRaw(t, addr).do("DBSIZE"); got != ":0\r\n" {
		t.Fatalf("a request after QUIT ran: DBSIZE = %q", got)
	}

	// QUIT inside MULTI runs at once; RESP3 and extra arguments are fine too.
	rc = dialRaw(t, addr)
	rc.do("HELLO", "3")
	if got := rc.do("MULTI"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if got := rc.do("QUIT", "now"); got != "+OK\r\n" {
		t.Fatalf("QUIT in MULTI = %q", got)
	}
	rc.expectClosed()

	// Inline QUIT.
	rc = dialRaw(t, addr)
	rc.send("QUIT\r\n")
	if got := rc.readReply(); got != "+OK\r\n" {
		t.Fatalf("inline QUIT = %q", got)
	}
	rc.expectClosed()
}

func TestIntegrationRobustReset(t *testing.T) {
	s, addr, _ := newTestServer(t)
	rc := dialRaw(t, addr)
	other := dialRaw(t, addr)
	steps := []struct{ args []string }{
		{[]string{"SELECT", "5"}},
		{[]string{"CL.THROTTLE", "k", "15", "30", "60"}},
		{[]string{"HELLO", "3"}},
		{[]string{"CLIENT", "SETNAME", "before-reset"}},
		{[]string{"WATCH", "k"}},
		{[]string{"MULTI"}},
		{[]string{"PING"}},
	}
	for _, st := range steps {
		if got := rc.do(st.args...); strings.HasPrefix(got, "-") {
			t.Fatalf("%q = %q", st.args, got)
		}
	}
	if got := rc.do("RESET"); got != "+RESET\r\n" {
		t.Fatalf("RESET = %q", got)
	}
	// MULTI is gone.
	if got := rc.do("EXEC"); got != "-ERR EXEC without MULTI\r\n" {
		t.Fatalf("EXEC after RESET = %q", got)
	}
	// RESP2 again ($-1, not _) and the name is cleared.
	if got := rc.do("CLIENT", "GETNAME"); got != "$-1\r\n" {
		t.Fatalf("CLIENT GETNAME after RESET = %q", got)
	}
	// Database 0 again.
	if got := rc.do("DBSIZE"); got != ":0\r\n" {
		t.Fatalf("DBSIZE after RESET = %q (db 5 has a key, db 0 none)", got)
	}
	info := rc.do("CLIENT", "INFO")
	if !strings.Contains(info, " db=0 ") || !strings.Contains(info, " resp=2 ") || !strings.Contains(info, " name= ") {
		t.Fatalf("CLIENT INFO after RESET = %q", info)
	}
	// The WATCH is gone: a change to the key no longer aborts a transaction.
	other.do("SELECT", "5")
	if got := other.do("CL.THROTTLE", "k", "15", "30", "60"); got != itInts(0, 16, 14, -1, 4) {
		t.Fatalf("other client = %q", got)
	}
	rc.do("SELECT", "5")
	rc.do("MULTI")
	rc.do("PING")
	if got := rc.do("EXEC"); got != "*1\r\n+PONG\r\n" {
		t.Fatalf("EXEC after RESET and a change to the formerly watched key = %q", got)
	}
	if n := s.dbs[5].Len(); n != 1 {
		t.Fatalf("db 5 has %d keys", n)
	}
	// RESET takes no arguments.
	if got := rc.do("RESET", "x"); got != "-ERR wrong number of arguments for 'reset' command\r\n" {
		t.Fatalf("RESET x = %q", got)
	}
}

func TestIntegrationRobustMultiErrors(t *testing.T) {
	s, addr, _ := newTestServer(t)
	rc := dialRaw(t, addr)
	script := []struct{ args, want string }{
		{"EXEC", "-ERR EXEC without MULTI\r\n"},
		{"DISCARD", "-ERR DISCARD without MULTI\r\n"},
		// Nested MULTI and WATCH inside MULTI are refused without aborting.
		{"MULTI", "+OK\r\n"},
		{"MULTI", "-ERR MULTI calls can not be nested\r\n"},
		{"PING", "+QUEUED\r\n"},
		{"WATCH x", "-ERR WATCH inside MULTI is not allowed\r\n"},
		{"EXEC", "*1\r\n+PONG\r\n"},
		{"EXEC", "-ERR EXEC without MULTI\r\n"},
		// An unknown command while queueing aborts the transaction.
		{"MULTI", "+OK\r\n"},
		{"CL.THROTTLE a 15 30 60", "+QUEUED\r\n"},
		{"nosuch x", "-ERR unknown command 'nosuch', with args beginning with: 'x' \r\n"},
		{"PING", "+QUEUED\r\n"},
		{"EXEC", "-EXECABORT Transaction discarded because of previous errors.\r\n"},
		{"EXEC", "-ERR EXEC without MULTI\r\n"},
		// So does a wrong argument count.
		{"MULTI", "+OK\r\n"},
		{"CL.THROTTLE a 15 30 60", "+QUEUED\r\n"},
		{"ECHO", "-ERR wrong number of arguments for 'echo' command\r\n"},
		{"EXEC", "-EXECABORT Transaction discarded because of previous errors.\r\n"},
		// DISCARD drops the queue.
		{"MULTI", "+OK\r\n"},
		{"CL.THROTTLE a 15 30 60", "+QUEUED\r\n"},
		{"DISCARD", "+OK\r\n"},
		{"DISCARD", "-ERR DISCARD without MULTI\r\n"},
		// An empty transaction.
		{"MULTI", "+OK\r\n"},
		{"EXEC", "*0\r\n"},
		// Runtime errors stay inside the EXEC array; the rest runs.
		{"MULTI", "+OK\r\n"},
		{"SELECT 99", "+QUEUED\r\n"},
		{"CL.THROTTLE b 15 30 60", "+QUEUED\r\n"},
		{"EXEC", "*2\r\n-ERR DB index is out of range\r\n" + itInts(0, 16, 15, -1, 2)},
	}
	for i, st := range script {
		if got := rc.do(strings.Fields(st.args)...); got != st.want {
			t.Fatalf("step %d %q = %q, want %q", i, st.args, got, st.want)
		}
	}
	// None of the aborted or discarded transactions wrote "a".
	if _, ok := itEntry(s, 0, "a", testEpoch); ok {
		t.Fatal("an aborted or discarded transaction wrote its key")
	}
	if _, ok := itEntry(s, 0, "b", testEpoch); !ok {
		t.Fatal("the executed transaction did not write its key")
	}
}

// TestIntegrationRobustMultiQueuedUnknownSubcommand: Redis rejects an unknown
// subcommand of a container command (CLIENT, CONFIG, COMMAND) already while
// queueing, so EXEC aborts (verified with redis-server 7.0.15:
// MULTI, CLIENT FOO -> "-ERR unknown subcommand 'FOO'. Try CLIENT HELP.",
// EXEC -> EXECABORT).
func TestIntegrationRobustMultiQueuedUnknownSubcommand(t *testing.T) {
	_, addr, _ := newTestServer(t)
	rc := dialRaw(t, addr)
	rc.do("MULTI")
	if got := rc.do("CLIENT", "FOO"); got != "-ERR unknown subcommand 'FOO'. Try CLIENT HELP.\r\n" {
		t.Errorf("CLIENT FOO in MULTI = %q, want the error at once", got)
	}
	if got := rc.do("EXEC"); got != "-EXECABORT Transaction discarded because of previous errors.\r\n" {
		t.Errorf("EXEC = %q, want EXECABORT", got)
	}
}

func TestIntegrationRobustWatch(t *testing.T) {
	for _, p := range []struct{ proto, null string }{{"2", "*-1\r\n"}, {"3", "_\r\n"}} {
		t.Run("resp"+p.proto, func(t *testing.T) {
			s, addr, clk := newTestServer(t)
			w := dialRaw(t, addr)
			o := dialRaw(t, addr)
			if got := w.do("HELLO", p.proto); !strings.Contains(got, "proto\r\n:"+p.proto+"\r\n") {
				t.Fatalf("HELLO = %q", got)
			}
			run := func(want string, cmds ...[]string) {
				t.Helper()
				if got := w.do("MULTI"); got != "+OK\r\n" {
					t.Fatalf("MULTI = %q", got)
				}
				for _, c := range cmds {
					if got := w.do(c...); got != "+QUEUED\r\n" {
						t.Fatalf("%q = %q", c, got)
					}
				}
				if got := w.do("EXEC"); got != want {
					t.Fatalf("EXEC = %q, want %q", got, want)
				}
			}
			ping := []string{"PING"}

			// Another client changes the watched key: EXEC returns the null array
			// and runs nothing.
			if got := w.do("WATCH", "k"); got != "+OK\r\n" {
				t.Fatal(got)
			}
			if got := o.do("CL.THROTTLE", "k", "15", "30", "60"); got != itInts(0, 16, 15, -1, 2) {
				t.Fatal(got)
			}
			run(p.null, []string{"CL.THROTTLE", "side", "15", "30", "60"})
			if _, ok := itEntry(s, 0, "side", testEpoch); ok {
				t.Fatal("the aborted transaction ran")
			}
			// The failed EXEC forgot the watch.
			o.do("CL.THROTTLE", "k", "15", "30", "60")
			run("*1\r\n+PONG\r\n", ping)

			// No change: EXEC runs.
			w.do("WATCH", "k", "k2")
			run("*2\r\n"+itInts(0, 16, 13, -1, 6)+itInts(0, 16, 15, -1, 2),
				[]string{"CL.THROTTLE", "k", "15", "30", "60"}, []string{"CL.THROTTLE", "k2", "15", "30", "60"})

			// A limited call writes nothing, so it does not break the watch.
			for i := 0; i < 16; i++ {
				o.do("CL.THROTTLE", "full", "15", "30", "60")
			}
			w.do("WATCH", "full")
			if got := o.do("CL.THROTTLE", "full", "15", "30", "60"); got != itInts(1, 16, 0, 2, 32) {
				t.Fatal(got)
			}
			run("*1\r\n+PONG\r\n", ping)

			// A peek on a missing key writes nothing either.
			w.do("WATCH", "ghost")
			o.do("CL.THROTTLE", "ghost", "15", "30", "60", "0")
			run("*1\r\n+PONG\r\n", ping)

			// UNWATCH forgets the keys.
			w.do("WATCH", "k")
			if got := w.do("UNWATCH"); got != "+OK\r\n" {
				t.Fatal(got)
			}
			o.do("CL.THROTTLE", "k", "15", "30", "60")
			run("*1\r\n+PONG\r\n", ping)

			// The watched key belongs to its database: a write to the same
			// name in another database does not count.
			w.do("SELECT", "5")
			w.do("WATCH", "k")
			o.do("CL.THROTTLE", "k", "15", "30", "60")
			run("*1\r\n+PONG\r\n", ping)
			w.do("SELECT", "0")

			// The watcher's own change before MULTI breaks its watch too.
			w.do("WATCH", "k2")
			w.do("CL.THROTTLE", "k2", "15", "30", "60")
			run(p.null, ping)

			// A watched key that expires before EXEC breaks the watch (Redis 7).
			o.do("CL.THROTTLE", "short", "0", "1", "1") // TAT = now + 1 s
			w.do("WATCH", "short")
			clk.Advance(time.Second)
			run(p.null, ping)
			// A key that was already gone when watched does not.
			w.do("WATCH", "short")
			clk.Advance(time.Second)
			run("*1\r\n+PONG\r\n", ping)
		})
	}
}

// TestIntegrationRobustWatchFlush follows Redis's multi.tcl: FLUSHALL and
// FLUSHDB break the watch of keys that exist, and only of those ("FLUSHALL
// does not touch non affected keys"; verified with redis-server 7.0.15).
func TestIntegrationRobustWatchFlush(t *testing.T) {
	for _, flush := range []string{"FLUSHALL", "FLUSHDB"} {
		t.Run(flush, func(t *testing.T) {
			_, addr, _ := newTestServer(t)
			w := dialRaw(t, addr)
			o := dialRaw(t, addr)
			exec := func() string {
				w.do("MULTI")
				w.do("PING")
				return w.do("EXEC")
			}
			o.do("CL.THROTTLE", "x", "15", "30", "60")
			w.do("WATCH", "x")
			o.do(flush)
			if got := exec(); got != "*-1\r\n" {
				t.Errorf("%s of a watched existing key: EXEC = %q, want *-1", flush, got)
			}
			// x is gone now; watching it and flushing changes nothing.
			w.do("WATCH", "x")
			o.do(flush)
			if got := exec(); got != "*1\r\n+PONG\r\n" {
				t.Errorf("%s with a watched missing key: EXEC = %q, want [PONG]", flush, got)
			}
			// Neither does flushing another database.
			o.do("CL.THROTTLE", "x", "15", "30", "60")
			w.do("WATCH", "x")
			o.do("SELECT", "3")
			o.do("FLUSHDB")
			o.do("SELECT", "0")
			if got := exec(); got != "*1\r\n+PONG\r\n" {
				t.Errorf("FLUSHDB of another db: EXEC = %q, want [PONG]", got)
			}
		})
	}
}

// TestIntegrationRobustMultiNoQueueArityErrors: inside MULTI, Redis rejects
// a command with a wrong argument count before running it and flags the
// transaction, also for the commands that are not queued (MULTI, EXEC,
// DISCARD, WATCH, RESET); EXEC with extra arguments aborts and discards the
// transaction at once. Verified with redis-server 7.0.15.
func TestIntegrationRobustMultiNoQueueArityErrors(t *testing.T) {
	_, addr, _ := newTestServer(t)
	const abort = "-EXECABORT Transaction discarded because of previous errors.\r\n"
	for _, c := range []struct{ cmd, err string }{
		{"DISCARD x", "-ERR wrong number of arguments for 'discard' command\r\n"},
		{"WATCH", "-ERR wrong number of arguments for 'watch' command\r\n"},
		{"MULTI x", "-ERR wrong number of arguments for 'multi' command\r\n"},
		{"RESET x", "-ERR wrong number of arguments for 'reset' command\r\n"},
	} {
		rc := dialRaw(t, addr)
		rc.do("MULTI")
		if got := rc.do(strings.Fields(c.cmd)...); got != c.err {
			t.Errorf("%q in MULTI = %q, want %q", c.cmd, got, c.err)
		}
		if got := rc.do("EXEC"); got != abort {
			t.Errorf("EXEC after %q = %q, want EXECABORT", c.cmd, got)
		}
	}
	rc := dialRaw(t, addr)
	rc.do("MULTI")
	rc.do("PING")
	if got := rc.do("EXEC", "x"); got != "-EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command\r\n" {
		t.Errorf("EXEC x in MULTI = %q", got)
	}
	if got := rc.do("PING"); got != "+PONG\r\n" {
		t.Errorf("PING after EXEC x = %q, want +PONG (the transaction is discarded)", got)
	}
}

// TestIntegrationRobustPanicInsideExec: a handler that panics inside EXEC
// must cost only its reply, like outside a transaction
// (TestHandlerPanicIsContained): the shards EXEC locked must be released.
func TestIntegrationRobustPanicInsideExec(t *testing.T) {
	boom := &Command{Name: "it.panic", Arity: 2, Flags: command.Write, FirstKey: 1, LastKey: 1, Step: 1,
		Handler: func(x *Ctx) { panic("it.panic") }}
	_, addr, _ := newTestServer(t, func(c *Config) { c.extraCommands = []*Command{boom} })
	rc := dialRaw(t, addr)
	rc.do("MULTI")
	rc.do("CL.THROTTLE", "locked", "15", "30", "60")
	if got := rc.do("IT.PANIC", "locked"); got != "+QUEUED\r\n" {
		t.Fatalf("IT.PANIC in MULTI = %q", got)
	}
	if got := rc.do("EXEC"); !strings.HasPrefix(got, "-ERR internal error\r\n") && !strings.Contains(got, "-ERR internal error\r\n") {
		t.Fatalf("EXEC with a panicking command = %q", got)
	}
	// Another connection must still get the key's shard, within a deadline.
	other, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.SetDeadline(time.Now().Add(2 * time.Second))
	other.Write([]byte(encodeCommand("CL.THROTTLE", "locked", "15", "30", "60", "0")))
	got, err := readRawReply(bufio.NewReader(other))
	if err != nil {
		t.Fatalf("CL.THROTTLE on the key after a panic inside EXEC: %v (its shard is still locked)", err)
	}
	if !strings.HasPrefix(got, "*5\r\n:0\r\n:16\r\n") {
		t.Fatalf("CL.THROTTLE after the panic = %q", got)
	}
}
