package server

import "github.com/turnstile/turnstile/persistence"

// Replication is what a replicated node (package cluster, on Raft) gives
// the server: a Durability whose positions are committed Raft entries, the
// node's role, and the admin commands. The server takes it in
// Config.Replication; without one the server runs alone.
//
// The contract, on top of Durability's:
//
//   - Only the node Route names as local (the leader, once it has applied
//     every entry of earlier terms) runs commands that touch the keyspace;
//     any other node forwards them to the leader's RESP address
//     (forward.go) and relays the reply.
//   - The leader applies a unit's effects to memory before they commit
//     (it is the one writer) and Appends them under the unit's shard
//     locks. Wait(pos) returns nil only once pos is committed and this
//     node's leadership has been confirmed at some instant after the call
//     (the commit of an entry appended after the call confirms it; when
//     pos is already committed, a heartbeat round does), so a deposed
//     leader never answers from memory a new leader has moved past. The
//     server calls Wait before every reply that read or wrote the
//     keyspace, even one whose position was committed before. Otherwise it returns an
//     error whose text is the Redis error reply to send instead
//     ("TRYAGAIN …", "CLUSTERDOWN …"): the replies it held back are
//     replaced by that error, never sent.
//   - An Append that the node can no longer commit (it lost leadership
//     between Route and Append) still returns a position; Wait on it
//     fails, and the node rebuilds its memory from committed state before
//     it serves again.
type Replication interface {
	Durability
	// Route reports whether this node runs keyspace commands itself now
	// (self), and otherwise the RESP address of the leader to forward them
	// to ("" when no leader is known: the command fails with CLUSTERDOWN).
	Route() (leader string, self bool)
	// StaleReads reports whether read-only commands run on this node
	// although it is not the leader (an opt-in: the replies may be stale,
	// and Wait does not confirm anything for them).
	StaleReads() bool
	// ShareScript makes a script loaded on the leader (SCRIPT LOAD) known
	// to every node, so that EVALSHA goes on working after a failover. It
	// must not keep body, and must not block.
	ShareScript(body []byte)
	// Info returns the fields of INFO replication, in order.
	Info() [][2]string
	// Admin runs one RAFT.* command (args[0] is its name) and returns its
	// reply.
	Admin(args [][]byte) AdminReply
}

// AdminReply is the reply of a RAFT.* command: an error when Err is set,
// else a bulk string when Bulk is set, else the status Status.
type AdminReply struct {
	Err    string
	Status string
	Bulk   bool
}

// LoadScript adds a script to the cache as SCRIPT LOAD does: a cluster
// node applying a script the leader shared (Replication.ShareScript).
func (s *Server) LoadScript(body []byte) error {
	s.scripts.mu.Lock()
	defer s.scripts.mu.Unlock()
	_, err := s.scripts.engine.Load(body)
	return err
}

// role is the replication role HELLO reports: "replica" on a cluster node
// that is not the leader, else "master".
func (s *Server) role() string {
	if s.repl != nil && !s.leading.Load() {
		return "replica"
	}
	return "master"
}

// ResetKeyspace removes every key of every database, and the rate-limit
// rules the dataset held (the node's policy file is in force again),
// without logging anything: a replicated node drops its memory before it rebuilds it from
// committed state (a Raft snapshot and log). Safe for concurrent use.
func (s *Server) ResetKeyspace() {
	for _, db := range s.dbs {
		db.Flush()
	}
	s.rl.reset()
}

// Dump returns a point-in-time dump of the keyspace, as it is at the
// instant Dump calls at (while it holds every shard lock, so no execution
// is between changing memory and appending its effects), whatever changes
// after: a Raft snapshot of the state machine. If at returns false the
// dump is abandoned and Dump returns nil. Otherwise the returned DumpFunc
// must be called exactly once; until it returns, other dumps (SAVE) wait.
func (s *Server) Dump(at func() bool) persistence.DumpFunc {
	p := &s.persist
	p.dumpMu.Lock()
	ok := true
	dump := s.freezeAt(func() { ok = at() }, 0) // expired keys too: followers keep them (SetLeading)
	if !ok {
		for _, db := range s.dbs {
			db.EndSnapshot()
		}
		p.dumpMu.Unlock()
		return nil
	}
	return func(emit persistence.EmitFunc) error {
		defer p.dumpMu.Unlock()
		return dump(emit)
	}
}

// SetLeading tells the server whether this cluster node is the leader.
// The leader alone decides that a key has expired, by its clock: it
// removes expired keys (lazily and actively) and replicates each removal
// as a delete. Any other node hides expired keys from reads but keeps
// them until the leader's delete arrives, so a node whose clock runs ahead
// never drops a key the leader goes on changing.
func (s *Server) SetLeading(on bool) {
	s.leading.Store(on && s.repl != nil)
	for _, db := range s.dbs {
		db.SetKeepExpired(!on)
	}
}

// Quiesce runs f while holding every shard lock: no execution is between
// changing memory and appending its effects while f runs.
func (s *Server) Quiesce(f func()) {
	all := lockSet{all: true}
	all.lock(s)
	defer all.unlock(s)
	f()
}
