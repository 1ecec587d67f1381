package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/turnstile/turnstile/clock"
)

// Config configures one node.
type Config struct {
	NodeID        string // --node-id: unique and stable across restarts
	RaftAddr      string // --raft-addr: where the Raft transport listens, and the IP it dials from
	RaftAdvertise string // --raft-advertise: what other nodes dial ("": RaftAddr)
	RESPAddr      string // this node's client address, as other nodes reach it (forwarding, join)
	Dir           string // --dir: the Raft log, stable store and snapshots live in Dir/raft
	Bootstrap     bool   // --bootstrap: form a one-node cluster if there is no state yet
	Join          string // --join: RESP address of a member to ask for membership
	Password      string // requirepass, shared by the nodes (join, admin forwarding)
	StaleReads    bool   // followers answer reads from their own memory (may be stale)

	// Raft timing. Zero values take the defaults below.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	CommitTimeout      time.Duration
	// Log compaction: a snapshot once SnapshotThreshold entries followed
	// the last one (checked every SnapshotInterval); TrailingLogs entries
	// are kept behind it for followers that lag a little.
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	TrailingLogs      uint64

	Clock  clock.Clock // the server's base clock (nil: monotonic); the node floors it
	Logger *slog.Logger
}

// Defaults: tighter than hashicorp/raft's (which allow for WANs), so that a
// leader lost on a LAN is replaced within about a second and a leader cut
// from its quorum steps down (failing its pending writes) within 250 ms.
const (
	defaultHeartbeat   = 500 * time.Millisecond
	defaultElection    = 500 * time.Millisecond
	defaultLeaderLease = 250 * time.Millisecond
	defaultCommit      = 5 * time.Millisecond
	defaultSnapThresh  = 16384
	defaultSnapEvery   = 10 * time.Second
	defaultTrailing    = 10240
)

func (c *Config) fill() {
	if c.RaftAdvertise == "" {
		c.RaftAdvertise = c.RaftAddr
	}
	setDur := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	setDur(&c.HeartbeatTimeout, defaultHeartbeat)
	setDur(&c.ElectionTimeout, defaultElection)
	setDur(&c.LeaderLeaseTimeout, defaultLeaderLease)
	setDur(&c.CommitTimeout, defaultCommit)
	setDur(&c.SnapshotInterval, defaultSnapEvery)
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = defaultSnapThresh
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = defaultTrailing
	}
	if c.Clock == nil {
		c.Clock = clock.NewMonotonic()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

func (c *Config) validate() error {
	switch {
	case c.NodeID == "":
		return errors.New("cluster: a node needs --node-id")
	case c.Dir == "":
		return errors.New("cluster: a node needs --dir")
	case c.Bootstrap && c.Join != "":
		return errors.New("cluster: --bootstrap and --join exclude each other")
	}
	for _, a := range []struct{ name, addr string }{{"--raft-addr", c.RaftAddr}, {"--raft-advertise", c.RaftAdvertise}, {"the RESP address", c.RESPAddr}} {
		host, _, err := net.SplitHostPort(a.addr)
		if err != nil {
			return fmt.Errorf("cluster: %s %q: %w", a.name, a.addr, err)
		}
		if a.name != "--raft-addr" && (host == "" || net.ParseIP(host).IsUnspecified()) {
			return fmt.Errorf("cluster: %s %q must name a host other nodes can reach", a.name, a.addr)
		}
	}
	return nil
}
