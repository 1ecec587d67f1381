package cluster

import (
	"bytes"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/turnstile/turnstile/persistence"
)

// Route reports whether this node runs keyspace commands itself (it is
// the leader and its epoch is open), else the client address of the
// leader ("" when none is known). While the leader pauses writes for a
// snapshot, Route waits for the pause to end (leader.go).
func (n *Node) Route() (string, bool) {
	if n.open.Load() {
		if p := n.pause.Load(); p != nil {
			<-*p
		}
		if n.open.Load() {
			return "", true
		}
	}
	addr, id := n.raft.LeaderWithID()
	if addr == "" || string(id) == n.cfg.NodeID {
		return "", false // no leader, or this node, not open yet: CLUSTERDOWN
	}
	n.metaMu.RLock()
	resp := n.nodes[string(id)]
	n.metaMu.RUnlock()
	return resp, false
}

// StaleReads reports whether this node, not being the leader, answers
// read-only commands from its own memory (Config.StaleReads).
func (n *Node) StaleReads() bool { return n.cfg.StaleReads && !n.open.Load() }

// Append queues one unit's effects for the next batch and returns its
// position. Called under the unit's shard locks (server.end). If no epoch
// is open the unit changed memory that will never commit: its position is
// dead and the node rebuilds.
func (n *Node) Append(effects []persistence.Effect) int64 {
	n.mu.Lock()
	n.seq++
	pos := n.seq
	if n.token == 0 {
		n.addDeadLocked(pos, pos)
		n.dirty = true
		n.mu.Unlock()
		n.wakeRebuild()
		return pos
	}
	if n.pendCount == 0 {
		n.pendFirst = pos
	}
	n.pending = appendUnit(n.pending, effects)
	n.pendCount++
	n.mu.Unlock()
	select {
	case n.kick <- struct{}{}:
	default:
	}
	return pos
}

// Tail is the position of the last unit appended.
func (n *Node) Tail() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.seq
}

// Wait returns once pos is committed and this node's leadership was
// confirmed after the call: by the commit itself when pos was not yet
// committed at the call, else by a heartbeat round. Its error is the
// Redis error reply to send instead.
func (n *Node) Wait(pos int64) error {
	n.mu.Lock()
	waited := false
	for {
		if n.isDeadLocked(pos) {
			n.mu.Unlock()
			return errLost
		}
		if pos <= n.committed || pos <= n.epochStart {
			break
		}
		if n.token == 0 {
			n.mu.Unlock()
			return errLost // closed: closeEpochLocked marked it dead; not reached
		}
		waited = true
		n.cond.Wait()
	}
	open := n.token != 0
	n.mu.Unlock()
	switch {
	case n.closed.Load():
		return errShutdown
	case !open && n.cfg.StaleReads:
		return nil // a follower's own read, stale by choice
	case !open:
		return errNotLeader
	case waited:
		return nil
	}
	return n.fence.wait()
}

// addDeadLocked records that positions from..to will never commit.
func (n *Node) addDeadLocked(from, to int64) {
	if k := len(n.dead); k > 0 && n.dead[k-1].to+1 >= from {
		n.dead[k-1].to = max(n.dead[k-1].to, to)
		return
	}
	n.dead = append(n.dead, span{from, to})
}

func (n *Node) isDeadLocked(pos int64) bool {
	for i := len(n.dead) - 1; i >= 0; i-- {
		if d := n.dead[i]; pos >= d.from && pos <= d.to {
			return true
		} else if pos > d.to {
			return false
		}
	}
	return false
}

// closeEpochLocked ends the open epoch, if any: what was appended but not
// committed is dead, and memory holds it, so the node must rebuild.
func (n *Node) closeEpochLocked() {
	if n.token == 0 {
		return
	}
	n.token = 0
	n.open.Store(false)
	n.sm.SetLeading(false)
	if n.committed < n.seq {
		n.addDeadLocked(n.committed+1, n.seq)
		n.dirty = true
		n.wakeRebuild()
	}
	n.pending, n.pendCount = n.pending[:0], 0
	n.cond.Broadcast()
}

func (n *Node) wakeRebuild() {
	select {
	case n.rebuild <- struct{}{}:
	default:
	}
}

// applyPending is a batch handed to Raft, with the epoch it belongs to.
type applyPending struct {
	f     raft.ApplyFuture
	token uint64
	units int
	sent  time.Time
}

