package cluster

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"

	"github.com/turnstile/turnstile/clock"
	"github.com/turnstile/turnstile/persistence"
	"github.com/turnstile/turnstile/server"
)

// StateMachine is the keyspace a node replicates: *server.Server.
type StateMachine interface {
	// ApplyEffect applies one committed effect (it reads no clock).
	ApplyEffect(e persistence.Effect) error
	// ResetKeyspace drops every key, logging nothing.
	ResetKeyspace()
	// Dump returns a point-in-time dump taken at the instant at runs
	// (under every shard lock), or nil if at returns false.
	Dump(at func() bool) persistence.DumpFunc
	// LoadScript adds a script the leader shared to the script cache.
	LoadScript(body []byte) error
	// SetLeading tells the keyspace whether this node leads: only the
	// leader removes expired keys (and replicates the removals).
	SetLeading(on bool)
	// Quiesce runs f while no execution is between changing memory and
	// appending its effects (under every shard lock).
	Quiesce(f func())
}

// Node is one member of a replicated Turnstile cluster; it implements
// server.Replication. See the package documentation for the protocol.
type Node struct {
	cfg   Config
	log   *slog.Logger
	clock *clock.Floor
	sm    StateMachine

	raft  *raft.Raft
	logs  *wal.WAL
	meta  *metadb.BoltMetaDB // the WAL's metadata (and Raft's stable store)
	snaps *raft.FileSnapshotStore
	trans *raft.NetworkTransport
	sl    *streamLayer

	// Commit state, guarded by mu (commit.go).
	mu         sync.Mutex
	cond       sync.Cond // broadcast when committed moves or the epoch closes
	seq        int64     // position of the last unit appended (any epoch)
	token      uint64    // the open epoch's token; 0: closed
	epochStart int64     // seq when the epoch opened: earlier positions are settled
	committed  int64     // highest position known committed
	dead       []span    // positions that will never commit
	pending    []byte    // units of the next batch
	pendFirst  int64
	pendCount  int
	dirty      bool // memory holds changes that never committed: rebuild before serving
	open       atomic.Bool
	pause      atomic.Pointer[chan struct{}] // while set, Route waits for it to close (leader.go)
	snapWanted atomic.Bool                   // a snapshot was refused because the leader ran ahead

	// State machine, guarded by fsmMu (fsm.go).
	fsmMu   sync.Mutex
	applied uint64 // index of the last entry applied
	lastNow int64  // now of the last batch applied

	metaMu  sync.RWMutex
	nodes   map[string]string   // node ID -> client (RESP) address
	scripts map[string]struct{} // scripts shared by SCRIPT LOAD, by body

	stats    commitStats
	fence    fencer
	kick     chan struct{}     // wakes the batcher
	futures  chan applyPending // batches handed to Raft, in order
	inflight chan struct{}     // a token per batch in Raft (maxInflight)
	rebuild  chan struct{}     // wakes the rebuilder
	stop     chan struct{}
	wg       sync.WaitGroup
	closed   atomic.Bool
}

// logCacheSize is how many recent entries stay in memory for replication.
const logCacheSize = 1024

// span is a closed range of positions.
type span struct{ from, to int64 }

// New checks cfg and builds a node; Start opens its files and joins Raft.
func New(cfg Config) (*Node, error) {
	cfg.fill()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	n := &Node{
		cfg:      cfg,
		log:      cfg.Logger.With("component", "cluster", "node", cfg.NodeID),
		clock:    clock.NewFloor(cfg.Clock),
		nodes:    map[string]string{},
		scripts:  map[string]struct{}{},
		kick:     make(chan struct{}, 1),
		futures:  make(chan applyPending, maxInflight),
		inflight: make(chan struct{}, maxInflight),
		rebuild:  make(chan struct{}, 1),
		stop:     make(chan struct{}),
	}
	n.cond.L = &n.mu
	n.fence.verify = n.verifyLeader
	return n, nil
}

// Clock is the clock the server must use: the base clock, floored at the
// now of the last entry applied.
func (n *Node) Clock() clock.Clock { return n.clock }

