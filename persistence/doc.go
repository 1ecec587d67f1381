// Package persistence makes the keyspace durable: an append-only log of
// effects and point-in-time snapshots, in the files described in FORMAT.md.
//
// # What is logged
//
// Writes are logged as their effects, never as commands: "set key to this
// value with this absolute expiry (Unix ns)", "delete key", "flush database",
// "write these bytes at this offset of the string at key, now this long"
// (APPEND and SETRANGE, so that a small change to a big value logs the
// change, not the value).
// Replaying effects reads no clock and draws no random number, so the same
// files always load into the same keyspace; keys whose expiry has passed by
// load time are dropped. Expiry itself is not logged: it is implied by the
// absolute times.
//
// The effects of one command, transaction or script are one unit
// (AppendAll): several effects are preceded by a GROUP record, and a load
// applies a group only once all of its records are read and checked, so a
// crash never leaves part of a unit (group.go). One effect has no GROUP
// record and costs nothing more.
//
// # Files
//
// A data directory holds a snapshot (--dbfilename) and an append-only log
// made of a base file (a snapshot, written by a rewrite) and an incremental
// file of effects, tied together by a manifest, as Redis 7's multi-part AOF.
// Every record carries a CRC-32C. A torn last unit (a crash in the middle
// of a write: a record, or a group cut anywhere) is cut off with a warning;
// damage anywhere else refuses to load with an error naming the file and
// offset.
//
// # Rewrites: each effect once
//
// A rewrite replaces the log by a new base (a dump of the keyspace) and a
// new incremental file, while appends continue. Every effect must be in
// exactly one of them: effects are not all idempotent (a list push or
// HINCRBY replayed twice is one too many). So the dump is a point-in-time
// dump (FreezeFunc), and the log switches to the new incremental file at
// that very instant: the log position when the freeze holds every lock
// Append is called under is the cut, records before it go to the old
// files (and are in the base), records from it on go to the new file (and
// are not). Syncs wait from just before the freeze until the switch;
// Appends never wait (rewrite.go, FORMAT.md "Rewrite protocol").
//
// # Durability
//
// Append buffers an effect in memory (the caller holds the key's shard lock,
// so per-key order in the log is the order of the shard lock). Before a
// connection replies, it calls Sync with the highest offset its commands
// produced: the first caller in writes everything pending for everyone (one
// write, and under appendfsync always one fsync: group commit), later callers
// find their data already written. everysec fsyncs in the background once a
// second; no leaves flushing to the OS.
//
// # Using the log
//
//	l, err := OpenLog(LogConfig{Dir: dir, Name: "appendonly.aof", Fsync: policy})
//	info, err := l.Load(apply)   // replay; a *CorruptError refuses start-up
//	if info.Files == 0 && loadedFromSnapshot {
//		err = l.Rewrite(freeze)  // start the log from the loaded keyspace
//	}
//	off := l.Append(effect)      // under the key's shard lock
//	err = l.Sync(off)            // after unlocking, before replying
//	if l.RewriteDue(100, 64<<20) { go l.Rewrite(freeze) }
//	err = l.Close()
//
// Check, Fix and FixForce inspect and repair files for `check-aof`;
// WriteSnapshot and LoadSnapshot handle --dbfilename.
package persistence
