package server

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/persistence"
	"github.com/turnstile/turnstile/shards"
)

// persistState is the server's durability machinery: the append-only log,
// snapshots, and what INFO persistence reports. Fields are atomics or
// guarded by dumpMu.
type persistState struct {
	// log is the append-only log: nil while appendonly is off. It changes
	// only at start-up and when CONFIG SET appendonly switches the log on
	// or off (aof.go); read it once per use with Server.aofLog.
	log atomic.Pointer[persistence.Log]
	// aofOn is appendonly as configured (CONFIG GET, INFO aof_enabled):
	// set at once by CONFIG SET, while the log follows in the background.
	aofOn atomic.Bool
	aofMu sync.Mutex // one appendonly switch at a time (aof.go)
	// durEnd is the last position a closed log handed out: the next log's
	// positions start after it (aofDurability.base).
	durEnd atomic.Int64

	loading atomic.Bool

	dumpMu         sync.Mutex // one snapshot or log rewrite at a time
	bgsaveRunning  atomic.Bool
	rewriteRunning atomic.Bool

	lastSave     atomic.Int64 // Unix seconds of the last successful snapshot
	lastSaveOK   atomic.Bool  // rdb_last_bgsave_status: false after a failed background save, until a snapshot succeeds
	lastSaveSecs atomic.Int64 // rdb_last_bgsave_time_sec: how long the last background save took (-1: none yet)
	bgsaveStart  atomic.Int64 // server time (ns) the last background save started (0: none yet)
	saves        atomic.Int64 // rdb_saves: snapshots started by SAVE, BGSAVE and the save rules
	// stopWrites is stop-writes-on-bgsave-error: while the last background
	// save failed and save rules exist, writes are refused (MISCONF).
	stopWrites atomic.Bool
	// save is the save rules in effect (CONFIG SET save replaces them).
	save atomic.Pointer[[]SaveRule]
	// fsync is appendfsync in effect (a persistence.FsyncPolicy), which
	// the log follows (CONFIG SET appendfsync).
	fsync atomic.Uint32
	// auto-aof-rewrite-percentage and -min-size in effect (CONFIG SET).
	rewritePct, rewriteMin atomic.Int64

	lastRewriteOK   atomic.Bool
	lastRewriteSecs atomic.Int64
	aofWriteErr     atomic.Pointer[string]
	noSaveOnExit    atomic.Bool

	shutdownMu sync.Mutex                // one Shutdown at a time (a signal and SHUTDOWN may race)
	hold       atomic.Pointer[replyHold] // set while a shutdown writes its final snapshot (shutdown.go)
}

const errLoading = "LOADING Turnstile is loading the dataset in memory"

// errBgsaveMisconf is Redis's reply, byte for byte (clients and operators
// match it; "Redis" stays for the same reason as in errBusy), to commands
// refused because the last background save failed.
const errBgsaveMisconf = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. " +
	"Commands that may modify the data set are disabled, because this instance is configured to report errors during writes " +
	"if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error."

// bgsaveRetryDelay is how long the save rules wait after a failed
// background save before they try again (Redis's CONFIG_BGSAVE_RETRY_DELAY).
const bgsaveRetryDelay = 5 * time.Second

// diskFailing reports whether commands that write are refused because
// persistence is failing (Redis's writeCommandsDeniedByDiskError): the last
// background save failed while save rules exist and stop-writes-on-bgsave-
// error is yes, or a write to the append-only log failed. Two atomic loads.
func (s *Server) diskFailing() bool {
	return s.persist.aofWriteErr.Load() != nil || s.bgsaveFailing()
}

// bgsaveFailing reports whether writes stop for a failed background save:
// it failed, stop-writes-on-bgsave-error is yes and save rules exist.
func (s *Server) bgsaveFailing() bool {
	p := &s.persist
	return !p.lastSaveOK.Load() && p.stopWrites.Load() && len(s.saveRules()) > 0
}

// diskError is the MISCONF reply of a command refused while diskFailing:
// the snapshot's failure first, as Redis checks it first.
func (s *Server) diskError() string {
	if s.bgsaveFailing() {
		return errBgsaveMisconf
	}
	if e := s.persist.aofWriteErr.Load(); e != nil {
		return aofMisconf(*e)
	}
	return ""
}

