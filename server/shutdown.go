package server

import "fmt"

// Shutting down as Redis does: the final snapshot is written while the
// server still serves, so that when it fails the server can go on serving
// instead of exiting with every change since the last snapshot lost
// ("Error trying to save the DB, can't exit."). Close, by contrast, is the
// hard stop: it closes every connection first and saves afterwards.
//
// Writes made while the final snapshot is being written are not in it. So
// that no client is told of such a write and then loses it, every
// connection's replies are held back (replyHold) from just before the
// snapshot's instant until the outcome is known: if the snapshot is
// written, the server closes and the held replies are never sent (their
// connections just close, as Close would have closed them); if it fails,
// they go out and the server carries on. Commands still run meanwhile;
// only their replies wait, as they would wait behind Redis's synchronous
// save.

// ShutdownOptions are SHUTDOWN's arguments; a signal shuts down with none.
type ShutdownOptions struct {
	Save   bool // save even without save rules (SHUTDOWN SAVE)
	NoSave bool // do not save, even with save rules (SHUTDOWN NOSAVE)
	Force  bool // stop even if the final snapshot fails (SHUTDOWN FORCE)
}

// replyHold holds back the replies of every connection while a shutdown
// writes its final snapshot. Connections wait in client.syncLog, which
// every reply passes before it is written, holding no lock.
type replyHold struct {
	done    chan struct{} // closed when the outcome is known
	exiting bool          // the server is closing: the held replies are dropped (set before done closes)
}

// wait blocks until the shutdown's outcome is known and reports whether
// the held replies may be sent.
func (h *replyHold) wait() bool {
	<-h.done
	return !h.exiting
}

// Shutdown stops the server the way Redis does on SIGTERM or SHUTDOWN: when
// save rules exist (or opts.Save), it first writes the final snapshot while
// the server still serves, holding replies back meanwhile (see above). If
// that fails, Shutdown returns the error and the server keeps serving,
// unchanged, unless opts.Force. Otherwise, or when there is nothing to
// save, it closes the server as Close does (without saving again); Serve
// returns once everything has stopped. While the dataset is still loading
// nothing is saved (it would overwrite the snapshot with half of it).
func (s *Server) Shutdown(opts ShutdownOptions) error {
	p := &s.persist
	p.shutdownMu.Lock()
	defer p.shutdownMu.Unlock()
	if s.isClosed() {
		return nil
	}
	save := !opts.NoSave && (opts.Save || len(s.saveRules()) > 0) && !p.loading.Load()
	if !save {
		p.noSaveOnExit.Store(true)
		s.Close()
		return nil
	}
	hold := &replyHold{done: make(chan struct{})}
	p.hold.Store(hold)
	s.log.Info("saving the final snapshot before exiting")
	err := s.save(false)
	if err != nil && !opts.Force {
		p.hold.Store(nil)
		close(hold.done)
		s.log.Error("Error trying to save the DB, can't exit.", "err", err)
		return fmt.Errorf("final snapshot: %w", err)
	}
	if err != nil {
		s.log.Warn("Error trying to save the DB. Exit anyway.", "err", err)
	}
	p.noSaveOnExit.Store(true)
	s.Close()
	hold.exiting = true
	close(hold.done)
	return nil
}
