package persistence

// The append-only log: a manifest naming one base file (a dump) and one or
// more incremental files of effects, as Redis 7's multi-part AOF.
//
// Locks, always taken in this order:
//
//	rewriteMu  one Rewrite (or Close) at a time
//	wmu        the writer: the current file, the unwritten buffer, the
//	           manifest, the state
//	smu        held while a file is fsynced; whoever closes a file takes it
//	           first, so the everysec fsync never touches a closed file
//	mu         the pending buffer (Append); held only to append or to swap
//
// The caller's shard locks fall between wmu and mu: Append is called under
// them (and takes mu), and Rewrite holds wmu while its FreezeFunc takes
// them all (rewrite.go). So nothing that takes wmu (Sync, Close, Rewrite)
// may be called under a shard lock.
//
// Offsets are logical: the number of record bytes appended since OpenLog,
// independent of which file they went to.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnstile/turnstile/coll"
	"github.com/turnstile/turnstile/shards"
)

var (
	ErrClosed            = errors.New("persistence: the log is closed")
	ErrNotLoaded         = errors.New("persistence: the log has not been loaded (call Load first)")
	ErrRewriteInProgress = errors.New("persistence: a log rewrite is already in progress")
)

type logState uint8

const (
	stateNew    logState = iota // OpenLog done, Load not yet
	stateFresh                  // Load found no manifest: the first write or Rewrite creates the files
	stateOpen                   // appending to cur
	stateClosed                 // Close done
)

// segment is an open incremental file.
type segment struct {
	f    File
	name string // file name inside Dir
	size int64  // bytes written to it
}

type errBox struct{ err error }

// Log is the append-only log. Append, Sync, Stats and Offset are safe for
// concurrent use; Load must be called once, before Sync and Rewrite.
type Log struct {
	cfg          LogConfig
	fs           FS
	manifestPath string

	mu       sync.Mutex
	pending  []byte // encoded records not yet handed to the writer
	appended int64  // logical offset just past the last appended record
	effects  int64

	wmu       sync.Mutex
	state     logState
	unwritten []byte // records taken from pending, not yet written (a failed write keeps them)
	cur       *segment
	man       manifest
	seq       uint64 // highest sequence number in use

	smu       sync.Mutex
	rewriteMu sync.Mutex

	// Group commit: one Sync at a time leads (writes and fsyncs for
	// everyone); the others wait on gcond, not on wmu, so that those the
	// leader covered return as soon as it is done instead of queueing
	// behind the next leader's fsync.
	gmu     sync.Mutex
	gcond   *sync.Cond
	leading bool

	written      atomic.Int64 // logical offset through which records are written
	synced       atomic.Int64 // logical offset through which records are fsynced (written under smu)
	failed       atomic.Pointer[errBox]
	lastWriteErr atomic.Pointer[errBox]
	lastFsyncErr atomic.Pointer[errBox]
	rewriting    atomic.Bool
	baseSize     atomic.Int64
	oldIncrSize  atomic.Int64 // incremental files before cur
	curSize      atomic.Int64
	rewriteBase  atomic.Int64
	writes       atomic.Int64
	fsyncs       atomic.Int64

	// fsync is the appendfsync policy in effect: cfg.Fsync at first,
	// then what SetFsync stores.
	fsync atomic.Uint32

	closeOnce sync.Once
	closeErr  error
	stop      chan struct{}
	bgDone    chan struct{}
}

// OpenLog prepares the log in cfg.Dir (created if needed). It reads no file:
// call Load next. It starts the goroutine that fsyncs once a second under
// FsyncEverySec; Close stops it.
func OpenLog(cfg LogConfig) (*Log, error) {
	if cfg.FS == nil {
		cfg.FS = OSFS{}
	}
	if cfg.Dir == "" {
		cfg.Dir = "."
	}
	if cfg.Name == "" || cfg.Name == "." || cfg.Name == ".." || strings.ContainsAny(cfg.Name, "/\\ \t\r\n") {
		return nil, fmt.Errorf("persistence: bad log file name %q", cfg.Name)
	}
	if cfg.Fsync > FsyncNo {
		return nil, fmt.Errorf("persistence: bad fsync policy %d", cfg.Fsync)
	}
	if err := cfg.FS.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("persistence: creating %s: %w", cfg.Dir, err)
	}
	l := &Log{cfg: cfg, fs: cfg.FS, manifestPath: filepath.Join(cfg.Dir, cfg.Name+".manifest")}
	l.gcond = sync.NewCond(&l.gmu)
	l.fsync.Store(uint32(cfg.Fsync))
	// The once-a-second goroutine runs whatever the policy, as SetFsync
	// may switch to everysec; it fsyncs only while the policy is that.
	l.stop = make(chan struct{})
	l.bgDone = make(chan struct{})
	tick := cfg.tick
	var t *time.Ticker
	if tick == nil {
		t = time.NewTicker(time.Second)
		tick = t.C
	}
	go l.everySec(tick, t)
	return l, nil
}