// aofMisconf is Redis's reply to a write while the append-only log cannot
// be written, for the write error msg.
func aofMisconf(msg string) string { return "MISCONF Errors writing to the AOF file: " + msg }

// deniedOnDiskError reports whether cmd, run by c, is refused while
// diskFailing: as in Redis, every command that writes, an EXEC whose
// transaction queued one, and PING (so that a health check notices).
func deniedOnDiskError(c *client, cmd *Command) bool {
	switch {
	case cmd.Has(command.Write):
		return true
	case cmd.Name == "ping":
		return true
	default:
		return c.execQueued(cmd, command.Write)
	}
}

func (s *Server) fs() persistence.FS {
	if s.cfg.Persist.FS != nil {
		return s.cfg.Persist.FS
	}
	return persistence.OSFS{}
}

func (s *Server) snapshotPath() string {
	return filepath.Join(s.cfg.Persist.Dir, s.cfg.Persist.DBFilename)
}

// openLog opens the append-only log, without reading it, when appendonly
// is on. It runs before loading starts, so the log is set before any
// command (INFO included) can look at it.
func (s *Server) openLog() error {
	if !s.cfg.Persist.AppendOnly {
		return nil
	}
	lg, err := persistence.OpenLog(persistence.LogConfig{
		Dir: s.cfg.Persist.Dir, Name: s.cfg.Persist.AppendFilename, Fsync: s.fsyncPolicy(), FS: s.cfg.Persist.FS,
		Latency: s.logLatency, // LATENCY's aof-* events (latency.go)
	})
	if err != nil {
		return fmt.Errorf("open append-only log: %w", err)
	}
	s.persist.log.Store(lg)
	if s.durability() == nil {
		s.setDurability(aofDurability{log: lg})
	}
	return nil
}

// loadData loads the dataset at start-up: the append-only log when
// appendonly is on (as Redis does), otherwise the snapshot, if any. Keys
// whose expiry has passed are dropped. Then it opens the log for writing.
func (s *Server) loadData() error {
	if s.repl != nil {
		return nil // the replicated state comes from the Raft snapshot and log
	}
	p := &s.persist
	now := s.clock.Now()
	start := time.Now()
	if !s.cfg.Persist.AppendOnly {
		_, err := s.loadSnapshot(now)
		return err
	}
	lg := p.log.Load()
	info, err := lg.Load(s.ApplyEffect)
	if err != nil {
		return fmt.Errorf("load append-only log: %w", err)
	}
	if info.TornTail {
		s.log.Warn("append-only log had a torn last record (crash during a write); cut it off",
			"file", info.TornFile, "offset", info.TornOffset)
	}
	if info.Files == 0 {
		// No log yet (appendonly was just turned on): start from the
		// snapshot, if any, and make it the log's first base, as Redis does.
		n, err := s.loadSnapshot(now)
		if err != nil {
			return err
		}
		if n > 0 {
			if err := lg.Rewrite(s.freeze); err != nil {
				return fmt.Errorf("create the append-only log from the snapshot: %w", err)
			}
		}
		s.log.Info("append-only log started", "dir", s.cfg.Persist.Dir, "keys_from_snapshot", n)
		return nil
	}
	dropped := s.dropExpired(now)
	s.log.Info("append-only log loaded", "dir", s.cfg.Persist.Dir, "effects", info.Records, "expired_dropped", dropped,
		"seconds", time.Since(start).Seconds())
	return nil
}

// loadSnapshot loads the snapshot file, if there is one, and returns how
// many keys it held.
func (s *Server) loadSnapshot(now int64) (int64, error) {
	start := time.Now()
	info, err := persistence.LoadSnapshot(s.fs(), s.snapshotPath(), func(db int, key []byte, e shards.Entry) error {
		return s.ApplyEffect(persistence.Effect{Op: persistence.OpSet, DB: db, Key: key, Entry: e})
	})
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("load snapshot %s: %w", s.snapshotPath(), err)
	}
	dropped := s.dropExpired(now)
	s.log.Info("snapshot loaded", "file", s.snapshotPath(), "keys", info.Records, "expired_dropped", dropped,
		"seconds", time.Since(start).Seconds())
	return info.Records - dropped, nil
}

func logSize(lg *persistence.Log) int64 {
	st := lg.Stats()
	return st.BaseSize + st.IncrSize
}

