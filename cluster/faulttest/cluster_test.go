//go:build linux

package faulttest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// cluster is the nodes of one test: one node in today's mode (appendonly,
// fsync always), or a Raft cluster whose Raft ports sit behind proxy.
type cluster struct {
	t      testing.TB
	nodes  []*node
	proxy  *Proxy // nil for a single node
	dumped bool   // the logs were printed already
}

// newSingleNode starts one node that logs every write and fsyncs it before
// replying, or, not durable, keeps nothing on disk (a node that must fail
// the checks after a kill).
func newSingleNode(t testing.TB, durable bool) *cluster {
	path, _ := turnstileBinary(t)
	n := &node{idx: 0, ip: "127.0.0.1", dir: filepath.Join(t.TempDir(), "n0"), bin: path}
	n.port = freePort(t, n.ip)
	n.logPath = n.dir + ".log"
	n.args = []string{"--bind", n.ip, "--port", strconv.Itoa(n.port), "--dir", n.dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "", "--loglevel", "notice"}
	if !durable {
		n.args = append(n.args, "--appendonly", "no")
	}
	c := &cluster{t: t, nodes: []*node{n}}
	t.Cleanup(c.close)
	mkdir(t, n.dir)
	if err := n.start(); err != nil {
		t.Fatal(err)
	}
	if err := n.waitServing(20 * time.Second); err != nil {
		c.fatal(err)
	}
	return c
}

// newRaftCluster starts size nodes: node 0 bootstraps, the others join it
// one by one; extra arguments go to every node. Node i binds RESP and Raft on 127.0.0.(i+1) and advertises
// its proxy as its Raft address.
func newRaftCluster(t testing.TB, size int, extra ...string) *cluster {
	path, ok := turnstileBinary(t)
	if !ok {
		t.Skip("the turnstile binary does not know --node-id yet (no cluster mode): cluster tests skipped")
	}
	ips := map[string]int{}
	for i := 0; i < size; i++ {
		ips[fmt.Sprintf("127.0.0.%d", i+1)] = i
	}
	base := t.TempDir() // before c.close is registered, so removed after it ran
	c := &cluster{t: t, proxy: NewProxy(ips)}
	t.Cleanup(c.close)
	for i := 0; i < size; i++ {
		n := &node{idx: i, ip: fmt.Sprintf("127.0.0.%d", i+1), bin: path, dir: filepath.Join(base, fmt.Sprintf("n%d", i))}
		n.logPath = n.dir + ".log"
		n.port = freePort(t, n.ip)
		raftAddr := fmt.Sprintf("%s:%d", n.ip, freePort(t, n.ip))
		adv, err := c.proxy.Listen(i, n.ip+":0", raftAddr)
		if err != nil {
			t.Fatal(err)
		}
		n.args = []string{"--bind", n.ip, "--port", strconv.Itoa(n.port), "--dir", n.dir, "--save", "",
			"--loglevel", "notice", "--node-id", fmt.Sprintf("n%d", i+1), "--raft-addr", raftAddr, "--raft-advertise", adv}
		n.args = append(n.args, extra...)
		if i == 0 {
			n.args = append(n.args, "--bootstrap")
		} else {
			n.args = append(n.args, "--join", c.nodes[0].addr())
		}
		mkdir(t, n.dir)
		c.nodes = append(c.nodes, n)
		if err := n.start(); err != nil {
			t.Fatal(err)
		}
		if err := n.waitServing(20 * time.Second); err != nil {
			c.fatal(err)
		}
		if err := c.waitHealthy(30 * time.Second); err != nil {
			c.fatal(fmt.Errorf("after starting node %d: %w", i, err))
		}
	}
	return c
}

func (c *cluster) close() {
	for _, n := range c.nodes {
		n.kill9()
	}
	if c.proxy != nil {
		c.proxy.Close()
	}
	if c.t.Failed() && !c.dumped {
		c.dumpLogs()
	}
}

func (c *cluster) dumpLogs() {
	c.dumped = true
	for _, n := range c.nodes {
		c.t.Logf("node %d (%s, dir %s) log tail:\n%s", n.idx, n.addr(), n.dir, n.tail(40))
	}
}

func (c *cluster) fatal(err error) {
	c.t.Helper()
	c.dumpLogs()
	c.t.Fatal(err)
}