// Fsync returns the fsync policy in effect.
func (l *Log) Fsync() FsyncPolicy { return FsyncPolicy(l.fsync.Load()) }

// SetFsync changes the fsync policy (CONFIG SET appendfsync). Syncs that
// start after it follow the new policy; switching to always fsyncs at
// the next Sync everything written before.
func (l *Log) SetFsync(p FsyncPolicy) error {
	if p > FsyncNo {
		return fmt.Errorf("persistence: bad fsync policy %d", p)
	}
	l.fsync.Store(uint32(p))
	return nil
}

func (l *Log) path(name string) string { return filepath.Join(l.cfg.Dir, name) }

// Load replays the log: the base file's keys as OpSet effects, then the
// effects of each incremental file in order. Effect.Key and Entry.Str alias
// a buffer reused for the next effect: apply must copy them. Effects are
// passed whatever their expiry: dropping keys already expired is the
// caller's job.
//
// A torn last record or group in the last incremental file (a crash in the
// middle of a write) is cut off: the file is truncated to its last whole
// record or group (a group is applied whole or not at all) and
// LoadInfo reports where (TornTail, TornFile, TornOffset). Any other damage
// returns a *CorruptError naming the file and offset. A missing manifest is
// an empty log: LoadInfo.Files is 0 and the files are created by the first
// write (or by Rewrite, to start the log from a dump of data loaded
// elsewhere, e.g. a snapshot).
//
// Files left behind by an interrupted rewrite are removed. When the last
// incremental file was written by an older format version, a new one is
// started for the appends to come (leaveOldIncr).
func (l *Log) Load(apply func(Effect) error) (LoadInfo, error) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	switch l.state {
	case stateClosed:
		return LoadInfo{}, ErrClosed
	case stateFresh, stateOpen:
		return LoadInfo{}, errors.New("persistence: Load called twice")
	}
	m, err := readManifest(l.fs, l.manifestPath, l.cfg.Name)
	if errors.Is(err, os.ErrNotExist) {
		l.state = stateFresh
		return LoadInfo{}, nil
	}
	if err != nil {
		return LoadInfo{}, err
	}
	l.cleanup(&m)

	var info LoadInfo
	fn := func(e *Effect) error { return apply(*e) }
	scan := func(name string, want FileType) (scanResult, error) {
		p := l.path(name)
		res, err := scanFile(l.fs, p, want, fn)
		info.Files++
		info.Records += res.records
		info.Bytes += res.validLen
		if errors.Is(err, os.ErrNotExist) {
			return res, &CorruptError{File: p, Reason: "listed in the manifest but missing"}
		}
		return res, err
	}
	res, err := scan(m.base, FileDump)
	if err != nil {
		return info, err
	}
	if res.problem != nil {
		return info, res.problem
	}
	base := res.size
	var old int64
	for i, name := range m.incrs {
		last := i == len(m.incrs)-1
		res, err = scan(name, FileIncr)
		if err != nil {
			return info, err
		}
		if res.problem != nil {
			if !res.torn || !last {
				if res.torn {
					res.problem.Reason += " (in an incremental file that is not the last)"
				}
				return info, res.problem
			}
			info.TornTail = true
			info.TornFile = res.problem.File
			info.TornOffset = res.problem.Offset
		}
		if !last {
			old += res.size
		}
	}

	name := m.incrs[len(m.incrs)-1]
	f, err := l.fs.OpenFile(l.path(name), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return info, fmt.Errorf("persistence: opening %s: %w", l.path(name), err)
	}
	if info.TornTail {
		err := f.Truncate(res.validLen)
		if err == nil {
			err = f.Sync()
		}
		if err != nil {
			f.Close()
			return info, fmt.Errorf("persistence: cutting the torn tail of %s: %w", l.path(name), err)
		}
	}
	seg := &segment{f: f, name: name, size: res.validLen}
	if res.version < formatVersion {
		seg, err = l.leaveOldIncr(seg, &m)
		if err != nil {
			return info, err
		}
		old += res.validLen
	}
	l.cur = seg
	l.curSize.Store(seg.size)
	l.oldIncrSize.Store(old)
	l.baseSize.Store(base)
	l.rewriteBase.Store(base + old + seg.size)
	l.man = m
	l.seq = m.maxSeq(l.cfg.Name)
	l.state = stateOpen
	return info, nil
}

