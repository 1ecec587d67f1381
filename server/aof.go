package server

import (
	"errors"
	"fmt"

	"github.com/turnstile/turnstile/persistence"
)

// CONFIG SET appendonly at run time, as Redis does it: yes starts the
// append-only log with a rewrite (its base is the dataset as of one
// instant, every later write goes to its incremental file); no flushes,
// fsyncs and closes the log, and writes are no longer logged. CONFIG SET
// answers at once; the switch runs in the background (one at a time,
// under persistState.aofMu, and with dumpMu so that no snapshot or rewrite
// runs meanwhile), and reconciles the log with the latest value asked for.
//
// The log and the Durability are published, or withdrawn, while every
// shard lock is held (the rewrite's freeze instant when starting), so an
// execution, which holds its shards' locks from its first effect to its
// Append, is either wholly in the base or wholly in the log. Positions
// keep growing across logs (aofDurability.base): a client still waiting
// on a position of a closed log finds it durable.

// errAppendOnlyFixed refuses CONFIG SET appendonly on a server whose
// writes go to a Raft log or a Durability its embedder chose.
const errAppendOnlyFixed = configError("appendonly cannot change: this server's writes go to a replicated log")

// checkAppendOnly vets CONFIG SET appendonly.
func (s *Server) checkAppendOnly(c *Config) error {
	if s.repl != nil || s.cfg.Durability != nil {
		return errAppendOnlyFixed
	}
	if s.persist.loading.Load() {
		return configError("appendonly cannot change while the dataset is loading")
	}
	return nil
}

// setAppendOnly is CONFIG SET appendonly: it records the value and lets a
// background task bring the log there.
func (s *Server) setAppendOnly(c *Config) {
	if s.persist.aofOn.Swap(c.Persist.AppendOnly) != c.Persist.AppendOnly {
		s.goFunc(s.switchAppendOnly)
	}
}

// switchAppendOnly starts or stops the log to match aofOn.
func (s *Server) switchAppendOnly() {
	p := &s.persist
	p.aofMu.Lock()
	defer p.aofMu.Unlock()
	want := p.aofOn.Load()
	if want == (s.aofLog() != nil) {
		return
	}
	if !want {
		if err := s.stopAppendOnly(); err != nil {
			s.log.Error("append-only log stopped; closing it failed", "err", err)
			return
		}
		s.log.Info("append-only log stopped (CONFIG SET appendonly no)")
		return
	}
	if err := s.startAppendOnly(); err != nil {
		p.aofOn.Store(false)
		s.log.Error("cannot start the append-only log (CONFIG SET appendonly yes); it stays off", "err", err)
		return
	}
	s.log.Info("append-only log started from the dataset (CONFIG SET appendonly yes)", "dir", s.cfg.Persist.Dir)
}

// startAppendOnly opens the log and rewrites it from the dataset. Files an
// earlier run left are read (not applied: the dataset in memory is the
// truth) and replaced by the rewrite.
func (s *Server) startAppendOnly() error {
	p := &s.persist
	p.dumpMu.Lock()
	defer p.dumpMu.Unlock()
	p.rewriteRunning.Store(true)
	defer p.rewriteRunning.Store(false)
	lg, err := persistence.OpenLog(persistence.LogConfig{
		Dir: s.cfg.Persist.Dir, Name: s.cfg.Persist.AppendFilename, Fsync: s.fsyncPolicy(), FS: s.cfg.Persist.FS,
	})
	if err != nil {
		return fmt.Errorf("open append-only log: %w", err)
	}
	if _, err := lg.Load(func(persistence.Effect) error { return nil }); err != nil {
		lg.Close()
		return fmt.Errorf("read the existing append-only log in %s: %w", s.cfg.Persist.Dir, err)
	}
	d := aofDurability{log: lg, base: p.durEnd.Load()}
	published := false
	err = lg.Rewrite(func(at func()) persistence.DumpFunc {
		return s.freeze(func() {
			at()
			p.log.Store(lg)
			s.setDurability(d)
			published = true
		})
	})
	p.lastRewriteOK.Store(err == nil)
	if err != nil {
		if published {
			return errors.Join(err, s.stopAppendOnlyLocked())
		}
		lg.Close()
		return err
	}
	return nil
}

// stopAppendOnly withdraws the log from writers, then flushes, fsyncs
// and closes it.
func (s *Server) stopAppendOnly() error {
	s.persist.dumpMu.Lock()
	defer s.persist.dumpMu.Unlock()
	return s.stopAppendOnlyLocked()
}

// stopAppendOnlyLocked is stopAppendOnly with dumpMu held.
func (s *Server) stopAppendOnlyLocked() error {
	p := &s.persist
	lg := s.aofLog()
	all := lockSet{all: true}
	all.lock(s)
	if d := s.durability(); d != nil {
		p.durEnd.Store(d.Tail())
	}
	s.setDurability(nil)
	p.log.Store(nil)
	all.unlock(s)
	p.aofWriteErr.Store(nil) // nothing is logged any more: writes are accepted
	return lg.Close()
}