// ApplyEffect applies one logged effect to the keyspace, exactly as
// written: it reads no clock and draws no random number, so the same
// effects always give the same keyspace (log replay now, a Raft state
// machine later). A key whose absolute expiry has already passed is stored
// like any other; reads hide it, and dropExpired removes such keys after a
// load. Safe for concurrent use with commands (it takes the shard locks).
func (s *Server) ApplyEffect(e persistence.Effect) error {
	if e.DB == persistence.MetaDB {
		return s.applyMeta(e)
	}
	if e.DB < 0 || e.DB >= len(s.dbs) {
		return fmt.Errorf("effect for database %d, but only %d are configured", e.DB, len(s.dbs))
	}
	db := s.dbs[e.DB]
	switch e.Op {
	case persistence.OpSet, persistence.OpDel:
		i := db.ShardOf(e.Key)
		db.Lock(i)
		defer db.Unlock(i)
		if e.Op == persistence.OpDel {
			db.Remove(e.Key)
			return nil
		}
		if err := db.PutChecked(e.Key, e.Entry); err != nil {
			return fmt.Errorf("apply effect to database %d: %w", e.DB, err)
		}
	case persistence.OpExpire:
		i := db.ShardOf(e.Key)
		db.Lock(i)
		defer db.Unlock(i)
		if cur, _, ok := db.Find(e.Key); ok {
			cur.Exp = e.Entry.Exp
			db.Put(e.Key, cur)
		}
	case persistence.OpField:
		i := db.ShardOf(e.Key)
		db.Lock(i)
		defer db.Unlock(i)
		if _, _, err := applyOp(db, e.Key, e.Field, e.Args); err != nil {
			return fmt.Errorf("apply %s to key %q of database %d: %w", e.Field, e.Key, e.DB, err)
		}
	case persistence.OpRange:
		i := db.ShardOf(e.Key)
		db.Lock(i)
		defer db.Unlock(i)
		if err := applyRange(db, e.Key, e.Off, e.Len, e.Entry.Str); err != nil {
			return fmt.Errorf("apply a range to key %q of database %d: %w", e.Key, e.DB, err)
		}
	case persistence.OpFlushDB:
		db.Flush()
	case persistence.OpFlushAll:
		for _, d := range s.dbs {
			d.Flush()
		}
	default:
		return fmt.Errorf("unknown effect op %d", e.Op)
	}
	return nil
}

// dropExpired removes every key whose expiry is at or before now from
// every database and returns how many it removed. It runs once after a
// load, so that keys that expired while the server was down neither count
// in DBSIZE nor take memory.
func (s *Server) dropExpired(now int64) int64 {
	var n int64
	for _, db := range s.dbs {
		n += int64(db.DropExpired(now))
	}
	return n
}

// dumpThrottle keeps a dump from starving clients when the server has one
// P (GOMAXPROCS=1, e.g. pinned to one core): after every chunk of keys it
// pauses, so that waiting clients run. runtime.Gosched would not do: the
// scheduler runs a runnable goroutine (the dump) before it polls the
// network, so waiting clients would be seen only by sysmon, every 10 ms.
// While clients are busy (commands ran during the last pause) chunks are
// small and each pause lasts dumpPause times the chunk's work, so the dump
// takes at most an eighth of the CPU. (A quarter was too much: serving 50
// clients at -P 1 already keeps the core ~70 % busy, and with snapshots
// back to back the probe's p99 rose 1.4-2.5x; at an eighth, 1.2-1.7x, with
// each snapshot of 10^6 keys taking ~1.1 s instead of ~0.55 s under that
// load.) While nobody is waiting (no command
// ran during the last pause) the pause is the shortest sleep, only to let
// the network be polled, and the chunk doubles, so an idle server dumps at
// nearly full speed. With more Ps, idle ones poll the network and the dump
// runs unthrottled.
type dumpThrottle struct {
	s     *Server
	on    bool
	busy  bool // commands ran during the last pause
	n     int
	size  int // keys in the current chunk
	chunk time.Time
}

// Chunk sizes (512 keys is ~0.1 ms of work), the pause factor while clients
// are busy, and the pause while they are not.
const (
	dumpChunkMin = 512
	dumpChunkMax = 64 << 10
	dumpPause    = 7
	dumpMinPause = time.Microsecond
)