// leaveOldIncr starts a new incremental file after old, the last one, which
// an older build wrote (its header has an older format version), and
// returns it; *m becomes the manifest naming it. Appending this build's
// records to old would leave a file whose header promises an older format
// than it holds: an older build would take the new records for damage
// instead of refusing the file by its version. It follows the rewrite
// protocol's switch (FORMAT.md): old is fsynced (it may hold writes of the
// previous run not yet on disk), the new file is created with its header
// and fsynced, and the manifest listing it replaces the old one. A crash
// before that leaves the new file unlisted, and the next Load removes it
// (it has the next sequence number).
func (l *Log) leaveOldIncr(old *segment, m *manifest) (*segment, error) {
	err := old.f.Sync()
	if cerr := old.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("persistence: fsync of %s: %w", l.path(old.name), err)
	}
	name := seqName(l.cfg.Name, m.maxSeq(l.cfg.Name)+1, "incr")
	seg, err := l.createIncr(name)
	if err != nil {
		return nil, err
	}
	next := manifest{base: m.base, incrs: append(slices.Clone(m.incrs), name), history: m.history}
	if err := writeManifest(l.fs, l.manifestPath, &next); err != nil {
		seg.f.Close() // the file stays: the rename may have happened
		return nil, err
	}
	*m = next
	return seg, nil
}

// cleanup removes the files an interrupted rewrite left: those of the
// previous generation (history lines), a base file being written by a
// rewrite that did not finish (named after an incremental file other than
// the first), and the files of a rewrite that failed before its switch
// (the next sequence number). It is best effort: what cannot be removed now
// is removed by a later Load.
func (l *Log) cleanup(m *manifest) {
	next := m.maxSeq(l.cfg.Name) + 1 // a rewrite that failed before its switch
	removeIfExists(l.fs, l.path(seqName(l.cfg.Name, next, "incr")))
	removeIfExists(l.fs, l.path(seqName(l.cfg.Name, next, "base")))
	for _, inc := range m.incrs[1:] {
		seq, _ := fileSeq(inc, l.cfg.Name, "incr")
		if b := seqName(l.cfg.Name, seq, "base"); b != m.base && !slices.Contains(m.history, b) {
			removeIfExists(l.fs, l.path(b))
		}
	}
	if len(m.history) == 0 {
		return
	}
	var keep []string
	for _, h := range m.history {
		if removeIfExists(l.fs, l.path(h)) != nil {
			keep = append(keep, h)
		}
	}
	if len(keep) == len(m.history) {
		return
	}
	m2 := *m
	m2.history = keep
	if writeManifest(l.fs, l.manifestPath, &m2) == nil {
		*m = m2
	}
}

// checkEffect panics on an effect the format cannot hold, before any lock is
// taken.
func checkEffect(e *Effect) {
	if _, ok := opCode(e.Op); !ok {
		panic(fmt.Sprintf("persistence: cannot log op %d", e.Op))
	}
	if e.DB < 0 || e.DB > maxDB {
		panic(fmt.Sprintf("persistence: cannot log database %d", e.DB))
	}
	if _, ok := valueCode(e.Entry.Kind); e.Op == OpSet && !ok {
		panic(fmt.Sprintf("persistence: cannot log entry kind %d", e.Entry.Kind))
	}
	if _, ok := e.Entry.Obj.(coll.Value); e.Op == OpSet && e.Entry.Kind >= shards.KindHash && !ok {
		panic(fmt.Sprintf("persistence: entry kind %d without a collection value", e.Entry.Kind))
	}
	if _, ok := fieldCode(e.Field); e.Op == OpField && !ok {
		panic(fmt.Sprintf("persistence: cannot log collection op %s", e.Field))
	}
	if e.Op == OpRange && (e.Off < 0 || e.Len > MaxPayload || e.Off > e.Len-int64(len(e.Entry.Str))) {
		panic(fmt.Sprintf("persistence: cannot log a range of %d bytes at %d in a value of %d", len(e.Entry.Str), e.Off, e.Len))
	}
	if uint64(len(e.Key))+uint64(len(e.Entry.Str)) > MaxPayload-64 {
		panic("persistence: effect too large for one record")
	}
}

