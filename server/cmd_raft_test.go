package server

import (
	"slices"
	"strings"
	"testing"
)

// TestRaftCommands: RAFT.* go to Replication.Admin, whole and unforwarded;
// without replication they are refused.
func TestRaftCommands(t *testing.T) {
	_, plainAddr, _ := newTestServer(t)
	plain := dialRaw(t, plainAddr)
	if got := plain.do("RAFT.INFO"); got != "-"+errNotCluster+"\r\n" {
		t.Fatalf("RAFT.INFO alone: %q", got)
	}
	e := newFwdEnv(t) // Route names the leader: RAFT.* still run here
	r := dialRaw(t, e.nodeAddr)
	for _, c := range []struct {
		rep  AdminReply
		cmd  []string
		want string
	}{
		{AdminReply{Status: "OK"}, []string{"raft.cluster", "init"}, "+OK\r\n"},
		{AdminReply{Status: "OK"}, []string{"RAFT.CLUSTER", "JOIN", "127.0.0.1:7000"}, "+OK\r\n"},
		{AdminReply{Status: "OK"}, []string{"RAFT.NODE", "ADD", "n2", "127.0.0.1:17001", "127.0.0.1:7001"}, "+OK\r\n"},
		{AdminReply{Err: "ERR no such node"}, []string{"RAFT.NODE", "REMOVE", "n9"}, "-ERR no such node\r\n"},
		{AdminReply{Bulk: true, Status: "role:leader\r\nterm:3\r\n"}, []string{"RAFT.INFO"}, "$21\r\nrole:leader\r\nterm:3\r\n\r\n"},
	} {
		e.repl.mu.Lock()
		e.repl.adminRep = c.rep
		e.repl.mu.Unlock()
		if got := r.do(c.cmd...); got != c.want {
			t.Fatalf("%v: %q, want %q", c.cmd, got, c.want)
		}
		e.repl.mu.Lock()
		last := e.repl.admin[len(e.repl.admin)-1]
		e.repl.mu.Unlock()
		if !slices.Equal(last, c.cmd) {
			t.Fatalf("Admin got %q, want %q", last, c.cmd)
		}
	}
	admins := func() int {
		e.repl.mu.Lock()
		defer e.repl.mu.Unlock()
		return len(e.repl.admin)
	}
	calls := admins()
	for _, c := range [][]string{{"RAFT.NODE", "ADD", "n2"}, {"RAFT.CLUSTER", "NOPE"}, {"RAFT.CLUSTER"}} {
		if got := r.do(c...); !strings.HasPrefix(got, "-ERR") {
			t.Fatalf("%v: %q", c, got)
		}
	}
	if admins() != calls {
		t.Fatal("Admin called for a request with the wrong arguments")
	}
}

// TestInfoReplicationFromCluster: INFO replication is the cluster's fields,
// in its order; a server alone reports Redis's standalone fields.
func TestInfoReplicationFromCluster(t *testing.T) {
	e := newFwdEnv(t)
	e.repl.mu.Lock()
	e.repl.info = [][2]string{{"role", "slave"}, {"leader_id", "n1"}, {"raft_term", "4"}, {"commit_index", "17"}}
	e.repl.mu.Unlock()
	got := dialRaw(t, e.nodeAddr).do("INFO", "replication")
	if want := "# Replication\r\nrole:slave\r\nleader_id:n1\r\nraft_term:4\r\ncommit_index:17\r\n"; !strings.HasSuffix(got, want+"\r\n") {
		t.Fatalf("node INFO replication: %q", got)
	}
	got = dialRaw(t, e.leaderAddr).do("INFO", "replication")
	if !strings.Contains(got, "role:master\r\nconnected_slaves:0\r\n") {
		t.Fatalf("plain INFO replication: %q", got)
	}
}

// TestRoleFromCluster: ROLE reads INFO replication's fields: a follower
// is a slave of the leader's RESP address, connected while its link is up;
// a leader, like a server alone, is a master.
func TestRoleFromCluster(t *testing.T) {
	e := newFwdEnv(t)
	set := func(info [][2]string) {
		e.repl.mu.Lock()
		e.repl.info = info
		e.repl.mu.Unlock()
	}
	node := dialRaw(t, e.nodeAddr)
	set([][2]string{{"role", "slave"}, {"master_host", "10.0.0.1"}, {"master_port", "6380"}, {"master_link_status", "up"}, {"raft_applied_index", "17"}})
	if got, want := node.do("ROLE"), "*5\r\n$5\r\nslave\r\n$8\r\n10.0.0.1\r\n:6380\r\n$9\r\nconnected\r\n:17\r\n"; got != want {
		t.Fatalf("follower ROLE: %q, want %q", got, want)
	}
	set([][2]string{{"role", "slave"}, {"master_host", ""}, {"master_port", ""}, {"master_link_status", "down"}, {"raft_applied_index", "3"}})
	if got, want := node.do("ROLE"), "*5\r\n$5\r\nslave\r\n$0\r\n\r\n:0\r\n$7\r\nconnect\r\n:3\r\n"; got != want {
		t.Fatalf("follower without a leader, ROLE: %q, want %q", got, want)
	}
	set([][2]string{{"role", "master"}, {"raft_applied_index", "42"}})
	if got, want := node.do("ROLE"), "*3\r\n$6\r\nmaster\r\n:42\r\n*0\r\n"; got != want {
		t.Fatalf("leader ROLE: %q, want %q", got, want)
	}
	if got, want := dialRaw(t, e.leaderAddr).do("ROLE"), "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n"; got != want {
		t.Fatalf("plain ROLE: %q, want %q", got, want)
	}
}
