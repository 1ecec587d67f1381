package server

import (
	"errors"
	"strings"
	"testing"
)

const errTestLeadership = "TRYAGAIN leadership lost; the outcome is unknown"

// TestReplWaitFailureReplacesReplies: on the leader path, a failed Wait
// replaces every reply of the batch by its error (push frames stay), and
// the connection goes on.
func TestReplWaitFailureReplacesReplies(t *testing.T) {
	e := newFwdEnv(t)
	e.repl.route("", true)
	r := dialRaw(t, e.nodeAddr)
	if got := r.do("SET", "a", "1"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	e.repl.setWaitErr(errors.New(errTestLeadership))
	r.send(encodeCommand("SET", "a", "2") + encodeCommand("GET", "a") + encodeCommand("PING"))
	for i := range 3 {
		if got := r.readReply(); got != "-"+errTestLeadership+"\r\n" {
			t.Fatalf("reply %d: %q", i, got)
		}
	}
	// RESP3: a SUBSCRIBE's push frame is not a reply; it stays.
	e.repl.setWaitErr(nil)
	if got := r.do("HELLO", "3"); !strings.HasPrefix(got, "%7") {
		t.Fatalf("HELLO 3: %q", got)
	}
	e.repl.setWaitErr(errors.New(errTestLeadership))
	r.send(encodeCommand("SUBSCRIBE", "ch") + encodeCommand("GET", "a"))
	if got := r.readReply(); !strings.HasPrefix(got, ">3\r\n$9\r\nsubscribe\r\n") {
		t.Fatalf("SUBSCRIBE: %q", got)
	}
	if got := r.readReply(); got != "-"+errTestLeadership+"\r\n" {
		t.Fatalf("GET: %q", got)
	}
	e.repl.setWaitErr(nil)
	if got := r.do("GET", "a"); got != "$1\r\n2\r\n" {
		t.Fatalf("GET once Wait succeeds: %q", got)
	}
}

// TestReplWaitConfirmsReads: on the leader path Wait is called before
// replies that read the keyspace, even when nothing was written; not for
// replies that did not touch it, nor on the forwarding path.
func TestReplWaitConfirmsReads(t *testing.T) {
	e := newFwdEnv(t)
	e.repl.route("", true)
	r := dialRaw(t, e.nodeAddr)
	for _, c := range []struct {
		cmd  []string
		wait bool
	}{
		{[]string{"PING"}, false},
		{[]string{"GET", "missing"}, true},
		{[]string{"ECHO", "x"}, false},
		{[]string{"DBSIZE"}, true},
		{[]string{"KEYS", "*"}, true},
		{[]string{"EXISTS", "a", "b"}, true},
		{[]string{"EVAL", "return 1", "0"}, false},
		{[]string{"EVAL", "return redis.call('GET', KEYS[1])", "1", "k"}, true},
	} {
		before := e.repl.waits.Load()
		r.do(c.cmd...)
		if got := e.repl.waits.Load() > before; got != c.wait {
			t.Errorf("%v: Wait called %v, want %v", c.cmd, got, c.wait)
		}
	}
	// Forwarded commands wait on the leader, not here.
	e.repl.route(e.leaderAddr, false)
	before := e.repl.waits.Load()
	r.do("GET", "a")
	r.do("SET", "a", "1")
	if n := e.repl.waits.Load() - before; n != 0 {
		t.Errorf("Wait called %d times for forwarded commands", n)
	}
}
