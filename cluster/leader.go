package cluster

import (
	"time"

	"github.com/hashicorp/raft"
)

// watchLeadership opens an epoch when this node becomes the leader and
// closes it when it stops being one. Raft keeps only the latest signal, so
// a true may follow a true (leadership lost and regained meanwhile): every
// signal first closes the epoch that is open.
func (n *Node) watchLeadership() {
	for {
		select {
		case <-n.stop:
			return
		case leader := <-n.raft.LeaderCh():
			n.mu.Lock()
			n.closeEpochLocked()
			n.mu.Unlock()
			if leader {
				n.becomeLeader()
			} else {
				n.log.Info("no longer the leader")
			}
		}
	}
}

// becomeLeader opens a leadership epoch once this node may serve: every
// entry of earlier terms applied (a barrier), memory rebuilt if it ran
// ahead in an earlier epoch, and no execution in flight (Quiesce).
func (n *Node) becomeLeader() {
	for attempt := 0; ; attempt++ {
		if n.raft.State() != raft.Leader || n.closed.Load() {
			return
		}
		if err := n.raft.Barrier(10 * time.Second).Error(); err != nil {
			n.log.Warn("leader barrier failed", "err", err)
			return
		}
		if err := n.rebuildNow(); err != nil {
			n.log.Error("rebuild before leading failed", "err", err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		opened := false
		n.sm.Quiesce(func() {
			n.mu.Lock()
			defer n.mu.Unlock()
			if n.dirty || n.raft.State() != raft.Leader {
				return
			}
			n.token = newToken()
			n.epochStart, n.committed = n.seq, n.seq
			n.sm.SetLeading(true)
			n.open.Store(true)
			opened = true
		})
		if opened {
			break
		}
		if attempt > 100 {
			n.log.Error("could not open a leadership epoch")
			return
		}
	}
	n.log.Info("leading", "term", n.raft.CurrentTerm(), "floor_ns", n.clock.Level())
	n.registerSelf()
}

// registerSelf records this node's client address in the replicated node
// table if it is missing or changed (followers forward to it).
func (n *Node) registerSelf() {
	n.metaMu.RLock()
	cur, ok := n.nodes[n.cfg.NodeID]
	n.metaMu.RUnlock()
	if ok && cur == n.cfg.RESPAddr {
		return
	}
	m := metaChange{Op: "set", ID: n.cfg.NodeID, RESP: n.cfg.RESPAddr}
	if err := n.raft.Apply(encodeMeta(m), 5*time.Second).Error(); err != nil {
		n.log.Warn("could not record this node's client address", "err", err)
	}
}

// snapshotter makes a quiet instant for a leader whose snapshot was
// refused because its memory ran ahead of the log: Route holds new
// commands back, the units in flight commit, Raft takes the snapshot, and
// commands go on. The pause lasts about one commit.
func (n *Node) snapshotter() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		if !n.snapWanted.Load() || !n.open.Load() {
			continue
		}
		n.snapWanted.Store(false)
		ch := make(chan struct{})
		n.pause.Store(&ch)
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) {
			n.mu.Lock()
			quiet := n.committed == n.seq || n.token == 0
			n.mu.Unlock()
			if quiet {
				break
			}
			time.Sleep(time.Millisecond)
		}
		err := n.raft.Snapshot().Error() // fsm.Snapshot ends the pause once it has its instant
		n.endPause()
		if err != nil {
			n.log.Warn("leader snapshot failed", "err", err)
		}
	}
}

// endPause lets commands held back by Route go on.
func (n *Node) endPause() {
	if p := n.pause.Swap(nil); p != nil {
		close(*p)
	}
}
