// Package coll holds Turnstile's collection values: hashes, lists, sets,
// sorted sets and streams, the Objects that shards.Entry.Obj carries for
// the collection kinds.
//
// # Compact by construction
//
// A small collection is one packed byte slice (Redis's listpack idea):
// entries back to back, length-prefixed, scanned linearly. It becomes a
// pointer-rich structure (indexed table, skiplist, chain of packed nodes)
// only past the thresholds of Redis's default encodings (hashes 512
// fields, sets and sorted sets 128 members, intsets 512 integers, values
// of at most 64 bytes; lists 8 KiB per node), and OBJECT ENCODING reports
// the same names ("listpack", "hashtable", "quicklist", "intset",
// "skiplist", "stream").
//
// # Changes are ops
//
// Every change to a collection is an Op with byte-string arguments, applied
// by Apply. The server changes collections only through Apply, and logs
// the same (op, args) as the change's effect; replaying the log (or a Raft
// follower applying it) calls the same Apply on the same prior value, so
// memory and the log can never disagree. Ops are deterministic functions
// of the value and their arguments: no clock, no randomness (a command
// that chooses at random, like SPOP, logs the removal of what it chose;
// one that computes, like HINCRBYFLOAT or ZINCRBY, logs the result).
//
// # Concurrency
//
// Values are not safe for concurrent use: the shard lock of their key
// guards them. A value that a snapshot may share is cloned before it is
// changed (shards.Map.Mutable), so a read-only view, once handed out,
// never changes under a reader that holds the lock.
package coll
