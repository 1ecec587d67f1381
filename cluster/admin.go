package cluster

import (
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/turnstile/turnstile/server"
)

const adminTimeout = 10 * time.Second

// Admin runs a RAFT.* command (RedisRaft's names where they fit):
//
//	RAFT.INFO                                  this node's view, as INFO text
//	RAFT.CLUSTER INIT                          make this node a one-node cluster
//	RAFT.CLUSTER JOIN host:port                ask the member at host:port to add this node
//	RAFT.NODE ADD id raft-addr resp-addr       add a voter (run on, or passed to, the leader)
//	RAFT.NODE REMOVE id                        remove a member (likewise)
func (n *Node) Admin(args [][]byte) server.AdminReply {
	name := strings.ToUpper(string(args[0]))
	sub := ""
	if len(args) > 1 {
		sub = strings.ToUpper(string(args[1]))
	}
	switch {
	case name == "RAFT.INFO":
		return server.AdminReply{Status: n.infoText(), Bulk: true}
	case name == "RAFT.CLUSTER" && sub == "INIT" && len(args) == 2:
		return n.adminInit()
	case name == "RAFT.CLUSTER" && sub == "JOIN" && len(args) == 3:
		if err := n.join(string(args[2])); err != nil {
			return server.AdminReply{Err: "ERR " + err.Error()}
		}
		return server.AdminReply{Status: "OK"}
	case name == "RAFT.NODE" && sub == "ADD" && len(args) == 5:
		return n.onLeader(args, func() error { return n.addNode(string(args[2]), string(args[3]), string(args[4])) })
	case name == "RAFT.NODE" && sub == "REMOVE" && len(args) == 3:
		return n.onLeader(args, func() error { return n.removeNode(string(args[2])) })
	}
	return server.AdminReply{Err: fmt.Sprintf("ERR unknown or malformed %s command; try RAFT.INFO, RAFT.CLUSTER INIT|JOIN host:port, RAFT.NODE ADD id raft-addr resp-addr|REMOVE id", name)}
}

func (n *Node) adminInit() server.AdminReply {
	existing, err := raft.HasExistingState(n.logs, n.logs, n.snaps)
	if err != nil {
		return server.AdminReply{Err: "ERR " + err.Error()}
	}
	if existing {
		return server.AdminReply{Err: "ERR this node already belongs to a cluster"}
	}
	if err := n.bootstrap(); err != nil {
		return server.AdminReply{Err: "ERR " + err.Error()}
	}
	return server.AdminReply{Status: "OK " + n.cfg.NodeID}
}

// onLeader runs a membership change here if this node leads, else passes
// the command to the leader and relays its answer.
func (n *Node) onLeader(args [][]byte, run func() error) server.AdminReply {
	if n.raft.State() == raft.Leader {
		if err := run(); err != nil {
			return server.AdminReply{Err: "ERR " + err.Error()}
		}
		return server.AdminReply{Status: "OK"}
	}
	addr, self := n.Route()
	if self || addr == "" {
		return server.AdminReply{Err: "CLUSTERDOWN The cluster is down"}
	}
	strs := make([]string, len(args))
	for i, a := range args {
		strs[i] = string(a)
	}
	reply, err := call(addr, n.cfg.Password, adminTimeout, strs...)
	var re replyError
	switch {
	case errors.As(err, &re):
		return server.AdminReply{Err: string(re)}
	case err != nil:
		return server.AdminReply{Err: "TRYAGAIN the leader at " + addr + " cannot be reached: " + err.Error()}
	}
	return server.AdminReply{Status: reply}
}

func (n *Node) addNode(id, raftAddr, respAddr string) error {
	if id == "" || raftAddr == "" || respAddr == "" {
		return errors.New("RAFT.NODE ADD needs an id, a Raft address and a client address")
	}
	if err := n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(raftAddr), 0, adminTimeout).Error(); err != nil {
		return fmt.Errorf("add %s: %w", id, err)
	}
	m := metaChange{Op: "set", ID: id, RESP: respAddr}
	if err := n.raft.Apply(encodeMeta(m), adminTimeout).Error(); err != nil {
		return fmt.Errorf("record the client address of %s: %w", id, err)
	}
	n.log.Info("node added", "id", id, "raft", raftAddr, "resp", respAddr)
	return nil
}

func (n *Node) removeNode(id string) error {
	if err := n.raft.RemoveServer(raft.ServerID(id), 0, adminTimeout).Error(); err != nil {
		return fmt.Errorf("remove %s: %w", id, err)
	}
	if err := n.raft.Apply(encodeMeta(metaChange{Op: "remove", ID: id}), adminTimeout).Error(); err != nil {
		return fmt.Errorf("forget the client address of %s: %w", id, err)
	}
	n.log.Info("node removed", "id", id)
	return nil
}