// Start opens the Raft log, stable store and snapshots under Dir/raft,
// starts Raft with sm as the state machine, bootstraps a one-node cluster
// when asked and there is no state yet, and asks the member at Join for
// membership when there is none.
func (n *Node) Start(sm StateMachine) error {
	n.sm = sm
	dir := filepath.Join(n.cfg.Dir, "raft")
	if err := os.MkdirAll(filepath.Join(dir, "wal"), 0o755); err != nil {
		return fmt.Errorf("cluster: create %s: %w", dir, err)
	}
	var err error
	// The WAL does not close a metadata store it opened itself: open it
	// here, so that Close releases its file lock (a restart in the same
	// process would wait for it forever).
	n.meta = &metadb.BoltMetaDB{}
	if n.logs, err = wal.Open(filepath.Join(dir, "wal"), wal.WithLogger(hclogTo(n.log, "wal")), wal.WithMetaStore(n.meta)); err != nil {
		n.closeStores()
		return fmt.Errorf("cluster: open the Raft log: %w", err)
	}
	if n.snaps, err = raft.NewFileSnapshotStoreWithLogger(dir, 2, hclogTo(n.log, "snapshot")); err != nil {
		n.closeStores()
		return fmt.Errorf("cluster: open the snapshot store: %w", err)
	}
	sl, err := newStreamLayer(n.cfg.RaftAddr, n.cfg.RaftAdvertise)
	if err != nil {
		n.closeStores()
		return err
	}
	n.sl = sl
	n.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: sl, MaxPool: 3, Timeout: 2 * time.Second, Logger: hclogTo(n.log, "transport"),
	})
	existing, err := raft.HasExistingState(n.logs, n.logs, n.snaps)
	if err != nil {
		n.closeStores()
		return fmt.Errorf("cluster: read the Raft state: %w", err)
	}
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(n.cfg.NodeID)
	rc.HeartbeatTimeout = n.cfg.HeartbeatTimeout
	rc.ElectionTimeout = n.cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = n.cfg.LeaderLeaseTimeout
	rc.CommitTimeout = n.cfg.CommitTimeout
	rc.SnapshotThreshold = n.cfg.SnapshotThreshold
	rc.SnapshotInterval = n.cfg.SnapshotInterval
	rc.TrailingLogs = n.cfg.TrailingLogs
	rc.BatchApplyCh = true
	rc.Logger = hclogTo(n.log, "raft")
	// The cache keeps the latest entries in memory: replication to the
	// followers reads them back from the log store, a read syscall each.
	cache, err := raft.NewLogCache(logCacheSize, n.logs)
	if err != nil {
		n.closeStores()
		return fmt.Errorf("cluster: log cache: %w", err)
	}
	if n.raft, err = raft.NewRaft(rc, (*fsm)(n), cache, n.logs, n.snaps, n.trans); err != nil {
		n.closeStores()
		return fmt.Errorf("cluster: start Raft: %w", err)
	}
	n.goFunc(n.batcher)
	n.goFunc(n.watchFutures)
	n.goFunc(n.watchLeadership)
	n.goFunc(n.rebuilder)
	n.goFunc(n.snapshotter)
	switch {
	case existing:
		n.log.Info("restarting with existing Raft state", "dir", dir)
	case n.cfg.Bootstrap:
		if err := n.bootstrap(); err != nil {
			return err
		}
	case n.cfg.Join != "":
		n.goFunc(func() { n.joinLoop(n.cfg.Join) })
	default:
		n.log.Warn("no Raft state, no --bootstrap and no --join: waiting to be added (RAFT.CLUSTER INIT or JOIN)")
	}
	return nil
}

func (n *Node) bootstrap() error {
	cfg := raft.Configuration{Servers: []raft.Server{{
		ID: raft.ServerID(n.cfg.NodeID), Address: raft.ServerAddress(n.cfg.RaftAdvertise), Suffrage: raft.Voter,
	}}}
	if err := n.raft.BootstrapCluster(cfg).Error(); err != nil {
		return fmt.Errorf("cluster: bootstrap: %w", err)
	}
	n.log.Info("bootstrapped a one-node cluster", "raft", n.cfg.RaftAdvertise)
	return nil
}

func (n *Node) goFunc(f func()) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
}

// Close stops Raft and the node's goroutines and closes its files. Waits
// on positions not yet committed fail.
func (n *Node) Close() error {
	if !n.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(n.stop)
	var err error
	if n.raft != nil {
		err = n.raft.Shutdown().Error()
	}
	n.mu.Lock()
	n.closeEpochLocked()
	n.mu.Unlock()
	n.endPause()
	n.wg.Wait()
	n.closeStores()
	return err
}

func (n *Node) closeStores() {
	if n.trans != nil {
		n.trans.Close()
	}
	if n.logs != nil {
		n.logs.Close()
	}
	if n.meta != nil {
		n.meta.Close()
	}
}

// newToken returns a random epoch token, never 0.
func newToken() uint64 {
	var b [8]byte
	for {
		rand.Read(b[:])
		if t := binary.LittleEndian.Uint64(b[:]); t != 0 {
			return t
		}
	}
}

// The errors Wait returns are the Redis error replies sent instead of the
// held-back replies.
var (
	errLost      = errors.New("TRYAGAIN leadership changed before the write committed; it may or may not have taken effect")
	errNotLeader = errors.New("TRYAGAIN this node is no longer the leader; retry")
	errShutdown  = errors.New("TRYAGAIN the node is shutting down")
)

var _ server.Replication = (*Node)(nil)
