package cluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/turnstile/turnstile/clock"
	"github.com/turnstile/turnstile/internal/testport"
	"github.com/turnstile/turnstile/persistence"
	"github.com/turnstile/turnstile/server"
	"github.com/turnstile/turnstile/shards"
)

// tnode is one in-process cluster node: a Node and its server.
type tnode struct {
	id, dir, raftAddr, addr string
	node                    *Node
	srv                     *server.Server
	cancel                  context.CancelFunc
	done                    chan struct{}
	client                  *redis.Client
}

// testCluster starts and stops in-process nodes; Raft on 127.0.0.1 free
// ports, tight timeouts so that elections take tens of milliseconds.
type testCluster struct {
	t     *testing.T
	nodes map[string]*tnode
	mu    sync.Mutex
	base  string // the nodes' directories live here
	tweak func(*Config)
	// serverTweak, if set, adjusts each node's server configuration.
	serverTweak func(*server.Config)
}

func newTestCluster(t *testing.T) *testCluster {
	// The directory is made before the cleanup that stops the nodes is
	// registered, so it is removed after they stopped (cleanups run last
	// first): a node still writing a snapshot cannot fail its removal.
	tc := &testCluster{t: t, nodes: map[string]*tnode{}, base: t.TempDir()}
	t.Cleanup(func() {
		for _, n := range tc.nodes {
			n.stop()
		}
	})
	return tc
}

// freePort is a port for a node to listen on, now and after a restart
// (internal/testport: not one an outgoing connection can take meanwhile).
func freePort(t *testing.T) int { return testport.Free(t, "127.0.0.1") }

