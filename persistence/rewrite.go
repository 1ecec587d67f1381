package persistence

// Log rewrite: a new base from a point-in-time dump of the keyspace, and
// the switch of appends to a new incremental file at that same instant.
//
// The invariant: every effect is in exactly one of the new base and the
// new incremental file. Effects appended before the dump's instant (the
// cut, a log offset) are reflected in the base and go to the old files;
// effects appended from the cut on are not in the base and go to the new
// incremental file. Replaying an effect twice is not harmless: SET is, but
// a list push, HINCRBY or ZINCRBY would apply twice.

import (
	"errors"
	"fmt"
	"slices"

	"github.com/turnstile/turnstile/shards"
)

// errAbandoned is what the emit Rewrite hands to a frozen dump it will not
// write (the rewrite failed before the base was begun).
var errAbandoned = errors.New("persistence: rewrite abandoned")

// frozenDump is the DumpFunc a FreezeFunc returned and the log offset of
// the freeze's instant.
type frozenDump struct {
	dump   DumpFunc
	cut    int64 // Log.appended at the instant
	ats    int   // calls of at; exactly one is correct
	called bool
}

// freeze calls freeze (nil: an empty keyspace) with the at that records the
// cut. The caller holds wmu, so no record appended from the cut on can be
// written before the caller decides where it goes.
func (l *Log) freeze(freeze FreezeFunc) *frozenDump {
	fd := &frozenDump{cut: -1}
	at := func() {
		fd.ats++
		l.mu.Lock()
		fd.cut = l.appended
		l.mu.Unlock()
	}
	if freeze == nil {
		at()
	} else {
		fd.dump = freeze(at)
	}
	return fd
}

func (fd *frozenDump) check() error {
	if fd.ats != 1 {
		return fmt.Errorf("persistence: the FreezeFunc called at %d times, not once", fd.ats)
	}
	return nil
}

// run is the DumpFunc that writes the base.
func (fd *frozenDump) run(emit EmitFunc) error {
	fd.called = true
	if fd.dump == nil {
		return nil
	}
	return fd.dump(emit)
}

// release calls the dump, if it has not been, with an emit that fails at
// once: the FreezeFunc's contract is that its DumpFunc is always called,
// so that it can release what the freeze took.
func (fd *frozenDump) release() {
	if !fd.called {
		fd.run(func(int, []byte, shards.Entry) error { return errAbandoned })
	}
}

// Rewrite compacts the log into a new base file holding a point-in-time
// dump of the keyspace, while appends continue:
//
//  1. a new incremental file is created (with its header, fsynced);
//  2. Syncs are held up (Appends are not) while freeze freezes the
//     keyspace; the log offset when it calls at (no Append can run then)
//     is the cut. The records before the cut are written and fsynced to the
//     old last file, a manifest listing the old base, the old incremental
//     file(s) and the new one replaces the old manifest, and the records
//     from the cut on go to the new file; then Syncs resume;
//  3. the DumpFunc freeze returned writes the new base, which is fsynced;
//  4. the manifest is replaced by one listing the new base and the new
//     incremental file, and the old files are removed.
//
// So every effect is in exactly one of the new base and the new
// incremental file (the invariant of rewrite.go), and a crash at any point
// leaves a manifest that loads every acknowledged effect once.
//
// In a log that Load found empty, Rewrite creates the first files, with
// the dump as the base (the effects appended before the cut, none of them
// written yet, are in the base and are not written); Syncs wait until it
// is done. Only one Rewrite runs at a time: a second returns
// ErrRewriteInProgress. On error, the log goes on with its old files (plus
// the new incremental file if the switch was made). A nil freeze dumps an
// empty keyspace.
func (l *Log) Rewrite(freeze FreezeFunc) error {
	if !l.rewriteMu.TryLock() {
		return ErrRewriteInProgress
	}
	defer l.rewriteMu.Unlock()
	l.rewriting.Store(true)
	defer l.rewriting.Store(false)

	l.wmu.Lock()
	switch l.state {
	case stateNew:
		l.wmu.Unlock()
		return ErrNotLoaded
	case stateClosed:
		l.wmu.Unlock()
		return ErrClosed
	case stateFresh:
		err := l.initFromLocked(freeze)
		l.wmu.Unlock()
		return err
	}
	if b := l.failed.Load(); b != nil {
		l.wmu.Unlock()
		return b.err
	}
	old := l.man
	seq := l.seq + 1
	l.wmu.Unlock()

	// 1. The new incremental file, and the intermediate manifest, written
	// to the temporary file now and renamed into place at the switch.
	incrName := seqName(l.cfg.Name, seq, "incr")
	baseName := seqName(l.cfg.Name, seq, "base")
	seg, err := l.createIncr(incrName)
	if err != nil {
		return err
	}
	mid := manifest{base: old.base, incrs: append(slices.Clone(old.incrs), incrName), history: old.history}
	tmp := l.manifestPath + ".tmp"
	if err := writeFileSync(l.fs, tmp, mid.encode()); err != nil {
		l.abandon(seg)
		return err
	}

	// 2. The freeze and the switch, with no write in between. The freeze
	// waits for shard locks with wmu held: that is why Sync is never
	// called under a shard lock.
	l.wmu.Lock()
	fd := l.freeze(freeze)
	defer fd.release()
	if err := fd.check(); err != nil {
		l.wmu.Unlock()
		l.abandon(seg)
		return err
	}
	err = l.switchLocked(seg, &mid, seq, tmp, fd.cut)
	l.wmu.Unlock()
	if err != nil {
		return err
	}

	// 3. The new base. Everything it reflects is durable in the old files
	// (fsynced at the switch), so the final manifest needs no fsync of the
	// new incremental file: a crash after it loads the state at the cut
	// followed by whatever prefix of the later appends is durable.
	bsize, err := writeDumpFile(l.fs, l.path(baseName), fd.run)
	if err != nil {
		removeIfExists(l.fs, l.path(baseName))
		return err
	}

	// 4. The final manifest; the old files become history, then go.
	hist := append(slices.Clone(old.history), old.base)
	hist = append(hist, old.incrs...)
	fin := manifest{base: baseName, incrs: []string{incrName}, history: hist}
	if err := writeFileSync(l.fs, tmp, fin.encode()); err != nil {
		removeIfExists(l.fs, l.path(baseName))
		return err
	}
	if err := l.fs.Rename(tmp, l.manifestPath); err != nil {
		removeIfExists(l.fs, l.path(baseName))
		return fmt.Errorf("persistence: renaming %s: %w", tmp, err)
	}
	dirErr := l.fs.SyncDir(l.cfg.Dir)
	l.wmu.Lock()
	l.man = fin
	l.wmu.Unlock()
	l.baseSize.Store(bsize)
	l.oldIncrSize.Store(0)
	l.rewriteBase.Store(bsize + l.curSize.Load())
	if dirErr != nil {
		// The directory may hold either manifest after a crash.
		return l.fail(fmt.Errorf("persistence: fsync of directory %s: %w", l.cfg.Dir, dirErr))
	}

	var keep []string
	for _, h := range hist {
		if removeIfExists(l.fs, l.path(h)) != nil {
			keep = append(keep, h)
		}
	}
	fin2 := fin
	fin2.history = keep
	if writeManifest(l.fs, l.manifestPath, &fin2) == nil {
		l.wmu.Lock()
		l.man = fin2
		l.wmu.Unlock()
	}
	return nil
}