func (t *dumpThrottle) start(s *Server) {
	*t = dumpThrottle{s: s, on: runtime.GOMAXPROCS(0) == 1, busy: true, size: dumpChunkMin, chunk: time.Now()}
}

func (t *dumpThrottle) step() {
	if t.n++; !t.on || t.n < t.size {
		return
	}
	t.n = 0
	pause := dumpMinPause
	if t.busy {
		pause = max(pause, dumpPause*time.Since(t.chunk))
	}
	before := t.s.stats.totalCommands()
	time.Sleep(pause)
	t.busy = t.s.stats.totalCommands() != before
	if t.busy {
		t.size = dumpChunkMin
	} else {
		t.size = min(2*t.size, dumpChunkMax) // nobody waited: work longer
	}
	t.chunk = time.Now()
}

// dump emits every live key as of one instant (a snapshot).
func (s *Server) dump(emit persistence.EmitFunc) error {
	return s.freeze(nil)(emit)
}

// freeze is the keyspace's persistence.FreezeFunc: it locks every shard of
// every database for a moment to begin a snapshot, calls at (when at is not
// nil) at that instant, while no execution can append an effect, and
// returns the DumpFunc that emits every live key as of that instant by
// reading each shard's frozen copy without blocking writers (see
// shards.BeginSnapshotLocked). A log rewrite switches to its new
// incremental file in at, so every effect is in exactly one of the new
// base and the new file (persistence/rewrite.go). The DumpFunc must be
// called once: it ends the snapshot.
func (s *Server) freeze(at func()) persistence.DumpFunc { return s.freezeAt(at, -1) }

// freezeAt is freeze with the time that decides which keys have expired:
// -1 for the clock at the freeze, 0 to keep every key.
func (s *Server) freezeAt(at func(), now int64) persistence.DumpFunc {
	all := lockSet{all: true}
	all.lock(s)
	if now < 0 {
		now = s.clock.Now()
	}
	for _, db := range s.dbs {
		db.BeginSnapshotLocked()
	}
	rules, withRules := s.rl.dumped()
	if at != nil {
		at()
	}
	all.unlock(s)
	return func(emit persistence.EmitFunc) error {
		var th dumpThrottle
		th.start(s)
		for dbi, db := range s.dbs {
			for i := 0; i < db.NumShards(); i++ {
				err := db.SnapshotShard(i).ForEach(now, func(k []byte, e shards.Entry) error {
					th.step()
					return emit(dbi, k, e)
				})
				if err != nil {
					for _, d := range s.dbs {
						d.EndSnapshot()
					}
					return err
				}
			}
		}
		if withRules { // the server's own state, after the keys (rlpolicy.go)
			return emit(persistence.MetaDB, []byte(rlPoliciesMeta), shards.Entry{Kind: shards.KindBytes, Str: rules})
		}
		return nil
	}
}

// save writes a snapshot now: in the foreground (SAVE, shutdown) or as a
// background save (BGSAVE, save rules). As in Redis, a snapshot that
// succeeds makes the status ok, while only a background save that fails
// makes it err (which refuses writes, see diskFailing) and is timed for
// rdb_last_bgsave_time_sec; a failed SAVE is the caller's error reply.
func (s *Server) save(background bool) error {
	p := &s.persist
	p.dumpMu.Lock()
	defer p.dumpMu.Unlock()
	start := time.Now()
	dirty := s.dirty.Load()
	err := persistence.WriteSnapshot(s.fs(), s.snapshotPath(), s.dump)
	if background {
		p.lastSaveSecs.Store(int64(time.Since(start).Seconds()))
	}
	if err != nil {
		if background {
			p.lastSaveOK.Store(false)
		}
		s.log.Error("snapshot failed", "file", s.snapshotPath(), "background", background, "err", err)
		return err
	}
	s.dirty.Add(-dirty)
	p.lastSave.Store(s.clock.Now() / 1e9)
	if !p.lastSaveOK.Swap(true) {
		s.log.Info("snapshot written again after a failure; accepting writes")
	}
	s.log.Info("snapshot saved", "file", s.snapshotPath(), "seconds", time.Since(start).Seconds())
	return nil
}

