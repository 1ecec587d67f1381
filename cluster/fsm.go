package cluster

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"time"

	"github.com/hashicorp/raft"

	"github.com/turnstile/turnstile/persistence"
	"github.com/turnstile/turnstile/shards"
)

// fsm is the Node as Raft's state machine (a distinct type, so that the
// Node's own API does not show Raft's methods).
type fsm Node

var (
	_ raft.FSM         = (*fsm)(nil)
	_ raft.BatchingFSM = (*fsm)(nil)
)

func (f *fsm) Apply(l *raft.Log) interface{} {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// ApplyBatch applies committed entries in order. The entries this node
// wrote during its open epoch are already in memory: they only move the
// committed position.
func (f *fsm) ApplyBatch(logs []*raft.Log) []interface{} {
	n := (*Node)(f)
	out := make([]interface{}, len(logs))
	n.fsmMu.Lock()
	defer n.fsmMu.Unlock()
	for i, l := range logs {
		if l.Type == raft.LogCommand {
			if err := n.applyLocked(l.Data, true); err != nil {
				// The log is the truth every node applies alike: an entry
				// that does not apply is a bug, never a reason to stop.
				n.log.Error("a committed entry did not apply", "index", l.Index, "err", err)
				out[i] = err
			}
		}
		n.applied = l.Index
	}
	return out
}

// applyLocked applies one entry's data. With skipOwn, a batch of this
// node's open epoch only advances the committed position. Holds fsmMu.
func (n *Node) applyLocked(data []byte, skipOwn bool) error {
	if len(data) == 0 {
		return errors.New("cluster: empty entry")
	}
	switch data[0] {
	case entryMeta:
		m, err := decodeMeta(data)
		if err != nil {
			return err
		}
		n.metaMu.Lock()
		switch m.Op {
		case "set":
			n.nodes[m.ID] = m.RESP
		case "remove":
			delete(n.nodes, m.ID)
		case "script":
			n.scripts[string(m.Script)] = struct{}{}
		}
		n.metaMu.Unlock()
		if m.Op == "script" {
			return n.sm.LoadScript(m.Script)
		}
		return nil
	case entryUnits:
		h, err := decodeBatch(data)
		if err != nil {
			return err
		}
		n.lastNow = max(n.lastNow, h.now)
		n.clock.Raise(h.now)
		if skipOwn {
			n.mu.Lock()
			own := n.token != 0 && h.token == n.token
			if own {
				n.committed = max(n.committed, h.first+int64(h.count)-1)
				n.cond.Broadcast()
			}
			n.mu.Unlock()
			if own {
				return nil
			}
		}
		return h.eachUnit(func(records []byte) error {
			return persistence.DecodeEffects(records, func(e *persistence.Effect) error { return n.sm.ApplyEffect(*e) })
		})
	}
	return fmt.Errorf("cluster: entry of unknown kind %d", data[0])
}

// snapshotMagic starts a Raft snapshot; the persistence dump follows the
// header.
const snapshotMagic = "TSRAFT01"

// snapshotHeader is the part of a snapshot that is not the keyspace.
type snapshotHeader struct {
	Nodes   map[string]string `json:"nodes"`
	Now     int64             `json:"now"`
	Scripts [][]byte          `json:"scripts,omitempty"` // shared with SCRIPT LOAD
}

// Snapshot captures committed state. A leader whose memory runs ahead of
// the log (units appended, not yet applied) cannot: it refuses, and asks
// the snapshotter to make a quiet instant (leader.go).
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	n := (*Node)(f)
	n.fsmMu.Lock()
	defer n.fsmMu.Unlock()
	n.metaMu.RLock()
	h := snapshotHeader{Nodes: maps.Clone(n.nodes), Now: n.lastNow}
	for body := range n.scripts {
		h.Scripts = append(h.Scripts, []byte(body))
	}
	n.metaMu.RUnlock()
	dump := n.sm.Dump(func() bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		return !n.dirty && (n.token == 0 || n.committed == n.seq)
	})
	if dump == nil {
		n.snapWanted.Store(true)
		return nil, errors.New("cluster: memory holds uncommitted units; snapshot postponed")
	}
	n.endPause()
	return &fsmSnapshot{header: h, dump: dump}, nil
}