// join asks the member at addr to add this node.
func (n *Node) join(addr string) error {
	_, err := call(addr, n.cfg.Password, adminTimeout, "RAFT.NODE", "ADD", n.cfg.NodeID, n.cfg.RaftAdvertise, n.cfg.RESPAddr)
	if err != nil {
		return fmt.Errorf("join through %s: %w", addr, err)
	}
	return nil
}

// joinLoop asks until the member at addr has added this node.
func (n *Node) joinLoop(addr string) {
	for attempt := 1; ; attempt++ {
		err := n.join(addr)
		if err == nil {
			n.log.Info("joined the cluster", "through", addr)
			return
		}
		if attempt%10 == 1 {
			n.log.Warn("cannot join yet; retrying", "through", addr, "err", err)
		}
		select {
		case <-n.stop:
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Info returns INFO replication's fields: Redis's role first (master on
// the leader, slave elsewhere, with the leader as master_host), then Raft's.
func (n *Node) Info() [][2]string {
	leaderAddr, leaderID := n.raft.LeaderWithID()
	n.metaMu.RLock()
	leaderRESP := n.nodes[string(leaderID)]
	n.metaMu.RUnlock()
	state := n.raft.State()
	var f [][2]string
	if n.open.Load() {
		f = append(f, [2]string{"role", "master"})
	} else {
		f = append(f, [2]string{"role", "slave"})
		host, port, link := "", "", "down"
		if h, p, err := net.SplitHostPort(leaderRESP); err == nil {
			host, port, link = h, p, "up"
		}
		f = append(f, [2]string{"master_host", host}, [2]string{"master_port", port}, [2]string{"master_link_status", link})
	}
	applied := n.raft.AppliedIndex()
	f = append(f,
		[2]string{"raft_node_id", n.cfg.NodeID},
		[2]string{"raft_state", strings.ToLower(state.String())},
		[2]string{"raft_leader_id", string(leaderID)},
		[2]string{"raft_leader_raft_addr", string(leaderAddr)},
		[2]string{"raft_leader_addr", leaderRESP},
		[2]string{"raft_term", strconv.FormatUint(n.raft.CurrentTerm(), 10)},
		[2]string{"raft_commit_index", strconv.FormatUint(n.raft.CommitIndex(), 10)},
		[2]string{"raft_applied_index", strconv.FormatUint(applied, 10)},
		[2]string{"raft_last_log_index", strconv.FormatUint(n.raft.LastIndex(), 10)},
		[2]string{"raft_num_nodes", strconv.Itoa(n.numServers())},
	)
	batches, units := n.stats.batches.Load(), n.stats.units.Load()
	var perBatch, commitUs float64
	if batches > 0 {
		perBatch = float64(units) / float64(batches)
		commitUs = float64(n.stats.commitNanos.Load()) / float64(batches) / 1e3
	}
	f = append(f,
		[2]string{"raft_batches_committed", strconv.FormatInt(batches, 10)},
		[2]string{"raft_units_per_batch", strconv.FormatFloat(perBatch, 'f', 1, 64)},
		[2]string{"raft_commit_avg_usec", strconv.FormatFloat(commitUs, 'f', 0, 64)},
	)
	return f
}

func (n *Node) numServers() int {
	fut := n.raft.GetConfiguration()
	if fut.Error() != nil {
		return 0
	}
	return len(fut.Configuration().Servers)
}

// infoText is RAFT.INFO's reply.
func (n *Node) infoText() string {
	var b strings.Builder
	b.WriteString("# Raft\r\n")
	for _, kv := range n.Info() {
		fmt.Fprintf(&b, "%s:%s\r\n", kv[0], kv[1])
	}
	b.WriteString("# Nodes\r\n")
	fut := n.raft.GetConfiguration()
	if fut.Error() == nil {
		servers := fut.Configuration().Servers
		sort.Slice(servers, func(i, j int) bool { return servers[i].ID < servers[j].ID })
		n.metaMu.RLock()
		for i, s := range servers {
			fmt.Fprintf(&b, "node%d:id=%s,raft_addr=%s,addr=%s,suffrage=%s\r\n", i, s.ID, s.Address, n.nodes[string(s.ID)], strings.ToLower(s.Suffrage.String()))
		}
		n.metaMu.RUnlock()
	}
	return b.String()
}