// bgsave starts a snapshot in the background; false if one is running.
func (s *Server) bgsave() bool {
	p := &s.persist
	if !p.bgsaveRunning.CompareAndSwap(false, true) {
		return false
	}
	p.saves.Add(1)
	p.bgsaveStart.Store(s.clock.Now())
	s.goFunc(func() {
		defer p.bgsaveRunning.Store(false)
		s.save(true)
	})
	return true
}

// rewriteLog compacts the append-only log while writes continue.
func (s *Server) rewriteLog() error {
	p := &s.persist
	p.dumpMu.Lock()
	defer p.dumpMu.Unlock()
	lg := s.aofLog()
	if lg == nil {
		return errors.New("append-only log is off")
	}
	start := time.Now()
	err := lg.Rewrite(s.freeze)
	p.lastRewriteSecs.Store(int64(time.Since(start).Seconds()))
	p.lastRewriteOK.Store(err == nil)
	if err != nil {
		s.log.Error("append-only log rewrite failed", "err", err)
		return err
	}
	s.log.Info("append-only log rewritten", "seconds", time.Since(start).Seconds(), "bytes", logSize(lg))
	return nil
}

// bgrewrite starts a log rewrite in the background; false if one is running.
func (s *Server) bgrewrite() bool {
	if !s.persist.rewriteRunning.CompareAndSwap(false, true) {
		return false
	}
	s.goFunc(func() {
		defer s.persist.rewriteRunning.Store(false)
		s.rewriteLog()
	})
	return true
}

// persistTick runs once a second: save rules, automatic log rewrite, and
// retrying a failed log write.
func (s *Server) persistTick(now int64) {
	p := &s.persist
	if p.loading.Load() {
		return
	}
	lg := s.aofLog()
	if lg != nil && p.aofWriteErr.Load() != nil {
		// Writes are refused (MISCONF) until the log can be written again.
		if err := lg.Sync(lg.Offset()); err == nil {
			p.aofWriteErr.Store(nil)
			s.log.Info("append-only log writable again; accepting writes")
		}
	}
	// After a failed background save the rules wait bgsaveRetryDelay
	// before trying again, as Redis does, instead of retrying every tick.
	dirty := s.dirty.Load()
	retry := p.lastSaveOK.Load() || now-p.bgsaveStart.Load() > int64(bgsaveRetryDelay)
	for _, r := range s.saveRules() {
		if retry && dirty >= r.Changes && dirty > 0 && now/1e9-p.lastSave.Load() >= r.Seconds {
			s.bgsave()
			break
		}
	}
	if pct := int(p.rewritePct.Load()); lg != nil && pct > 0 && lg.RewriteDue(pct, p.rewriteMin.Load()) {
		s.bgrewrite()
	}
}

// closePersistence runs at shutdown, after every client is gone: a final
// snapshot when save rules are configured, unless Shutdown has written it
// already or was told not to (SHUTDOWN NOSAVE), then the log is flushed,
// fsynced and closed. After Close alone (the hard stop) a failure of that
// snapshot cannot keep the server running: it is Serve's error.
func (s *Server) closePersistence() error {
	p := &s.persist
	var errs []error
	if len(s.saveRules()) > 0 && !p.noSaveOnExit.Load() && !p.loading.Load() {
		errs = append(errs, s.save(false))
	}
	p.aofMu.Lock() // a switch of appendonly finishes first
	defer p.aofMu.Unlock()
	if lg := s.aofLog(); lg != nil {
		errs = append(errs, lg.Close())
	}
	return errors.Join(errs...)
}

// saveRules returns the save rules in effect.
func (s *Server) saveRules() []SaveRule { return *s.persist.save.Load() }

// fsyncPolicy returns appendfsync in effect.
func (s *Server) fsyncPolicy() persistence.FsyncPolicy {
	return persistence.FsyncPolicy(s.persist.fsync.Load())
}

// setFsync is CONFIG SET appendfsync: the log, if open, follows at once.
func (s *Server) setFsync(c *Config) {
	s.persist.fsync.Store(uint32(c.Persist.AppendFsync))
	if lg := s.aofLog(); lg != nil {
		lg.SetFsync(c.Persist.AppendFsync) // the value parsed is valid
	}
}

// aofLog returns the append-only log, nil while appendonly is off.
func (s *Server) aofLog() *persistence.Log { return s.persist.log.Load() }
