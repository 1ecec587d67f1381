// Package server is Turnstile's Redis-protocol server: connections, the
// dispatcher, the command families (cmd_<family>.go, like Redis's t_*.c)
// and the execution contract below, which scripting (package script,
// scripting.go) and replication (package cluster, through the Replication
// interface of replication.go) plug into.
//
// # One request
//
//	connection loop (client.go) -> resp.Reader -> command table lookup
//	-> on a cluster node that is not the leader, a keyspace command is
//	   forwarded (forward.go) and its reply relayed, in request order
//	-> checks (arity, subcommand, auth, loading, busy script, memory limit
//	   with eviction (maxmemory.go), MISCONF, MULTI queue)
//	-> execution: now, shard locks -> handler (Ctx) -> effects
//	-> end: append effects to Durability, stamp shard marks, fold read
//	   marks, unlock -> Durability.Wait (on a cluster node
//	   Replication.Wait, which also confirms leadership: replwait.go)
//	-> resp.Writer -> socket
//
// A cluster node's forwarded requests of one pipelined batch go to the
// leader in one write; their replies are read back before any local
// command of the batch answers and before the batch's replies are
// written, so replies keep request order. Which commands are forwarded is
// read from the command table (runsOnLeader); the rest (connection state,
// INFO, CONFIG, pub/sub, RAFT.*) run on the node they reach.
//
// # The execution contract
//
// An execution (exec.go) is one atomic unit: a command outside MULTI, the
// queued commands of one EXEC, or one script (EVAL and its kin; inside an
// EXEC the script is part of the EXEC's unit). These rules hold for
// every kind, and the code is arranged so that each is enforced in one
// place:
//
//  1. One now. The unit reads the server clock once, when it begins; every
//     command of the unit (each command of an EXEC, each redis.call of a
//     script) sees that same now, and so do TIME and expiry decisions.
//     Applying an effect (log replay, a Raft state machine) reads no clock.
//
//  2. Locks belong to the execution. Before the first handler runs, the
//     unit locks the shards of every key it may touch (from the command
//     table's key positions, or a row's Locks function, for EXEC the union
//     over its queue plus the watched keys; a write to the whole keyspace
//     takes every shard) in the one global order, (database, shard index),
//     and holds them until end. No unit waits for a shard while holding
//     another (lockSet.lock waits for one, then only tries the rest), except
//     a script: holding the server's one script lock, it may wait for the
//     shard of a key it did not declare (lock escalation, scripting.go),
//     which cannot deadlock since nobody it waits for waits in turn.
//     Handlers do not lock shards; the only
//     exceptions are keyless commands whose execution holds none: EXEC
//     (which runs its queue as an execution of its own), DISCARD, UNWATCH
//     and RESET (which release watches one shard at a time), and SAVE and
//     SHUTDOWN (whose dump marks every shard at one instant).
//
//  3. Handlers reach the keyspace only through Ctx (ctx.go): get, lookup,
//     put, set, del, flushDB, watch and the keyspace-wide reads. They never
//     see a *shards.Map (TestHandlersReachKeyspaceOnlyThroughCtx checks the
//     source). Every write method records its effect on the execution. In
//     builds with -tags lockcheck (run by CI with the race detector) every
//     access panics unless the execution holds the key's shard: that is the
//     rule a script's undeclared keys and the cluster's key routing rely on.
//
//  4. Effects carry absolute times and no decisions: "key := this value,
//     expiring at Unix ns T", "delete key", "flush database", "key's
//     expiry := T", and for collections "apply this coll.Op with these
//     arguments" (coll.go). A collection op is deterministic given the
//     value it applies to (no clock, no randomness: SPOP logs the members
//     it removed, ZINCRBY the resulting score), and handlers change
//     collections only by applying the op they log, through the same
//     function replay uses (applyOp), so replay rebuilds memory exactly.
//
//  5. end (exec.go) is the only place where a unit's effects leave it (an
//     eviction, which is no unit's, appends its delete itself under the
//     victim's shard lock: evict.go), and
//     it does so in this order, while every lock is still held: Append to
//     the Durability (so for each key the log order is the lock order, and
//     an EXEC's effects are appended together), stamp the returned position
//     on every held shard (shards.Map.SetMark), make the connection's reply
//     wait for the mark of every held shard (what it wrote and what it read,
//     whoever wrote it), and only then unlock. A keyspace-wide read (KEYS,
//     SCAN, DBSIZE, RANDOMKEY), which visits shards one at a time, waits for
//     the Durability's tail instead. The connection calls Durability.Wait
//     with the highest position before it writes any reply, so no reply
//     shows state that could still be lost (appendfsync always: fsynced;
//     under Raft: committed).
//
//  6. A handler that panics is recovered by run: its partial reply becomes
//     ERR internal error, and what it changed before the panic is still
//     committed by end, so the log never disagrees with memory.
//
// # Blocking commands
//
// BLPOP and its kin (blocking.go) keep the contract: a command that finds
// its keys empty registers its client as a waiter inside its execution
// and answers nothing; the connection then waits in its ordinary read loop
// (no goroutine of its own), and each wake-up (a change to a key it waits
// on, noted by Ctx.record and signalled by end) runs the command again as
// a new execution, with its own now, locks and effects. Inside EXEC and
// scripts they never block.
//
// # Durability
//
// Durability (durability.go) is the seam between the server and whatever
// makes writes durable. Config.Durability takes one; without it the server
// uses the append-only log (aofDurability) when appendonly is on, or none.
// CONFIG SET appendonly (aof.go) switches between the two while every
// shard lock is held, so an execution sees one Durability from its first
// effect to its Append; positions keep growing across logs.
// A cluster node's Replication (replication.go, package cluster) is the
// other implementation, with no change to handlers: positions are opaque
// increasing numbers (a log offset, a unit's sequence number in a Raft
// batch). On a cluster node only the leader expires keys and it
// replicates each removal as a delete (SetLeading); the others hide
// expired keys but keep them.
//
// # Expiry and replay
//
// Expiry is not logged: an entry carries its absolute expiry, a read hides
// (and lazily deletes) a key whose expiry has passed, and after a load
// dropExpired removes every key that expired while the server was down.
// ApplyEffect reads no clock: it stores entries exactly as logged and
// applies collection ops to the value it holds, expired or not.
//
// Collection ops would go wrong there on their own: a key may expire (and
// be recreated) without a logged delete, and replay still holds the old
// value until dropExpired. So creating a collection key always logs a
// delete of the key first (coll.go): replay then starts the new value
// from nothing too. A field change to a live key keeps its expiry, in
// memory and in replay alike.
//
// # Locking rules
//
//   - The script lock (scripting.mu): one script at a time. Taken before
//     any shard lock, by EVAL outside MULTI and by an EXEC whose queue holds
//     a script, and released after the unit's end (the effects may point
//     into the engine's argument arena, which the next script reuses);
//     SCRIPT LOAD, EXISTS and FLUSH take it alone.
//   - Shard locks: only executions (exec.go), connection teardown
//     (unwatchAll, one shard at a time, holding none), eviction before a
//     command (evict.go: one shard at a time, holding none) and background
//     work (active expiry, dumps, ApplyEffect: one shard at a time) take
//     them.
//   - The memory settings' mutex (memLimit.mu, maxmemory.go) is taken by
//     CONFIG GET/SET of those settings, possibly inside an EXEC that holds
//     shards; nothing waits for a shard while holding it.
//   - Durability.Wait (and so the log's Sync) is never called while a
//     shard lock is held: a log rewrite holds up the log's writer while it
//     freezes the keyspace under every shard lock (freeze, persist.go), so
//     that it switches to its new incremental file at the dump's instant
//     and each effect is in exactly one of the new base and the new file.
//   - The blocked-client registry's mutex (blockRegistry.mu, blocking.go)
//     is taken while holding shard locks (a blocking command registering,
//     end waking waiters), never the other way round; it is held only for
//     map updates and wake-ups, which do not block.
//   - Server.mu guards the listener and the client registry; it is never
//     held while a shard lock is taken.
//   - Forwarding (forward.go) waits for the leader holding nothing: no
//     shard lock (it runs outside executions) and not the script lock
//     (released first). A client's upstream belongs to its connection
//     goroutine; kill reaches it only through client.fwdConn.
//   - A client's own fields belong to its connection goroutine; the fields
//     CLIENT LIST reads from other connections are atomics or under
//     client.mu (client.go).
package server