// client returns a client of node i that never retries (a retried write
// could apply twice) and gives up on a reply after timeout.
func (c *cluster) client(i int, timeout time.Duration) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: c.nodes[i].addr(), MaxRetries: -1, Protocol: 2,
		DisableIdentity: true, PoolSize: 1, MinIdleConns: 0,
		DialTimeout: 300 * time.Millisecond, ReadTimeout: timeout, WriteTimeout: timeout})
}

// info returns the fields of INFO section on node i.
func (c *cluster) info(i int, section string) (map[string]string, error) {
	rc := c.client(i, 300*time.Millisecond)
	defer rc.Close()
	s, err := rc.Info(context.Background(), section).Result()
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			m[k] = v
		}
	}
	return m, nil
}

// leader returns the node that says it leads, in the highest term if
// several do (a deposed leader that has not heard yet), or -1. A single
// node is its own leader while it runs.
func (c *cluster) leader() int {
	if c.proxy == nil {
		if c.nodes[0].alive() && !c.nodes[0].isPaused() {
			return 0
		}
		return -1
	}
	best, bestTerm := -1, int64(-1)
	for i, n := range c.nodes {
		if !n.alive() || n.isPaused() {
			continue
		}
		m, err := c.info(i, "replication")
		if err != nil {
			continue
		}
		lead, term := leadsInTerm(m)
		if lead && term > bestTerm {
			best, bestTerm = i, term
		}
	}
	return best
}

// leadsInTerm reads INFO replication: whether the node says it leads
// (role, or a field ending in _role or _state, is "leader" or "master"),
// and its term (the field term or one ending in _term; 0 if none).
func leadsInTerm(info map[string]string) (bool, int64) {
	lead := false
	var term int64
	for k, v := range info {
		v = strings.ToLower(strings.TrimSpace(v))
		if (k == "role" || strings.HasSuffix(k, "_role") || strings.HasSuffix(k, "_state")) && (v == "leader" || v == "master") {
			lead = true
		}
		if k == "term" || strings.HasSuffix(k, "_term") {
			if t, err := strconv.ParseInt(v, 10, 64); err == nil && t > term {
				term = t
			}
		}
	}
	return lead, term
}

// waitHealthy waits until every node runs and a SET then GET through each
// of them succeeds.
func (c *cluster) waitHealthy(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for i, n := range c.nodes {
		if !n.alive() || n.isPaused() {
			return fmt.Errorf("node %d is down or paused", i)
		}
		rc := c.client(i, time.Second)
		var err error
		for {
			key := fmt.Sprintf("health:%d", i)
			if err = rc.Set(context.Background(), key, "1", 0).Err(); err == nil {
				err = rc.Get(context.Background(), key).Err()
			}
			if err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		rc.Close()
		if err != nil {
			return fmt.Errorf("node %d cannot write after %v: %w", i, timeout, err)
		}
	}
	return nil
}

// crashes returns the exits of nodes the harness did not cause.
func (c *cluster) crashes() []string {
	var out []string
	for _, n := range c.nodes {
		if s := n.crash(); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// pick resolves a step's target: the leader, or a running follower; when
// there is none of that kind, any running node (r chooses).
func (c *cluster) pick(t Target, r *rand.Rand) int {
	l := c.leader()
	if t == Leader && l >= 0 {
		return l
	}
	var running []int
	for i, n := range c.nodes {
		if i != l && n.alive() && !n.isPaused() {
			running = append(running, i)
		}
	}
	if len(running) > 0 {
		return running[r.IntN(len(running))]
	}
	if l >= 0 {
		return l
	}
	return r.IntN(len(c.nodes))
}

func mkdir(t testing.TB, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestLeadsInTerm(t *testing.T) {
	cases := []struct {
		info map[string]string
		lead bool
		term int64
	}{
		{map[string]string{"role": "leader", "term": "7"}, true, 7},
		{map[string]string{"role": "follower", "raft_term": "8"}, false, 8},
		{map[string]string{"raft_role": "Leader", "current_term": "3"}, true, 3},
		{map[string]string{"raft_state": "candidate", "term": "x"}, false, 0},
		{map[string]string{"role": "master"}, true, 0},
	}
	for _, c := range cases {
		if lead, term := leadsInTerm(c.info); lead != c.lead || term != c.term {
			t.Errorf("leadsInTerm(%v) = %v, %d; want %v, %d", c.info, lead, term, c.lead, c.term)
		}
	}
}