func testLogger(t *testing.T, id string) *slog.Logger {
	if os.Getenv("TURNSTILE_CLUSTER_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test_node", id)
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// start starts (or restarts, with the same dir and ports) node id.
// bootstrap or join (a member's client address) as for the flags.
func (tc *testCluster) start(id string, bootstrap bool, join string, base clock.Clock) *tnode {
	t := tc.t
	tc.mu.Lock()
	old := tc.nodes[id]
	tc.mu.Unlock()
	tn := &tnode{id: id}
	if old != nil {
		tn.dir, tn.raftAddr, tn.addr = old.dir, old.raftAddr, old.addr
	} else {
		dir, err := os.MkdirTemp(tc.base, id+"-")
		if err != nil {
			t.Fatal(err)
		}
		tn.dir = dir
		tn.raftAddr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		tn.addr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	}
	cfg := Config{
		NodeID: id, RaftAddr: tn.raftAddr, RESPAddr: tn.addr, Dir: tn.dir,
		Bootstrap: bootstrap, Join: join, Clock: base, Logger: testLogger(t, id),
		HeartbeatTimeout: 200 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond,
		LeaderLeaseTimeout: 100 * time.Millisecond, CommitTimeout: 5 * time.Millisecond,
	}
	if tc.tweak != nil {
		tc.tweak(&cfg)
	}
	node, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	scfg := server.DefaultConfig()
	_, port, _ := net.SplitHostPort(tn.addr)
	fmt.Sscan(port, &scfg.Port)
	scfg.Persist.Dir = tn.dir
	scfg.Persist.Save = nil
	scfg.Shards = 64
	scfg.Replication = node
	scfg.Clock = node.Clock()
	scfg.Logger = testLogger(t, id)
	if tc.serverTweak != nil {
		tc.serverTweak(&scfg)
	}
	srv, err := server.New(scfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := srv.Listen()
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Start(srv); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tn.node, tn.srv, tn.cancel, tn.done = node, srv, cancel, make(chan struct{})
	go func() {
		defer close(tn.done)
		srv.Serve(ctx, ln)
	}()
	tn.client = redis.NewClient(&redis.Options{Addr: tn.addr, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 5 * time.Second})
	tc.mu.Lock()
	tc.nodes[id] = tn
	tc.mu.Unlock()
	return tn
}

// stop stops the node: server and Raft (like a crash as far as the others
// can tell; its files stay for a restart).
func (tn *tnode) stop() {
	if tn.cancel == nil {
		return
	}
	tn.client.Close()
	tn.cancel()
	<-tn.done
	tn.node.Close()
	tn.cancel = nil
}

// leader waits for a node whose epoch is open and returns it.
func (tc *testCluster) leader() *tnode {
	tc.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		tc.mu.Lock()
		for _, n := range tc.nodes {
			if n.cancel != nil && n.node.open.Load() {
				tc.mu.Unlock()
				return n
			}
		}
		tc.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	tc.t.Fatal("no leader within 10 s")
	return nil
}

// three starts a bootstrapped n1 and joins n2 and n3 through it, and waits
// until all three are voters.
func (tc *testCluster) three() {
	tc.start("n1", true, "", nil)
	l := tc.leader()
	tc.start("n2", false, l.addr, nil)
	tc.start("n3", false, l.addr, nil)
	tc.waitMembers(l, 3)
}

func (tc *testCluster) waitMembers(l *tnode, want int) {
	tc.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if l.node.numServers() == want {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	tc.t.Fatalf("cluster has %d members, want %d", l.node.numServers(), want)
}

// converge waits until every running node has applied the leader's last
// index, then checks that all hold the same keyspace, and returns it.
func (tc *testCluster) converge() map[string]string {
	tc.t.Helper()
	l := tc.leader()
	// Raft's applied index runs ahead of the state machine (it counts
	// entries handed to it): compare the index of the last command entry
	// each node's state machine has applied.
	if err := l.node.raft.Barrier(10 * time.Second).Error(); err != nil {
		tc.t.Fatal(err)
	}
	l.node.fsmMu.Lock()
	target := l.node.applied
	l.node.fsmMu.Unlock()
	// A node that was down a while is retried with hashicorp/raft's
	// back-off, up to about 10 s between attempts.
	deadline := time.Now().Add(30 * time.Second)
	var want map[string]string
	for _, n := range tc.running() {
		for {
			n.node.fsmMu.Lock()
			applied := n.node.applied
			n.node.fsmMu.Unlock()
			if applied >= target {
				break
			}
			if time.Now().After(deadline) {
				tc.t.Fatalf("node %s applied %d, the leader's log reaches %d; its Raft: %v", n.id, applied, target, n.node.raft.Stats())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	for _, n := range tc.running() {
		got := dumpOf(tc.t, n.srv)
		if want == nil {
			want = got
			continue
		}
		if d := diffKeyspaces(want, got); d != "" {
			tc.t.Fatalf("node %s differs from the others: %s", n.id, d)
		}
	}
	return want
}

// others returns the running nodes other than the given ones, by ID.
func (tc *testCluster) others(not ...*tnode) []*tnode {
	var out []*tnode
	for _, n := range tc.running() {
		if !slices.Contains(not, n) {
			out = append(out, n)
		}
	}
	return out
}

func (tc *testCluster) running() []*tnode {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	var out []*tnode
	for _, n := range tc.nodes {
		if n.cancel != nil {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// dumpOf returns a server's keyspace as "db key" -> a printable value.
func dumpOf(t *testing.T, srv *server.Server) map[string]string {
	out := map[string]string{}
	dump := srv.Dump(func() bool { return true })
	err := dump(func(db int, key []byte, e shards.Entry) error {
		var b strings.Builder
		_, _, err := persistence.WriteDump(&b, func(emit persistence.EmitFunc) error { return emit(db, key, e) })
		out[fmt.Sprintf("%d %q", db, key)] = fmt.Sprintf("%q", b.String())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diffKeyspaces(a, b map[string]string) string {
	for k, v := range a {
		if b[k] != v {
			return fmt.Sprintf("key %s: %.80s vs %.80s", k, v, b[k])
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			return fmt.Sprintf("key %s only on the second", k)
		}
	}
	return ""
}
