package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/turnstile/turnstile/clock"
	"github.com/turnstile/turnstile/persistence"
)

// fakeRepl is a scripted Replication: Route returns what the test set,
// Append counts, Wait records its calls and returns the scripted error.
type fakeRepl struct {
	mu       sync.Mutex
	leader   string
	self     bool
	waitErr  error
	info     [][2]string
	admin    [][]string
	adminRep AdminReply
	stale    bool

	pos    atomic.Int64
	waits  atomic.Int64
	routes atomic.Int64
}

func (f *fakeRepl) Append(effects []persistence.Effect) int64 { return f.pos.Add(1) }
func (f *fakeRepl) Tail() int64                               { return f.pos.Load() }

func (f *fakeRepl) Wait(pos int64) error {
	f.waits.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.waitErr
}

func (f *fakeRepl) Route() (string, bool) {
	f.routes.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.leader, f.self
}

func (f *fakeRepl) ShareScript(body []byte) {}

func (f *fakeRepl) StaleReads() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stale
}

func (f *fakeRepl) Info() [][2]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.info
}

func (f *fakeRepl) Admin(args [][]byte) AdminReply {
	var a []string
	for _, b := range args {
		a = append(a, string(b))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.admin = append(f.admin, a)
	return f.adminRep
}

// route makes Route name leader (self: this node runs commands itself).
func (f *fakeRepl) route(leader string, self bool) {
	f.mu.Lock()
	f.leader, f.self = leader, self
	f.mu.Unlock()
}

func (f *fakeRepl) setWaitErr(err error) {
	f.mu.Lock()
	f.waitErr = err
	f.mu.Unlock()
}

// fwdEnv is a plain server playing the leader and a cluster node whose
// fake Replication routes to it.
type fwdEnv struct {
	leader, node         *Server
	leaderAddr, nodeAddr string
	leaderClk            *clock.Manual
	repl                 *fakeRepl
	ctx                  context.Context
}

func newFwdEnv(t *testing.T, mod ...func(*Config)) *fwdEnv {
	t.Helper()
	e := &fwdEnv{repl: &fakeRepl{}, ctx: itContext(t)}
	e.leader, e.leaderAddr, e.leaderClk = newTestServer(t, mod...)
	e.node, e.nodeAddr, _ = newTestServer(t, append(mod, func(c *Config) { c.Replication = e.repl })...)
	e.repl.route(e.leaderAddr, false)
	return e
}

// client returns a go-redis client of the node that does not retry (so
// that TRYAGAIN and CLUSTERDOWN reach the test).
func (e *fwdEnv) client(t *testing.T, addr string, proto int, mod ...func(*redis.Options)) *redis.Client {
	return itGoRedis(t, addr, proto, append([]func(*redis.Options){func(o *redis.Options) {
		o.MaxRetries = -1
		o.DisableIdentity = true
	}}, mod...)...)
}

// keyOn reads key from database db of s directly.
func keyOn(s *Server, db int, key string) (string, bool) {
	d := s.dbs[db]
	i := d.ShardOf([]byte(key))
	d.Lock(i)
	defer d.Unlock(i)
	en, ok := d.Get([]byte(key), s.clock.Now())
	if !ok {
		return "", false
	}
	return string(en.AppendString(nil)), true
}

// TestForwardPipelineOrder sends pipelines mixing forwarded commands
// (SET, GET, INCR, CL.THROTTLE) and local ones (PING, ECHO, CLIENT ID):
// the replies come in request order, the keys live on the leader only.
func TestForwardPipelineOrder(t *testing.T) {
	e := newFwdEnv(t)
	rdb := e.client(t, e.nodeAddr, 2)
	// CL.THROTTLE's first reply for a new key, as the leader gives it.
	throttled := fmt.Sprint(e.client(t, e.leaderAddr, 2).Do(e.ctx, "CL.THROTTLE", "ref", 5, 10, 60).Val())
	for round := range 3 {
		n := 50 + 1000*round // the last rounds pass the forward buffer's bound
		cmds, err := rdb.Pipelined(e.ctx, func(p redis.Pipeliner) error {
			for i := range n {
				k := fmt.Sprintf("k%d:%d", round, i)
				switch i % 5 {
				case 0:
					p.Set(e.ctx, k, i, 0)
				case 1:
					p.Ping(e.ctx)
				case 2:
					p.Incr(e.ctx, k)
				case 3:
					p.Echo(e.ctx, k)
				case 4:
					p.Do(e.ctx, "CL.THROTTLE", k, 5, 10, 60)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range cmds {
			k := fmt.Sprintf("k%d:%d", round, i)
			var got, want string
			switch i % 5 {
			case 0:
				got, want = c.(*redis.StatusCmd).Val(), "OK"
			case 1:
				got, want = c.(*redis.StatusCmd).Val(), "PONG"
			case 2:
				got, want = fmt.Sprint(c.(*redis.IntCmd).Val()), "1"
			case 3:
				got, want = c.(*redis.StringCmd).Val(), k
			case 4:
				got, want = fmt.Sprint(c.(*redis.Cmd).Val()), throttled
			}
			if got != want {
				t.Fatalf("round %d reply %d: %q, want %q", round, i, got, want)
			}
		}
	}
	if v, ok := keyOn(e.leader, 0, "k0:0"); !ok || v != "0" {
		t.Fatalf("leader: k0:0 = %q, %v", v, ok)
	}
	if n := e.node.dbs[0].Len(); n != 0 {
		t.Fatalf("the node holds %d keys; everything should be on the leader", n)
	}
}

// TestForwardRawPipeline checks exact bytes: one write of interleaved
// local and forwarded requests, inline ones among them, with both
// connection loops.
func TestForwardRawPipeline(t *testing.T) {
	t.Run("raw", func(t *testing.T) { testForwardRawPipeline(t, newFwdEnv(t)) })
	t.Run("portable", func(t *testing.T) {
		testForwardRawPipeline(t, newFwdEnv(t, func(c *Config) { c.portableConnLoop = true }))
	})
}

func testForwardRawPipeline(t *testing.T, e *fwdEnv) {
	r := dialRaw(t, e.nodeAddr)
	r.send(encodeCommand("SET", "a", "1") + "PING\r\n" + encodeCommand("GET", "a") +
		encodeCommand("ECHO", "x") + "INCR a\r\n" + encodeCommand("TIME") + encodeCommand("GET", "a"))
	want := []string{"+OK\r\n", "+PONG\r\n", "$1\r\n1\r\n", "$1\r\nx\r\n", ":2\r\n", "", "$1\r\n2\r\n"}
	for i, w := range want {
		got := r.readReply()
		if w != "" && got != w {
			t.Fatalf("reply %d: %q, want %q", i, got, w)
		}
	}
}

// TestForwardLargeReplies relays replies much larger than a read.
func TestForwardLargeReplies(t *testing.T) {
	e := newFwdEnv(t)
	rdb := e.client(t, e.nodeAddr, 2)
	big := strings.Repeat("0123456789", 300_000)
	if err := rdb.Set(e.ctx, "big", big, 0).Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		if err := rdb.RPush(e.ctx, "list", strconv.Itoa(i)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	cmds, err := rdb.Pipelined(e.ctx, func(p redis.Pipeliner) error {
		p.Get(e.ctx, "big")
		p.LRange(e.ctx, "list", 0, -1)
		p.Get(e.ctx, "big")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if cmds[0].(*redis.StringCmd).Val() != big || cmds[2].(*redis.StringCmd).Val() != big {
		t.Fatal("big value garbled")
	}
	if l := cmds[1].(*redis.StringSliceCmd).Val(); len(l) != 2000 || l[1999] != "1999" {
		t.Fatalf("LRANGE: %d elements", len(l))
	}
}

// TestForwardRelaysPushes: RESP3 push frames from the leader are relayed
// where they arrive, and are not taken for replies.
func TestForwardRelaysPushes(t *testing.T) {
	e := newFwdEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // a leader that sends a push before each reply but HELLO's
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		br := bufio.NewReader(nc)
		for {
			req, err := readRawReply(br)
			if err != nil {
				return
			}
			if strings.Contains(req, "HELLO") {
				nc.Write([]byte("%1\r\n+proto\r\n:3\r\n"))
				continue
			}
			nc.Write([]byte(">2\r\n+invalidate\r\n*1\r\n$1\r\nk\r\n+OK\r\n"))
		}
	}()
	e.repl.route(ln.Addr().String(), false)
	r := dialRaw(t, e.nodeAddr)
	r.do("HELLO", "3")
	r.send(encodeCommand("SET", "k", "1") + encodeCommand("PING") + encodeCommand("SET", "k", "2"))
	push := ">2\r\n+invalidate\r\n*1\r\n$1\r\nk\r\n"
	for i, want := range []string{push, "+OK\r\n", "+PONG\r\n", push, "+OK\r\n"} {
		if got := r.readReply(); got != want {
			t.Fatalf("frame %d: %q, want %q", i, got, want)
		}
	}
}

// TestForwardTime: TIME is the leader's clock.
func TestForwardTime(t *testing.T) {
	e := newFwdEnv(t)
	e.leaderClk.Advance(1000 * time.Second)
	rdb := e.client(t, e.nodeAddr, 2)
	tm, err := rdb.Time(e.ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Unix(0, testEpoch).Add(1000 * time.Second); !tm.Equal(want) {
		t.Fatalf("TIME = %v, want the leader's %v", tm, want)
	}
}

// TestForwardMultiWatch runs transactions through the forward: queued on
// the leader, WATCH failing on a change made there, unknown commands
// aborting the EXEC, a queued SELECT switching the client's database.
func TestForwardMultiWatch(t *testing.T) {
	e := newFwdEnv(t)
	rdb := e.client(t, e.nodeAddr, 2)
	lead := e.client(t, e.leaderAddr, 2)
	cmds, err := rdb.TxPipelined(e.ctx, func(p redis.Pipeliner) error {
		p.Set(e.ctx, "t1", "a", 0)
		p.Incr(e.ctx, "t2")
		p.Ping(e.ctx)
		return nil
	})
	if err != nil || len(cmds) != 3 || cmds[1].(*redis.IntCmd).Val() != 1 {
		t.Fatalf("MULTI/EXEC: %v %v", cmds, err)
	}
	if v, ok := keyOn(e.leader, 0, "t1"); !ok || v != "a" {
		t.Fatalf("leader t1 = %q, %v", v, ok)
	}

	// WATCH: a change on the leader between WATCH and EXEC fails the EXEC.
	err = rdb.Watch(e.ctx, func(tx *redis.Tx) error {
		if _, err := tx.Get(e.ctx, "t1").Result(); err != nil {
			return err
		}
		if err := lead.Set(e.ctx, "t1", "changed", 0).Err(); err != nil {
			return err
		}
		_, err := tx.TxPipelined(e.ctx, func(p redis.Pipeliner) error {
			p.Set(e.ctx, "t1", "mine", 0)
			return nil
		})
		return err
	}, "t1")
	if !errors.Is(err, redis.TxFailedErr) {
		t.Fatalf("EXEC after a watched change: %v, want TxFailedErr", err)
	}
	// Without a change it succeeds.
	err = rdb.Watch(e.ctx, func(tx *redis.Tx) error {
		_, err := tx.TxPipelined(e.ctx, func(p redis.Pipeliner) error {
			p.Set(e.ctx, "t1", "mine", 0)
			return nil
		})
		return err
	}, "t1")
	if err != nil {
		t.Fatal(err)
	}

	r := dialRaw(t, e.nodeAddr)
	for _, step := range [][2]string{
		{"MULTI", "+OK\r\n"}, {"NOSUCHCMD", "-ERR unknown command 'NOSUCHCMD', with args beginning with: \r\n"},
		{"SET x 1", "+QUEUED\r\n"}, {"EXEC", "-EXECABORT Transaction discarded because of previous errors.\r\n"},
		// A queued SELECT moves the client when EXEC runs it.
		{"MULTI", "+OK\r\n"}, {"SELECT 3", "+QUEUED\r\n"}, {"SET indb3 v", "+QUEUED\r\n"},
		{"EXEC", "*2\r\n+OK\r\n+OK\r\n"}, {"SET also3 v", "+OK\r\n"}, {"CLIENT INFO", ""},
		// ... and not when discarded, nor when malformed.
		{"MULTI", "+OK\r\n"}, {"SELECT 5", "+QUEUED\r\n"}, {"DISCARD", "+OK\r\n"}, {"SET still3 v", "+OK\r\n"},
		{"MULTI", "+OK\r\n"}, {"SELECT", "-ERR wrong number of arguments for 'select' command\r\n"}, {"DISCARD", "+OK\r\n"},
	} {
		r.send(step[0] + "\r\n")
		got := r.readReply()
		if step[1] != "" && got != step[1] {
			t.Fatalf("%s: %q, want %q", step[0], got, step[1])
		}
		if step[0] == "CLIENT INFO" && !strings.Contains(got, " db=3 ") {
			t.Fatalf("CLIENT INFO after EXEC with SELECT 3: %q", got)
		}
	}
	for _, k := range []string{"indb3", "also3", "still3"} {
		if _, ok := keyOn(e.leader, 3, k); !ok {
			t.Errorf("%s is not in the leader's database 3", k)
		}
	}
	if _, ok := keyOn(e.leader, 0, "x"); ok {
		t.Error("the aborted transaction's SET ran")
	}
}

// TestForwardEval runs scripts through the forward: EVAL, SCRIPT LOAD,
// EVALSHA (and go-redis's EVALSHA-then-EVAL fallback).
func TestForwardEval(t *testing.T) {
	e := newFwdEnv(t)
	rdb := e.client(t, e.nodeAddr, 2)
	const body = "redis.call('SET', KEYS[1], ARGV[1]); return redis.call('INCR', KEYS[2])"
	n, err := rdb.Eval(e.ctx, body, []string{"s1", "s2"}, "v").Int()
	if err != nil || n != 1 {
		t.Fatalf("EVAL: %d, %v", n, err)
	}
	sha, err := rdb.ScriptLoad(e.ctx, body).Result()
	if err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.EvalSha(e.ctx, sha, []string{"s1", "s2"}, "w").Int(); err != nil || n != 2 {
		t.Fatalf("EVALSHA: %d, %v", n, err)
	}
	sc := redis.NewScript("return redis.call('INCRBY', KEYS[1], ARGV[1])")
	if n, err := sc.Run(e.ctx, rdb, []string{"s3"}, 5).Int(); err != nil || n != 5 {
		t.Fatalf("Script.Run: %d, %v", n, err)
	}
	if v, ok := keyOn(e.leader, 0, "s1"); !ok || v != "w" {
		t.Fatalf("leader s1 = %q, %v", v, ok)
	}
	if e.node.dbs[0].Len() != 0 {
		t.Fatal("a script ran on the node")
	}
}

// TestForwardRESP3 relays RESP3 replies to a client that said HELLO 3:
// the bytes are the leader's own.
func TestForwardRESP3(t *testing.T) {
	e := newFwdEnv(t)
	rdb := e.client(t, e.nodeAddr, 3)
	if err := rdb.HSet(e.ctx, "h", "f1", "v1", "f2", "v2").Err(); err != nil {
		t.Fatal(err)
	}
	m, err := rdb.HGetAll(e.ctx, "h").Result()
	if err != nil || len(m) != 2 || m["f2"] != "v2" {
		t.Fatalf("HGETALL over RESP3: %v, %v", m, err)
	}
	direct, via := dialRaw(t, e.leaderAddr), dialRaw(t, e.nodeAddr)
	for _, r := range []*rawConn{direct, via} {
		r.do("HELLO", "3")
	}
	for _, cmd := range [][]string{{"HGETALL", "h"}, {"GET", "nokey"}, {"ZSCORE", "nokey", "m"}, {"HELLO", "2"}, {"HGETALL", "h"}} {
		if a, b := direct.do(cmd...), via.do(cmd...); cmd[0] != "HELLO" && a != b {
			t.Fatalf("%v: leader %q, through the node %q", cmd, a, b)
		}
	}
}

// TestForwardSelectMirrored: SELECT runs on the node and reaches the
// upstream before the next forwarded command.
func TestForwardSelectMirrored(t *testing.T) {
	e := newFwdEnv(t)
	r := dialRaw(t, e.nodeAddr)
	r.do("SET", "k", "db0")
	r.send(encodeCommand("SELECT", "2") + encodeCommand("SET", "k", "db2") + encodeCommand("SELECT", "0") + encodeCommand("GET", "k"))
	for i, want := range []string{"+OK\r\n", "+OK\r\n", "+OK\r\n", "$3\r\ndb0\r\n"} {
		if got := r.readReply(); got != want {
			t.Fatalf("reply %d: %q, want %q", i, got, want)
		}
	}
	if v, _ := keyOn(e.leader, 2, "k"); v != "db2" {
		t.Fatalf("leader db 2: k = %q", v)
	}
	// go-redis with a DB option selects on connect.
	rdb := e.client(t, e.nodeAddr, 2, func(o *redis.Options) { o.DB = 7 })
	if err := rdb.Set(e.ctx, "in7", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, ok := keyOn(e.leader, 7, "in7"); !ok {
		t.Fatal("in7 not in the leader's database 7")
	}
}

// TestForwardAuth: with requirepass on both, the node authenticates its
// upstream with its own password; its clients authenticate locally.
func TestForwardAuth(t *testing.T) {
	e := newFwdEnv(t, func(c *Config) { c.RequirePass = "s3cret" })
	r := dialRaw(t, e.nodeAddr)
	if got := r.do("SET", "a", "1"); !strings.HasPrefix(got, "-NOAUTH") {
		t.Fatalf("SET before AUTH: %q", got)
	}
	if got := r.do("AUTH", "s3cret"); got != "+OK\r\n" {
		t.Fatalf("AUTH: %q", got)
	}
	if got := r.do("SET", "a", "1"); got != "+OK\r\n" {
		t.Fatalf("SET after AUTH: %q", got)
	}
	rdb := e.client(t, e.nodeAddr, 3, func(o *redis.Options) { o.Password = "s3cret" })
	if v, err := rdb.Get(e.ctx, "a").Result(); err != nil || v != "1" {
		t.Fatalf("GET: %q, %v", v, err)
	}
	// A leader with another password refuses the handshake: the command
	// fails, the connection stays.
	other, otherAddr, _ := newTestServer(t, func(c *Config) { c.RequirePass = "other" })
	_ = other
	e.repl.route(otherAddr, false)
	if got := r.do("GET", "a"); !strings.HasPrefix(got, "-ERR the leader refused AUTH: WRONGPASS") {
		t.Fatalf("GET with a leader that refuses the password: %q", got)
	}
	if got := r.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING after a refused handshake: %q", got)
	}
}

// TestForwardBlocking: a BLPOP forwarded to the leader blocks there, the
// replies before it are sent meanwhile, and a push on the leader wakes it.
func TestForwardBlocking(t *testing.T) {
	e := newFwdEnv(t)
	r := dialRaw(t, e.nodeAddr)
	r.send(encodeCommand("PING") + encodeCommand("SET", "x", "1") + encodeCommand("BLPOP", "q", "0") + encodeCommand("GET", "x"))
	if got := r.readReply(); got != "+PONG\r\n" {
		t.Fatalf("PING: %q", got)
	}
	if got := r.readReply(); got != "+OK\r\n" {
		t.Fatalf("SET: %q", got)
	}
	waitUntil(t, func() bool { return e.leader.blocked.n.Load() == 1 })
	time.Sleep(1200 * time.Millisecond) // past a poll of the forwarded wait: it must go on waiting
	lead := e.client(t, e.leaderAddr, 2)
	if err := lead.RPush(e.ctx, "q", "job").Err(); err != nil {
		t.Fatal(err)
	}
	if got := r.readReply(); got != "*2\r\n$1\r\nq\r\n$3\r\njob\r\n" {
		t.Fatalf("BLPOP: %q", got)
	}
	if got := r.readReply(); got != "$1\r\n1\r\n" {
		t.Fatalf("GET after BLPOP: %q", got)
	}
	// go-redis, with a timeout that passes on the leader.
	rdb := e.client(t, e.nodeAddr, 3)
	if _, err := rdb.BLPop(e.ctx, time.Second, "empty").Result(); err != redis.Nil {
		t.Fatalf("BLPOP timing out: %v", err)
	}
}

// TestForwardBlockedClientGoes: a client that hangs up or is killed while
// its BLPOP waits on the leader ends the upstream, so the leader stops
// waiting for it.
func TestForwardBlockedClientGoes(t *testing.T) {
	e := newFwdEnv(t)
	r := dialRaw(t, e.nodeAddr)
	r.send(encodeCommand("BLPOP", "q", "0"))
	waitUntil(t, func() bool { return e.leader.blocked.n.Load() == 1 })
	r.c.Close()
	waitUntil(t, func() bool { return e.leader.blocked.n.Load() == 0 })

	r = dialRaw(t, e.nodeAddr)
	id := strings.TrimSpace(strings.TrimPrefix(r.do("CLIENT", "ID"), ":"))
	r.send(encodeCommand("BLPOP", "q", "0"))
	waitUntil(t, func() bool { return e.leader.blocked.n.Load() == 1 })
	killer := dialRaw(t, e.nodeAddr)
	if got := killer.do("CLIENT", "KILL", "ID", id); got != ":1\r\n" {
		t.Fatalf("CLIENT KILL: %q", got)
	}
	r.expectClosed()
	waitUntil(t, func() bool { return e.leader.blocked.n.Load() == 0 })

	// And a node that shuts down while a client waits stops in time (the
	// test server's cleanup checks it).
	r = dialRaw(t, e.nodeAddr)
	r.send(encodeCommand("BLPOP", "q", "0"))
	waitUntil(t, func() bool { return e.leader.blocked.n.Load() == 1 })
}

// TestForwardLeaderChange: a new leader address drops the upstream and
// the next command goes to the new leader; inside MULTI the transaction
// fails instead.
func TestForwardLeaderChange(t *testing.T) {
	e := newFwdEnv(t)
	l2, l2Addr, _ := newTestServer(t)
	r := dialRaw(t, e.nodeAddr)
	if got := r.do("SET", "a", "1"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	before := e.leader.Clients()
	e.repl.route(l2Addr, false)
	if got := r.do("GET", "a"); got != "$-1\r\n" {
		t.Fatalf("GET on the new leader: %q", got)
	}
	if got := r.do("SET", "b", "2"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if _, ok := keyOn(l2, 0, "b"); !ok {
		t.Fatal("b not on the new leader")
	}
	waitUntil(t, func() bool { return e.leader.Clients() == before-1 })

	// Inside MULTI: the transaction is discarded.
	for _, step := range [][2]string{{"MULTI", "+OK\r\n"}, {"SET x 1", "+QUEUED\r\n"}} {
		r.send(step[0] + "\r\n")
		if got := r.readReply(); got != step[1] {
			t.Fatalf("%s: %q", step[0], got)
		}
	}
	e.repl.route(e.leaderAddr, false)
	r.send("SET y 2\r\n")
	if got := r.readReply(); got != "-"+errMultiLeader+"\r\n" {
		t.Fatalf("command after the change: %q", got)
	}
	r.send("SET z 3\r\n") // queued locally into the doomed transaction
	r.readReply()
	r.send("EXEC\r\n")
	if got := r.readReply(); !strings.HasPrefix(got, "-EXECABORT") {
		t.Fatalf("EXEC: %q", got)
	}
	for _, s := range []*Server{e.leader, l2} {
		for _, k := range []string{"x", "y", "z"} {
			if _, ok := keyOn(s, 0, k); ok {
				t.Fatalf("%s was set by a discarded transaction", k)
			}
		}
	}
	if got := r.do("GET", "a"); got != "$1\r\n1\r\n" {
		t.Fatalf("GET on the first leader again: %q", got)
	}
}

// TestForwardNoLeader: CLUSTERDOWN for forwarded commands; local ones
// still run. With Route naming this node, commands run here.
func TestForwardNoLeader(t *testing.T) {
	e := newFwdEnv(t)
	e.repl.route("", false)
	r := dialRaw(t, e.nodeAddr)
	r.send(encodeCommand("SET", "a", "1") + encodeCommand("PING") + encodeCommand("GET", "a"))
	for i, want := range []string{"-" + errClusterDown + "\r\n", "+PONG\r\n", "-" + errClusterDown + "\r\n"} {
		if got := r.readReply(); got != want {
			t.Fatalf("reply %d: %q, want %q", i, got, want)
		}
	}
	e.repl.route("", true)
	if got := r.do("SET", "a", "local"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if v, _ := keyOn(e.node, 0, "a"); v != "local" {
		t.Fatalf("the node's own a = %q", v)
	}
	// An unreachable leader: TRYAGAIN, and the connection stays.
	e.repl.route(closedAddr(t), false)
	if got := r.do("GET", "a"); !strings.HasPrefix(got, "-TRYAGAIN cannot reach the leader") {
		t.Fatalf("GET with an unreachable leader: %q", got)
	}
	if got := r.do("PING"); got != "+PONG\r\n" {
		t.Fatal(got)
	}
}

// closedAddr returns a loopback address nobody listens on.
// TestForwardStaleReads: with stale reads on, a follower answers reads
// from its own memory and still forwards writes, scripts and transactions.
func TestForwardStaleReads(t *testing.T) {
	e := newFwdEnv(t)
	e.repl.mu.Lock()
	e.repl.stale = true
	e.repl.mu.Unlock()
	r := dialRaw(t, e.nodeAddr)
	if got := r.do("SET", "a", "1"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if v, ok := keyOn(e.leader, 0, "a"); !ok || v != "1" {
		t.Fatalf("the write did not reach the leader: %q %v", v, ok)
	}
	// The follower's memory (nothing replicates in this test) answers.
	for _, c := range [][]string{{"GET", "a"}, {"EXISTS", "a"}, {"DBSIZE"}} {
		want := map[string]string{"GET": "$-1\r\n", "EXISTS": ":0\r\n", "DBSIZE": ":0\r\n"}[c[0]]
		if got := r.do(c...); got != want {
			t.Fatalf("%v on a stale-reading follower: %q, want its own %q", c, got, want)
		}
	}
	if got := r.do("EVAL", "return redis.call('GET', KEYS[1])", "1", "a"); got != "$1\r\n1\r\n" {
		t.Fatalf("EVAL is forwarded even with stale reads: %q", got)
	}
}

func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestForwardUpstreamFails: a leader connection that dies in the middle
// of a pipeline answers the commands still waiting TRYAGAIN; the client's
// connection survives and the next command redials.
func TestForwardUpstreamFails(t *testing.T) {
	e := newFwdEnv(t)
	// A fake leader that answers two requests, then closes.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		br := bufio.NewReader(nc)
		for i := 0; i < 2; i++ {
			if _, err := readRawReply(br); err != nil { // a request is an array, like a reply
				return
			}
			nc.Write([]byte("+OK\r\n"))
		}
	}()
	e.repl.route(ln.Addr().String(), false)
	r := dialRaw(t, e.nodeAddr)
	var b strings.Builder
	for i := range 5 {
		b.WriteString(encodeCommand("SET", "k"+strconv.Itoa(i), "v"))
	}
	b.WriteString(encodeCommand("PING"))
	r.send(b.String())
	for i := range 6 {
		got := r.readReply()
		switch {
		case i < 2 && got != "+OK\r\n",
			i >= 2 && i < 5 && !strings.HasPrefix(got, "-"+errFwdLostReply),
			i == 5 && got != "+PONG\r\n":
			t.Fatalf("reply %d: %q", i, got)
		}
	}
	// Back to the real leader; the connection goes on.
	e.repl.route(e.leaderAddr, false)
	if got := r.do("SET", "after", "1"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	// The leader kills the upstream between batches: at most the first
	// command after it fails, then the node redials.
	lead := dialRaw(t, e.leaderAddr)
	if got := lead.do("CLIENT", "KILL", "SKIPME", "yes"); got != ":1\r\n" {
		t.Fatalf("CLIENT KILL on the leader: %q", got)
	}
	fails := 0
	for i := 0; i < 3; i++ {
		got := r.do("GET", "after")
		if got == "$1\r\n1\r\n" {
			break
		}
		if !strings.HasPrefix(got, "-TRYAGAIN") {
			t.Fatalf("GET after the upstream was killed: %q", got)
		}
		fails++
	}
	if fails > 1 {
		t.Fatalf("%d TRYAGAIN replies after the upstream died, want at most 1", fails)
	}
}

// TestForwardWatchLost: watches live on the upstream; if it is lost, the
// next EXEC fails as if a watched key had changed, and does not run.
func TestForwardWatchLost(t *testing.T) {
	e := newFwdEnv(t)
	l2, l2Addr, _ := newTestServer(t)
	r := dialRaw(t, e.nodeAddr)
	if got := r.do("WATCH", "w"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	e.repl.route(l2Addr, false)
	for _, step := range [][2]string{{"MULTI", "+OK\r\n"}, {"SET w 1", "+QUEUED\r\n"}, {"EXEC", "*-1\r\n"},
		{"MULTI", "+OK\r\n"}, {"SET w 2", "+QUEUED\r\n"}, {"EXEC", "*1\r\n+OK\r\n"}} {
		r.send(step[0] + "\r\n")
		if got := r.readReply(); got != step[1] {
			t.Fatalf("%s: %q, want %q", step[0], got, step[1])
		}
	}
	if v, _ := keyOn(l2, 0, "w"); v != "2" {
		t.Fatalf("w = %q, want 2 (the first EXEC must not run)", v)
	}
}

// TestForwardPubSubLocal: pub/sub stays on the node.
func TestForwardPubSubLocal(t *testing.T) {
	e := newFwdEnv(t)
	rdb := e.client(t, e.nodeAddr, 3)
	sub := rdb.Subscribe(e.ctx, "ch")
	defer sub.Close()
	if _, err := sub.Receive(e.ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.Publish(e.ctx, "ch", "hi").Result(); err != nil || n != 1 {
		t.Fatalf("PUBLISH on the node: %d, %v", n, err)
	}
	msg, err := sub.ReceiveMessage(e.ctx)
	if err != nil || msg.Payload != "hi" {
		t.Fatalf("message: %v, %v", msg, err)
	}
	if n := e.client(t, e.leaderAddr, 2).Publish(e.ctx, "ch", "x").Val(); n != 0 {
		t.Fatalf("PUBLISH on the leader reached %d node subscribers", n)
	}
}

// BenchmarkForwardPipeline measures pipelined CL.THROTTLE (16 per write)
// sent to the leader directly and through a forwarding node.
func BenchmarkForwardPipeline(b *testing.B) {
	for _, via := range []string{"direct", "forwarded"} {
		b.Run(via, func(b *testing.B) {
			repl := &fakeRepl{}
			_, leaderAddr, _ := newTestServer(b)
			_, nodeAddr, _ := newTestServer(b, func(c *Config) { c.Replication = repl })
			repl.route(leaderAddr, false)
			addr := leaderAddr
			if via == "forwarded" {
				addr = nodeAddr
			}
			r := dialRaw(b, addr)
			const depth = 16
			var batch strings.Builder
			for i := range depth {
				batch.WriteString(encodeCommand("CL.THROTTLE", "user:"+strconv.Itoa(i), "15", "30", "60"))
			}
			req := batch.String()
			b.ResetTimer()
			for i := 0; i < b.N; i += depth {
				r.send(req)
				for range depth {
					r.readReply()
				}
			}
		})
	}
}

// TestForwardResetAndQuit: RESET runs on the node and drops the upstream
// (with its transaction and watches); QUIT answers after the forwarded
// replies before it.
func TestForwardResetAndQuit(t *testing.T) {
	e := newFwdEnv(t)
	r := dialRaw(t, e.nodeAddr)
	r.send(encodeCommand("WATCH", "w") + encodeCommand("MULTI") + encodeCommand("SET", "x", "1") + encodeCommand("RESET"))
	for i, want := range []string{"+OK\r\n", "+OK\r\n", "+QUEUED\r\n", "+RESET\r\n"} {
		if got := r.readReply(); got != want {
			t.Fatalf("reply %d: %q, want %q", i, got, want)
		}
	}
	for _, step := range [][2]string{{"GET x", "$-1\r\n"}, {"MULTI", "+OK\r\n"}, {"SET w 1", "+QUEUED\r\n"}, {"EXEC", "*1\r\n+OK\r\n"}} {
		r.send(step[0] + "\r\n")
		if got := r.readReply(); got != step[1] {
			t.Fatalf("%s after RESET: %q, want %q", step[0], got, step[1])
		}
	}
	r.send(encodeCommand("SET", "q", "1") + encodeCommand("QUIT") + encodeCommand("SET", "q", "2"))
	for i, want := range []string{"+OK\r\n", "+OK\r\n"} {
		if got := r.readReply(); got != want {
			t.Fatalf("reply %d: %q, want %q", i, got, want)
		}
	}
	r.expectClosed()
	if v, _ := keyOn(e.leader, 0, "q"); v != "1" {
		t.Fatalf("q = %q, want 1", v)
	}
}