// Append encodes e into the pending buffer and returns the logical log
// offset just past it, to be passed to Sync. It does not write: that is
// Sync's job. Key and Entry.Str are copied. Callers hold the shard lock of
// e's key, which makes the log order of a key's effects the order of its
// writes. Append panics on an effect the format cannot hold (a programming
// error): an op or entry kind not defined, a negative database.
func (l *Log) Append(e Effect) int64 {
	return l.AppendAll([]Effect{e})
}

// AppendAll is Append for the effects of one command, EXEC or script: they
// are encoded together, with nothing else between them, as one unit that a
// crash cannot split (more than one effect is preceded by a GROUP record,
// group.go), and the offset just past the last one is returned. With no
// effects it returns the current offset.
func (l *Log) AppendAll(effects []Effect) int64 {
	for i := range effects {
		checkEffect(&effects[i])
	}
	l.mu.Lock()
	n := len(l.pending)
	for i := range effects {
		l.pending = appendRecord(l.pending, &effects[i])
	}
	if len(effects) > 1 {
		l.pending = insertGroupRecord(l.pending, n, len(effects))
	}
	l.appended += int64(len(l.pending) - n)
	l.effects += int64(len(effects))
	off := l.appended
	l.mu.Unlock()
	return off
}

// Offset returns the logical offset just past the last appended effect.
func (l *Log) Offset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.appended
}

func (l *Log) covered(upto int64) bool {
	if l.Fsync() == FsyncAlways {
		return l.synced.Load() >= upto
	}
	return l.written.Load() >= upto
}

// Sync returns once every effect through offset upto is written to the file
// (write(2)) and, under FsyncAlways, fsynced. The first caller in writes
// everything pending for everyone, in one write and (always) one fsync;
// callers whose offset is already covered return at once. Never call it
// while holding a shard lock: Rewrite's freeze takes every shard lock while
// holding up Syncs.
//
// A write error is returned and retried by the next Sync (the file is cut
// back to its last whole record first). An fsync error, or a write error
// that leaves the file in an unknown state, is permanent: every later Sync
// returns it (as Redis, the server must then refuse writes or stop).
func (l *Log) Sync(upto int64) error {
	if l.covered(upto) {
		return nil
	}
	l.gmu.Lock()
	for l.leading {
		l.gcond.Wait()
		if l.covered(upto) {
			l.gmu.Unlock()
			return nil
		}
	}
	l.leading = true
	l.gmu.Unlock()

	err := l.lead(upto)

	l.gmu.Lock()
	l.leading = false
	l.gcond.Broadcast()
	l.gmu.Unlock()
	return err
}

// lead writes (and under FsyncAlways fsyncs) everything pending.
func (l *Log) lead(upto int64) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	switch l.state {
	case stateNew:
		return ErrNotLoaded
	case stateClosed:
		return ErrClosed
	}
	if l.covered(upto) {
		return nil
	}
	start := l.latencyStart()
	if err := l.flushLocked(); err != nil {
		return err
	}
	start = l.latencyNote("aof-write", start)
	if l.Fsync() == FsyncAlways {
		err := l.fsyncLocked()
		l.latencyNote("aof-fsync-always", start)
		return err
	}
	return nil
}

// latencyStart returns the time a step timed for LogConfig.Latency starts
// (zero when nobody listens: no clock read).
func (l *Log) latencyStart() time.Time {
	if l.cfg.Latency == nil {
		return time.Time{}
	}
	return time.Now()
}

// latencyNote reports the step event that started at start, and returns
// the start of the next one.
func (l *Log) latencyNote(event string, start time.Time) time.Time {
	if l.cfg.Latency == nil {
		return start
	}
	now := time.Now()
	l.cfg.Latency(event, now.Sub(start))
	return now
}

func (l *Log) fail(err error) error {
	l.failed.CompareAndSwap(nil, &errBox{err})
	return l.failed.Load().err
}

// flushLocked writes everything pending to the current file (creating the
// log's files first in stateFresh). wmu is held.
func (l *Log) flushLocked() error { return l.flushThrough(-1) }