// abandon closes and removes a new incremental file the log never switched
// to.
func (l *Log) abandon(seg *segment) {
	seg.f.Close()
	removeIfExists(l.fs, l.path(seg.name))
}

// initFromLocked creates the log's first files from a dump of the keyspace
// at freeze's instant. The records appended before the cut are reflected in
// the base and were never written (no file existed): they are dropped, and
// count as written and fsynced once the manifest naming the base is. wmu is
// held and the state is stateFresh.
func (l *Log) initFromLocked(freeze FreezeFunc) error {
	fd := l.freeze(freeze)
	defer fd.release()
	if err := fd.check(); err != nil {
		return err
	}
	if err := l.initLocked(fd.run); err != nil {
		return err
	}
	l.mu.Lock()
	l.unwritten = l.unwritten[:0] // all before the cut: wmu was held since
	drop := min(len(l.pending), max(0, int(fd.cut-(l.appended-int64(len(l.pending))))))
	l.pending = l.pending[:copy(l.pending, l.pending[drop:])]
	l.mu.Unlock()
	if fd.cut > l.written.Load() {
		l.written.Store(fd.cut)
	}
	l.smu.Lock()
	if fd.cut > l.synced.Load() {
		l.synced.Store(fd.cut)
	}
	l.smu.Unlock()
	return nil
}

// switchLocked makes seg the current file at the cut: it writes the
// records before the cut to the old file and fsyncs it, renames the
// intermediate manifest (already in tmp) into place and fsyncs the
// directory, so that nothing written to seg is acknowledged before a
// manifest naming seg is durable, and the old file is complete before it
// stops being the last. The records from the cut on stay pending, for seg.
// wmu is held (since before the cut was taken).
func (l *Log) switchLocked(seg *segment, mid *manifest, seq uint64, tmp string, cut int64) error {
	abort := func(err error) error {
		l.abandon(seg)
		return err
	}
	if l.state != stateOpen {
		return abort(ErrClosed)
	}
	if err := l.flushThrough(cut); err != nil {
		return abort(err)
	}
	l.smu.Lock()
	err := l.fsyncSegment(l.cur, l.written.Load())
	l.smu.Unlock()
	if err != nil {
		return abort(err)
	}
	if err := l.fs.Rename(tmp, l.manifestPath); err != nil {
		return abort(fmt.Errorf("persistence: renaming %s: %w", tmp, err))
	}
	dirErr := l.fs.SyncDir(l.cfg.Dir)
	// The manifest in the directory names seg now: switch.
	old := l.cur
	old.f.Close()
	l.oldIncrSize.Add(old.size)
	l.cur = seg
	l.curSize.Store(seg.size)
	l.man = *mid
	l.seq = seq
	if dirErr != nil {
		return l.fail(fmt.Errorf("persistence: fsync of directory %s: %w", l.cfg.Dir, dirErr))
	}
	return nil
}
