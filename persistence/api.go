package persistence

// This file is the contract between the server and this package: the types
// and entry points the server calls. Implementations live in the other files.

import (
	"io"
	"os"
	"time"

	"github.com/turnstile/turnstile/coll"
	"github.com/turnstile/turnstile/shards"
)

// Op is the kind of an effect. Its values are this package's API, not the
// bytes in files: the log writes the op codes of codes.go, through an
// explicit mapping, so Op may be reordered or extended freely.
type Op uint8

const (
	OpSet      Op = 1 // store Entry under Key in DB (replacing any value)
	OpDel      Op = 2 // remove Key from DB
	OpFlushDB  Op = 3 // remove every key of DB
	OpFlushAll Op = 4 // remove every key of every database
	OpExpire   Op = 5 // set the expiry of Key in DB to Entry.Exp (0: none), keeping its value
	OpField    Op = 6 // apply Field with Args to the collection at Key in DB (package coll)
	// OpRange writes the bytes Entry.Str at byte offset Off of the string
	// value at Key in DB, whose length becomes Len: the value is first cut
	// or zero-padded to Len, then the bytes are written (Off+len(Str) ≤
	// Len), and its expiry is kept. APPEND and SETRANGE log it instead of
	// the whole value. Applying it twice gives the same value.
	OpRange Op = 7
)

// MetaDB is the database index reserved for the server's own state that
// lives beside the keyspace and must be as durable as it: the rate-limit
// rules changed at run time, for instance. Its records are OpSet effects
// (a name in Key, the state as a string in Entry) in logs and dumps alike,
// so they are framed, checked, rewritten and replicated like any other;
// the server routes them to that state instead of a database. No real
// database has this index (the server allows far fewer databases).
const MetaDB = maxDB

// Effect is one logged change to the keyspace, with absolute times only.
type Effect struct {
	Op    Op
	DB    int
	Key   []byte
	Entry shards.Entry // OpSet: the value (any kind); OpExpire: Exp only; OpRange: Str only. Exp is absolute Unix ns (0 = none)
	Field coll.Op      // OpField: the change
	Args  [][]byte     // OpField: its arguments
	Off   int64        // OpRange: where Entry.Str goes in the value
	Len   int64        // OpRange: the value's length after the change
}

// EmitFunc receives one live key of a dump (snapshot or log rewrite). key
// and e.Str are valid only during the call: an EmitFunc that keeps them
// copies them (this package's own EmitFuncs encode them at once, so a
// DumpFunc may reuse its buffers after emit returns).
type EmitFunc func(db int, key []byte, e shards.Entry) error

// DumpFunc produces a dump by calling emit for every live key.
type DumpFunc func(emit EmitFunc) error

// FreezeFunc fixes the instant a log rewrite's dump reflects (Rewrite): it
// calls at exactly once, at that instant, while no Append can run (it holds
// every lock under which Append is called, e.g. every shard lock), and
// returns the DumpFunc that emits the keyspace as it was then, whatever
// changes after. The effects appended before at are exactly those the
// dump reflects. Rewrite calls the returned DumpFunc exactly once (with an
// emit that fails at once if the rewrite fails before writing the base),
// so the dump may release what the freeze took when it returns. A nil
// DumpFunc is an empty keyspace.
type FreezeFunc func(at func()) DumpFunc

// FsyncPolicy is appendfsync.
type FsyncPolicy uint8

const (
	FsyncAlways   FsyncPolicy = iota // fsync before a reply is sent (group commit)
	FsyncEverySec                    // write before the reply, fsync once a second
	FsyncNo                          // write before the reply, the OS decides when to flush
)

// File is the part of *os.File the package uses.
type File interface {
	io.Reader
	io.Writer
	io.Closer
	Sync() error
	Truncate(size int64) error
	Seek(offset int64, whence int) (int64, error)
}

// FS is the file system the package uses, so tests can substitute one that
// simulates power loss (losing every byte and rename not yet synced).
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	Rename(oldpath, newpath string) error
	Remove(name string) error
	MkdirAll(path string, perm os.FileMode) error
	Stat(name string) (os.FileInfo, error)
	SyncDir(dir string) error // fsync a directory, making renames and creations durable
}

// LogConfig configures the append-only log.
type LogConfig struct {
	Dir   string      // data directory (--dir)
	Name  string      // base name of the log files (--appendfilename), e.g. "appendonly.aof"
	Fsync FsyncPolicy // --appendfsync
	FS    FS          // nil: the real file system
	// Latency, if set, is told how long each write of pending records
	// ("aof-write") and each fsync made before replies under appendfsync
	// always ("aof-fsync-always") took: the server's latency monitor. It
	// is called with the log's write lock held and must not block.
	Latency func(event string, d time.Duration)

	// Tests only: replaces the one-second ticker of FsyncEverySec, and is
	// sent a value when the fsync of each tick is done.
	tick     <-chan time.Time
	tickDone chan<- struct{}
}

// LoadInfo describes what a load read.
type LoadInfo struct {
	Records    int64  // records read (keys of a snapshot, effects of a log)
	Bytes      int64  // bytes read
	TornTail   bool   // a torn last record or group was cut off
	TornFile   string // where, when TornTail
	TornOffset int64
	Files      int // files read; 0 from Log.Load means no log existed (a fresh start)
}

// LogStats is what INFO persistence reports about the log.
type LogStats struct {
	BaseSize        int64 // bytes in the base file
	IncrSize        int64 // bytes in the incremental file(s)
	RewriteBase     int64 // BaseSize+IncrSize after the last load or rewrite (INFO's aof_base_size)
	LastWriteErr    error // nil when the last write succeeded (aof_last_write_status)
	LastFsyncErr    error
	PendingBytes    int64 // appended but not yet written
	RewriteInFlight bool

	Effects int64 // effects appended since OpenLog
	Writes  int64 // write(2) calls on the incremental file
	Fsyncs  int64 // fsyncs of the incremental file; Effects/Fsyncs is the group commit factor
}