type fsmSnapshot struct {
	header snapshotHeader
	dump   persistence.DumpFunc
}

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	err := writeSnapshot(sink, s.header, s.dump)
	s.dump = nil
	if err != nil {
		sink.Cancel()
		return fmt.Errorf("cluster: write snapshot: %w", err)
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() {
	if s.dump != nil { // never persisted: release the frozen keyspace
		s.dump(func(int, []byte, shards.Entry) error { return errors.New("released") })
	}
}

func writeSnapshot(w io.Writer, h snapshotHeader, dump persistence.DumpFunc) error {
	meta, err := json.Marshal(h)
	if err != nil {
		return err
	}
	b := append([]byte(snapshotMagic), binary.AppendUvarint(nil, uint64(len(meta)))...)
	if _, err := w.Write(append(b, meta...)); err != nil {
		return err
	}
	_, _, err = persistence.WriteDump(w, dump)
	return err
}

// Restore replaces the state with a snapshot (a new or lagging follower's
// catch-up, or start-up).
func (f *fsm) Restore(rc io.ReadCloser) error {
	n := (*Node)(f)
	defer rc.Close()
	n.fsmMu.Lock()
	defer n.fsmMu.Unlock()
	n.mu.Lock()
	n.dirty = false // the reset below drops whatever never committed
	n.mu.Unlock()
	if err := n.restoreLocked(rc); err != nil {
		return err
	}
	// Raft stores a snapshot before restoring it: the newest one is this
	// one, and the state now stands at its index.
	if metas, err := n.snaps.List(); err == nil && len(metas) > 0 {
		n.applied = max(n.applied, metas[0].Index)
	}
	return nil
}

// restoreLocked resets memory to the snapshot read from r. Holds fsmMu.
func (n *Node) restoreLocked(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	magic := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != snapshotMagic {
		return fmt.Errorf("cluster: not a Turnstile Raft snapshot (magic %q, %v)", magic, err)
	}
	size, err := binary.ReadUvarint(br)
	if err != nil || size > 64<<20 {
		return fmt.Errorf("cluster: snapshot header length %d: %v", size, err)
	}
	meta := make([]byte, size)
	if _, err := io.ReadFull(br, meta); err != nil {
		return fmt.Errorf("cluster: snapshot header: %w", err)
	}
	var h snapshotHeader
	if err := json.Unmarshal(meta, &h); err != nil {
		return fmt.Errorf("cluster: snapshot header: %w", err)
	}
	n.sm.ResetKeyspace()
	info, err := persistence.ReadDump(br, "raft snapshot", func(db int, key []byte, e shards.Entry) error {
		return n.sm.ApplyEffect(persistence.Effect{Op: persistence.OpSet, DB: db, Key: key, Entry: e})
	})
	if err != nil {
		return fmt.Errorf("cluster: snapshot keyspace after %d keys: %w", info.Records, err)
	}
	if h.Nodes == nil {
		h.Nodes = map[string]string{}
	}
	n.metaMu.Lock()
	n.nodes = h.Nodes
	n.scripts = map[string]struct{}{}
	for _, body := range h.Scripts {
		n.scripts[string(body)] = struct{}{}
	}
	n.metaMu.Unlock()
	for _, body := range h.Scripts {
		if err := n.sm.LoadScript(body); err != nil {
			n.log.Warn("a shared script from the snapshot does not load", "err", err)
		}
	}
	n.lastNow = h.Now
	n.clock.Raise(h.Now)
	n.log.Info("state restored from a snapshot", "keys", info.Records)
	return nil
}

// rebuilder rebuilds memory from committed state whenever it is dirty.
func (n *Node) rebuilder() {
	for {
		select {
		case <-n.stop:
			return
		case <-n.rebuild:
		}
		if err := n.rebuildNow(); err != nil {
			// Memory is neither the old nor the committed state: stay dirty
			// (no epoch opens) and try again shortly.
			n.log.Error("rebuild from committed state failed; retrying", "err", err)
			n.mu.Lock()
			n.dirty = true
			n.mu.Unlock()
			select {
			case <-n.stop:
				return
			case <-time.After(time.Second):
			}
			n.wakeRebuild()
		}
	}
}

// rebuildNow resets memory to the latest snapshot plus every entry applied
// after it, read back from the log: the committed state, without what this
// node ran ahead with. Entries go on applying (fsmMu) only once it is done.
func (n *Node) rebuildNow() error {
	n.fsmMu.Lock()
	defer n.fsmMu.Unlock()
	n.mu.Lock()
	if !n.dirty {
		n.mu.Unlock()
		return nil
	}
	n.dirty = false // an execution straggling in after this sets it again
	n.mu.Unlock()
	var from uint64
	n.sm.ResetKeyspace()
	n.metaMu.Lock()
	n.nodes = map[string]string{}
	n.scripts = map[string]struct{}{}
	n.metaMu.Unlock()
	if metas, err := n.snaps.List(); err != nil {
		return fmt.Errorf("list snapshots: %w", err)
	} else if len(metas) > 0 {
		meta, rc, err := n.snaps.Open(metas[0].ID)
		if err != nil {
			return fmt.Errorf("open snapshot %s: %w", metas[0].ID, err)
		}
		err = n.restoreLocked(rc)
		rc.Close()
		if err != nil {
			return err
		}
		from = meta.Index
	}
	for i := from + 1; i <= n.applied; i++ {
		var l raft.Log
		if err := n.logs.GetLog(i, &l); err != nil {
			return fmt.Errorf("read entry %d of %d: %w", i, n.applied, err)
		}
		if l.Type == raft.LogCommand {
			if err := n.applyLocked(l.Data, false); err != nil {
				return fmt.Errorf("apply entry %d: %w", i, err)
			}
		}
	}
	n.log.Warn("memory rebuilt from committed state after leadership ended with uncommitted writes",
		"snapshot_index", from, "applied_index", n.applied)
	return nil
}