// flushThrough writes the pending records before logical offset upto (all
// of them when upto < 0; upto is a record boundary) to the current file,
// and leaves the rest pending: a rewrite's switch writes the records before
// its cut to the old file this way. wmu is held.
func (l *Log) flushThrough(upto int64) error {
	if b := l.failed.Load(); b != nil {
		return b.err
	}
	l.mu.Lock()
	take := len(l.pending)
	if upto >= 0 {
		take = min(take, max(0, int(upto-(l.appended-int64(len(l.pending))))))
	}
	switch {
	case take == 0:
	case len(l.unwritten) == 0 && take == len(l.pending):
		l.unwritten, l.pending = l.pending, l.unwritten[:0]
	default:
		l.unwritten = append(l.unwritten, l.pending[:take]...)
		l.pending = l.pending[:copy(l.pending, l.pending[take:])]
	}
	end := l.appended - int64(len(l.pending)) // just past the unwritten records
	l.mu.Unlock()
	if len(l.unwritten) == 0 {
		return nil
	}
	if l.state == stateFresh {
		if err := l.initLocked(nil); err != nil {
			return err
		}
	}
	n, err := l.cur.f.Write(l.unwritten)
	if err != nil {
		err = fmt.Errorf("persistence: writing %s: %w", l.path(l.cur.name), err)
		l.lastWriteErr.Store(&errBox{err})
		if n > 0 {
			// Cut the partial write off so that a retry appends whole
			// records; if that fails the file's state is unknown.
			if terr := l.cur.f.Truncate(l.cur.size); terr != nil {
				return l.fail(fmt.Errorf("%w; cutting the partial write failed: %v", err, terr))
			}
		}
		return err
	}
	l.lastWriteErr.Store(nil)
	l.writes.Add(1)
	l.cur.size += int64(n)
	l.curSize.Store(l.cur.size)
	if cap(l.unwritten) > 4<<20 {
		l.unwritten = nil // do not keep a burst's buffer
	} else {
		l.unwritten = l.unwritten[:0]
	}
	l.written.Store(end)
	return nil
}

// fsyncLocked fsyncs the current file. wmu is held.
func (l *Log) fsyncLocked() error {
	l.smu.Lock()
	defer l.smu.Unlock()
	return l.fsyncSegment(l.cur, l.written.Load())
}

// fsyncSegment fsyncs seg, after which everything through end is durable.
// smu is held.
func (l *Log) fsyncSegment(seg *segment, end int64) error {
	if seg == nil || end <= l.synced.Load() {
		return nil
	}
	if err := seg.f.Sync(); err != nil {
		err = fmt.Errorf("persistence: fsync of %s: %w", l.path(seg.name), err)
		l.lastFsyncErr.Store(&errBox{err})
		return l.fail(err)
	}
	l.fsyncs.Add(1)
	if end > l.synced.Load() {
		l.synced.Store(end)
	}
	return nil
}

// everySec is the FsyncEverySec goroutine.
func (l *Log) everySec(tick <-chan time.Time, t *time.Ticker) {
	defer close(l.bgDone)
	if t != nil {
		defer t.Stop()
	}
	for {
		select {
		case <-l.stop:
			return
		case <-tick:
		}
		if l.Fsync() != FsyncEverySec {
			continue
		}
		l.tickSync()
		if l.cfg.tickDone != nil {
			select {
			case l.cfg.tickDone <- struct{}{}:
			case <-l.stop:
				return
			}
		}
	}
}

// tickSync writes what is pending and fsyncs the current file, holding the
// writer lock only for the write: writers are not held up by the fsync.
func (l *Log) tickSync() {
	l.wmu.Lock()
	if (l.state != stateOpen && l.state != stateFresh) || l.failed.Load() != nil {
		l.wmu.Unlock()
		return
	}
	l.flushLocked() // an error is recorded in LastWriteErr and retried
	seg, end := l.cur, l.written.Load()
	l.smu.Lock()
	l.wmu.Unlock()
	l.fsyncSegment(seg, end)
	l.smu.Unlock()
}

// createIncr creates an incremental file holding just its header, fsynced.
func (l *Log) createIncr(name string) (*segment, error) {
	p := l.path(name)
	f, err := l.fs.OpenFile(p, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("persistence: creating %s: %w", p, err)
	}
	_, err = f.Write(appendHeader(nil, FileIncr))
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		f.Close()
		removeIfExists(l.fs, p)
		return nil, fmt.Errorf("persistence: creating %s: %w", p, err)
	}
	return &segment{f: f, name: name, size: headerLen}, nil
}