// maxInflight is how many batches may be in Raft, not yet applied, at
// once. While one is, the units of every connection accumulate in the
// next, so one entry (one log append, one fsync on each node, one message
// to each follower) carries all that arrived during a commit. One measured
// best on one machine whose three nodes share a disk (bench/cluster.sh:
// 85k against 55-70k CL.THROTTLE a second with two): a second batch in
// flight only queues more flushes on the same device.
const maxInflight = 1

// batcher cuts the pending units into one Raft entry whenever fewer than
// maxInflight batches are in flight.
func (n *Node) batcher() {
	for {
		select {
		case <-n.stop:
			return
		case <-n.kick:
		}
		select {
		case <-n.stop:
			return
		case n.inflight <- struct{}{}: // released by watchFutures
		}
		n.mu.Lock()
		if n.pendCount == 0 || n.token == 0 {
			n.mu.Unlock()
			<-n.inflight
			continue
		}
		data := make([]byte, 0, batchHeaderMax+len(n.pending))
		data = appendBatchHeader(data, n.token, n.pendFirst, n.pendCount, n.clock.Now())
		data = append(data, n.pending...)
		token, units := n.token, n.pendCount
		n.pending, n.pendCount = n.pending[:0], 0
		if cap(n.pending) > 4<<20 {
			n.pending = nil // do not keep a huge batch's buffer
		}
		n.mu.Unlock()
		sent := time.Now()
		f := n.raft.Apply(data, 0)
		select {
		case n.futures <- applyPending{f, token, units, sent}:
		case <-n.stop:
			return
		}
	}
}

// watchFutures closes the epoch as soon as Raft refuses or loses one of
// its batches (leadership lost, shutdown), failing every Wait on it at
// once rather than when the next leader is known.
func (n *Node) watchFutures() {
	for {
		select {
		case <-n.stop:
			return
		case p := <-n.futures:
			err := p.f.Error()
			if err == nil {
				n.stats.batches.Add(1)
				n.stats.units.Add(int64(p.units))
				n.stats.commitNanos.Add(int64(time.Since(p.sent)))
			}
			<-n.inflight
			select { // the next batch may go; it holds what arrived meanwhile
			case n.kick <- struct{}{}:
			default:
			}
			if err != nil {
				n.log.Warn("a batch was not committed; closing the leadership epoch", "err", err)
				n.mu.Lock()
				if n.token == p.token {
					n.closeEpochLocked()
				}
				n.mu.Unlock()
			}
		}
	}
}

// verifyLeader is one round of leadership confirmation.
func (n *Node) verifyLeader() error {
	if err := n.raft.VerifyLeader().Error(); err != nil {
		if errors.Is(err, raft.ErrRaftShutdown) {
			return errShutdown
		}
		return errNotLeader
	}
	return nil
}

// fencer shares leadership confirmation rounds among waiting connections:
// a waiter joins the next round that starts after it arrived.
type fencer struct {
	verify  func() error
	mu      sync.Mutex
	waiting []chan error
	running bool
}

func (f *fencer) wait() error {
	ch := make(chan error, 1)
	f.mu.Lock()
	f.waiting = append(f.waiting, ch)
	if !f.running {
		f.running = true
		go f.run()
	}
	f.mu.Unlock()
	return <-ch
}

func (f *fencer) run() {
	for {
		f.mu.Lock()
		w := f.waiting
		f.waiting = nil
		if len(w) == 0 {
			f.running = false
			f.mu.Unlock()
			return
		}
		f.mu.Unlock()
		err := f.verify()
		for _, ch := range w {
			ch <- err
		}
	}
}

// commitStats are the leader's batching figures (INFO replication).
type commitStats struct {
	batches     atomic.Int64 // batches committed
	units       atomic.Int64 // units in them
	commitNanos atomic.Int64 // summed time from handing a batch to Raft to its apply
}

// ShareScript replicates a script loaded on the leader (SCRIPT LOAD) to
// every node, in the background: the client's reply does not wait for it.
func (n *Node) ShareScript(body []byte) {
	if n.closed.Load() {
		return
	}
	data := encodeMeta(metaChange{Op: "script", Script: bytes.Clone(body)})
	n.goFunc(func() {
		if err := n.raft.Apply(data, 10*time.Second).Error(); err != nil {
			n.log.Warn("a loaded script was not shared with the other nodes", "err", err)
		}
	})
}
