// Package cluster replicates a Turnstile server through Raft
// (github.com/hashicorp/raft): a Node is the server's Replication
// (server/replication.go), so the server's execution contract is unchanged
// and handlers never see Raft.
//
// # What is replicated: effects, decided once by the leader
//
// The leader executes every unit (a command, an EXEC, a script) on its own
// memory, with its own clock, and appends the unit's effects (absolute
// times, no decisions: persistence.Effect) to the Node. The Node batches
// the units of concurrent clients into one Raft entry (one log append and
// one fsync for all of them), stamped with the leader's now. Every node
// applies committed entries with Server.ApplyEffect, which reads no clock
// and draws no random number, so all nodes hold the same keyspace; and
// every node raises its clock's floor to each entry's now, so a new leader's
// time continues from the last entry it applied (clock.Floor).
//
// # The leader runs ahead; a deposed leader rebuilds
//
// A leader's memory holds its units before they commit (it is the only
// writer, and replies wait in the server until Wait says the unit
// committed). While a leadership epoch is open, the state machine skips the
// leader's own entries (their effects are in memory already) and counts
// them as committed. When the epoch closes (leadership lost, an Apply
// failed), units appended but not yet committed may never commit: every
// Wait on them fails with TRYAGAIN, and the node rebuilds its memory from
// committed state (the latest snapshot plus the log up to the last applied
// index) before it serves again. An epoch opens only after a barrier (every
// entry of earlier terms applied) and while every shard lock is held
// (Server.Quiesce), so no execution straddles two epochs.
//
// # Reads
//
// Only the leader executes commands (followers forward them, server
// forward.go). Wait(pos) returns once pos is committed and leadership was
// confirmed after the call: a reply whose own entry commits later is
// confirmed by that commit; otherwise a heartbeat round (VerifyLeader, one
// round shared by all waiting connections) confirms it.
//
// # Snapshots
//
// A Raft snapshot is a short header (node addresses, the last entry's now)
// followed by a dump in the persistence format. A snapshot must show
// committed state only, so the leader takes one only at an instant when
// every unit it appended has been applied; when writes never pause, the
// leader pauses new ones for a moment (Route waits) to make such an
// instant.
//
// # Locking
//
//   - Node.mu guards the commit state (sequence numbers, the epoch, the
//     pending batch, the dead ranges); it is taken under shard locks (by
//     Append) and never held while taking one.
//   - Node.fsmMu serialises applying entries, snapshots and rebuilds.
//     Applying takes shard locks one at a time, under fsmMu.
//   - Node.metaMu guards the node address table; held only for map access.
package cluster
