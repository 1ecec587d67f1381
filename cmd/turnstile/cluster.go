package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"github.com/turnstile/turnstile/cluster"
	"github.com/turnstile/turnstile/server"
)

// clusterFlags are the flags of a replicated node (package cluster).
// Without --node-id the server runs alone, exactly as before.
type clusterFlags struct {
	nodeID        string
	raftAddr      string
	raftAdvertise string
	announce      string
	bootstrap     bool
	join          string
	staleReads    bool
}

func (c *clusterFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.nodeID, "node-id", "", "run as a node of a Raft cluster with this stable, unique ID (its state lives in --dir)")
	fs.StringVar(&c.raftAddr, "raft-addr", "", "Raft transport address to listen on, host:port (with --node-id)")
	fs.StringVar(&c.raftAdvertise, "raft-advertise", "", "Raft address other nodes dial, host:port (default: --raft-addr)")
	fs.StringVar(&c.announce, "announce", "", "client address other nodes forward to, host:port (default: --bind and --port)")
	fs.BoolVar(&c.bootstrap, "bootstrap", false, "form a new one-node cluster if this node has no Raft state yet")
	fs.StringVar(&c.join, "join", "", "client address host:port of a member to ask for membership")
	fs.BoolVar(&c.staleReads, "stale-reads", false, "a follower answers read-only commands from its own memory (may be stale) instead of forwarding them")
}

// newNode builds the cluster node for cfg (nil without --node-id) and
// makes it the server's replication and clock (cfg.Clock, floored). A
// node keeps its data in the Raft log and snapshots only: appendonly is
// refused and the save rules are off.
func (c *clusterFlags) newNode(cfg *server.Config, logger *slog.Logger) (*cluster.Node, error) {
	if c.nodeID == "" {
		if c.raftAddr != "" || c.bootstrap || c.join != "" || c.staleReads {
			return nil, errors.New("--raft-addr, --bootstrap, --join and --stale-reads need --node-id")
		}
		return nil, nil
	}
	if cfg.Persist.AppendOnly {
		return nil, errors.New("a cluster node keeps its data in the Raft log: --appendonly must be off with --node-id")
	}
	if c.raftAddr == "" {
		return nil, errors.New("--node-id needs --raft-addr")
	}
	if cfg.Port == 0 {
		return nil, errors.New("a cluster node needs a fixed --port (other nodes forward to it)")
	}
	announce := c.announce
	if announce == "" {
		host := cfg.Bind
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			return nil, fmt.Errorf("--bind %q is not an address other nodes can reach: give --announce host:port", cfg.Bind)
		}
		announce = net.JoinHostPort(host, strconv.Itoa(cfg.Port))
	}
	cfg.Persist.Save = nil
	node, err := cluster.New(cluster.Config{
		NodeID: c.nodeID, RaftAddr: c.raftAddr, RaftAdvertise: c.raftAdvertise, RESPAddr: announce,
		Dir: cfg.Persist.Dir, Bootstrap: c.bootstrap, Join: c.join, Password: cfg.RequirePass, StaleReads: c.staleReads,
		Clock: cfg.Clock, Logger: logger,
	})
	if err != nil {
		return nil, err
	}
	cfg.Replication = node
	cfg.Clock = node.Clock()
	return node, nil
}