// initLocked creates the log's first files: a base holding what dump emits
// (nothing if dump is nil), an empty incremental file, then the manifest
// naming them. wmu is held and the state is stateFresh.
func (l *Log) initLocked(dump DumpFunc) error {
	baseName := seqName(l.cfg.Name, 1, "base")
	incrName := seqName(l.cfg.Name, 1, "incr")
	bsize, err := writeDumpFile(l.fs, l.path(baseName), dump)
	if err != nil {
		removeIfExists(l.fs, l.path(baseName))
		return err
	}
	seg, err := l.createIncr(incrName)
	if err != nil {
		return err
	}
	m := manifest{base: baseName, incrs: []string{incrName}}
	if err := writeManifest(l.fs, l.manifestPath, &m); err != nil {
		seg.f.Close()
		return err
	}
	l.cur, l.man, l.seq, l.state = seg, m, 1, stateOpen
	l.baseSize.Store(bsize)
	l.curSize.Store(seg.size)
	l.rewriteBase.Store(bsize + seg.size)
	return nil
}

// Stats reports the log's sizes and status (see RewriteDue for automatic
// rewrites).
func (l *Log) Stats() LogStats {
	l.mu.Lock()
	appended, effects := l.appended, l.effects
	l.mu.Unlock()
	s := LogStats{
		BaseSize:        l.baseSize.Load(),
		IncrSize:        l.oldIncrSize.Load() + l.curSize.Load(),
		PendingBytes:    appended - l.written.Load(),
		RewriteInFlight: l.rewriting.Load(),
		RewriteBase:     l.rewriteBase.Load(),
		Effects:         effects,
		Writes:          l.writes.Load(),
		Fsyncs:          l.fsyncs.Load(),
	}
	if b := l.lastWriteErr.Load(); b != nil {
		s.LastWriteErr = b.err
	} else if b := l.failed.Load(); b != nil {
		s.LastWriteErr = b.err
	}
	if b := l.lastFsyncErr.Load(); b != nil {
		s.LastFsyncErr = b.err
	}
	return s
}

// RewriteDue reports whether the log has grown enough for an automatic
// rewrite, with Redis's rule: its size is at least minSize and has grown by
// at least percentage percent since the last load or rewrite
// (auto-aof-rewrite-percentage, auto-aof-rewrite-min-size). percentage <= 0
// disables it. It is false while a rewrite runs.
func (l *Log) RewriteDue(percentage int, minSize int64) bool {
	if percentage <= 0 || l.rewriting.Load() {
		return false
	}
	size := l.baseSize.Load() + l.oldIncrSize.Load() + l.curSize.Load()
	base := max(l.rewriteBase.Load(), 1)
	return size >= minSize && (size-base)*100/base >= int64(percentage)
}

// Close writes and fsyncs everything pending, closes the file and stops the
// everysec goroutine. It waits for a Rewrite in progress. It is idempotent:
// later calls return the first call's result. Append after Close is
// accepted and lost; Sync after Close returns ErrClosed.
func (l *Log) Close() error {
	l.closeOnce.Do(func() { l.closeErr = l.close() })
	return l.closeErr
}

func (l *Log) close() error {
	l.rewriteMu.Lock()
	defer l.rewriteMu.Unlock()
	if l.stop != nil {
		close(l.stop)
		<-l.bgDone
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	var err error
	if l.state == stateOpen || l.state == stateFresh {
		err = l.flushLocked()
		if err == nil {
			err = l.fsyncLocked()
		}
	}
	if l.cur != nil {
		l.smu.Lock()
		if cerr := l.cur.f.Close(); err == nil {
			err = cerr
		}
		l.smu.Unlock()
	}
	l.state = stateClosed
	return err
}

// String returns the appendfsync spelling of p.
func (p FsyncPolicy) String() string {
	switch p {
	case FsyncAlways:
		return "always"
	case FsyncEverySec:
		return "everysec"
	case FsyncNo:
		return "no"
	}
	return fmt.Sprintf("FsyncPolicy(%d)", uint8(p))
}

// ParseFsyncPolicy parses an appendfsync value: always, everysec or no.
func ParseFsyncPolicy(s string) (FsyncPolicy, error) {
	switch strings.ToLower(s) {
	case "always":
		return FsyncAlways, nil
	case "everysec":
		return FsyncEverySec, nil
	case "no":
		return FsyncNo, nil
	}
	return 0, fmt.Errorf("persistence: bad appendfsync value %q (always, everysec or no)", s)
}
