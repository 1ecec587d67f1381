// Package shards is Turnstile's keyspace: one database of keys, split into a
// power-of-two number of shards, each guarded by its own mutex.
//
// # Sharding
//
// xxhash64 of the key bytes picks the shard (its low bits); its top 24 bits
// place the key inside the shard's table. The full key is kept and compared,
// so two keys can never be merged by a hash collision. The lock is a
// sync.Mutex rather than an RWMutex because almost every rate-limit command
// is a read-modify-write.
//
// # Memory
//
// A shard's table (table.go) is built for a small cost per key: 16-byte
// pointer-free slots in an open-addressing array that grows by half at 85%
// load and shrinks when mostly empty, and an append-only arena holding key
// bytes, string values and stored expiries. A GCRA key (an integer whose
// expiry equals its value) needs its slot plus its key bytes and nothing
// else: about 50 bytes at 10^6 keys. The garbage collector never scans the
// slots or the arena. A slot array of 1 MiB or more is mapped outside the Go
// heap on huge pages (slotmem.go) and unmapped by the table as soon as it is
// replaced, so it is never shared: frozen snapshot copies are heap clones.
//
// # Capacity
//
// A shard holds at most MaxKeysPerShard keys (about 14.2 million: 2^24
// slots, the most a 24-bit tag can address, at 85% load), or fewer if the
// Map was made by NewWithLimit, which lets tests fill a shard with a few
// keys. Expired keys count until they are removed. Room tells how many more
// keys a shard can take. Adding a key to a full shard is the caller's
// error: a command that may add keys checks Room for their shards (under
// the locks it holds) before it changes anything, and fails with ErrFull
// (an out-of-memory reply) if there is not enough; Set and Put panic on a
// new key for a full shard. Code that cannot check ahead, such as loading
// a snapshot or replaying a log, uses PutChecked, which returns ErrFull
// instead. Replacing or deleting a key always works, full or not.
//
// # Prefetching
//
// PrefetchSlot and PrefetchRecord (prefetch.go) let a connection that has
// pipelined requests waiting start the cache misses of the next keys early.
// They lock the key's shard briefly, like a lookup, and change nothing.
//
// # Locking rules
//
//   - The caller locks shards; Map methods that touch entries (Get, Put,
//     PutChecked, Delete, Watch, ...) require the shard of their key to be
//     locked by the caller already, and Room(i), Mark(i) and SetMark(i, ...)
//     require shard i locked.
//     Methods that do their own locking say so and must be called with no
//     shard of this Map held (Len is lock-free).
//   - A command that may add keys checks Room for each shard it adds to
//     while it holds that shard's lock, before its first change, so that a
//     full shard fails the whole command rather than half of it (see
//     Capacity).
//   - A caller that needs several shards (a multi-key command, or an EXEC)
//     locks them in ascending order of (database, shard index) and releases
//     them after the whole command. This fixed order makes deadlock
//     impossible.
//   - Iteration over the whole Map (KEYS, SCAN, FLUSHDB, active expiry)
//     locks one shard at a time, never all of them, unless the caller already
//     holds them all (EXEC of a keyspace-wide command), in which case it uses
//     the Locked variants.
//
// # Durability marks
//
// Each shard keeps a mark, an int64 guarded by its mutex that this package
// never interprets: the position in the log (an append-only log offset,
// later a Raft index) of the last effect written to the shard. The server
// keeps two rules with it:
//
//   - When a command's effects are appended to the log, at position pos,
//     the server stamps every shard the command locked with SetMark(i, pos)
//     before it releases the locks. The mark only moves forward.
//   - A command that read a shard does not reply before the log is durable
//     up to that shard's Mark (read under the lock): the state it saw may
//     come from a write whose effects are not durable yet, and no reply may
//     show state that a crash could take back.
//
// Mark and SetMark require the shard locked, like every access to it.
//
// # Expiry
//
// Expiry times are absolute Unix nanoseconds (0 means no expiry). A key whose
// expiry is at or before "now" is dead: Get deletes it on access (lazy
// expiry), and ExpireCycle samples keys and removes dead ones in the
// background (active expiry), like Redis's activeExpireCycle; each shard's
// samples sweep on from where the previous one stopped (expire.go).
// SetExpireHook lets the owner hear of every key removed by expiry (the
// server invalidates client-side caches with it).
// ExpireShards lets the caller stop between sampling rounds, to bound its
// time. Time is always passed in; the package never reads a clock.
//
// # Snapshots
//
// BeginSnapshotLocked marks every shard at one instant; a shard is then
// frozen (slots copied, arena shared) by the first write that reaches it or
// by SnapshotShard, whichever comes first, so a dump is point-in-time
// without stopping writers (snapshot.go). A frozen copy also shares the
// collection values (Objects) of its entries: a value is changed in place
// only through Mutable, which clones it first unless the live table alone
// owns it (one bit per object, cleared for every object when a shard is
// frozen), so a snapshot never sees a later change (copy on write).
//
// # WATCH
//
// A shard keeps the watchers of its keys (nil until the first WATCH). Every
// change made through Put or Delete, including expiry, marks the watchers of
// that key dirty, under the same lock that makes the change.
package shards
