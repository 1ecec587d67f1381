package server

import "fmt"

// maxclients and the process's open files limit (RLIMIT_NOFILE), as Redis
// does it: every client costs a file descriptor, and the process keeps
// reservedFDs more for itself (the listener, the poller, log, snapshot and
// rewrite files). At start-up the server raises the soft limit to
// maxclients+reservedFDs when it is lower (up to the hard limit, or past
// it when the process is privileged); if the limit cannot carry that many,
// maxclients is lowered to limit-reservedFDs with a warning, and a limit
// of reservedFDs or less refuses to start. CONFIG SET maxclients makes the
// same attempt and is refused, naming the number the limit carries, when
// it falls short. Platforms without the limit (fdlimit_other.go) keep
// maxclients as configured.
//
// The adjustment only ever raises the limit, so a server started in a test
// process leaves that process's limit alone unless maxclients asks for
// more than it has.

// reservedFDs is how many descriptors the process keeps beyond one per
// client (Redis's CONFIG_MIN_RESERVED_FDS).
const reservedFDs = 32

// fdLimiter reads and sets the process's open files limit.
type fdLimiter interface {
	get() (cur, max uint64, err error)
	set(cur, max uint64) error
}

// fdFit is what fitFDLimit found and did.
type fdFit struct {
	clients  int    // the clients the limit carries: the wanted number when it suffices
	limit    uint64 // the soft limit afterwards
	oldLimit uint64 // the soft limit before
	err      error  // why the limit could not be read or raised as far as wanted
}

// fitFDLimit raises l's soft limit toward clients+reservedFDs if it is
// lower, and reports how many clients the limit then carries. A limit that
// cannot be read counts as 1024, as in Redis. With no limiter (nil) the
// wanted number is kept.
func fitFDLimit(l fdLimiter, clients int) fdFit {
	if l == nil {
		return fdFit{clients: clients}
	}
	want := uint64(clients) + reservedFDs
	cur, hard, err := l.get()
	if err != nil {
		return fdFit{clients: min(clients, 1024-reservedFDs), limit: 1024, oldLimit: 1024,
			err: fmt.Errorf("reading the open files limit: %w", err)}
	}
	fit := fdFit{clients: clients, limit: cur, oldLimit: cur}
	if cur >= want {
		return fit
	}
	// Past the hard limit only a privileged process may go; then to the
	// hard limit at least.
	err = l.set(want, max(want, hard))
	if err == nil {
		fit.limit = want
		return fit
	}
	fit.err = fmt.Errorf("setting the open files limit to %d: %w", want, err)
	if hard > cur && hard < want && l.set(hard, hard) == nil {
		fit.limit = hard
	}
	if fit.limit <= reservedFDs {
		fit.clients = 0
	} else {
		fit.clients = int(fit.limit - reservedFDs)
	}
	return fit
}

// fitMaxClients runs at start-up: it fits the open files limit to
// maxclients and lowers maxclients if the limit falls short, logging what
// it did. An error means the limit is too low to start at all.
func (s *Server) fitMaxClients() error {
	s.fdMu.Lock()
	defer s.fdMu.Unlock()
	want := int(s.maxClients.Load())
	fit := fitFDLimit(s.fdLimiter, want)
	switch {
	case fit.clients < 1:
		return fmt.Errorf("the open files limit (ulimit -n) of %d is not enough to start; raise it to at least %d",
			fit.oldLimit, uint64(want)+reservedFDs)
	case fit.clients < want:
		s.maxClients.Store(int64(fit.clients))
		s.log.Warn("maxclients reduced to fit the open files limit; raise 'ulimit -n' for more clients",
			"maxclients_requested", want, "maxclients", fit.clients, "open_files_limit", fit.limit,
			"reserved_fds", reservedFDs, "err", fit.err)
	case fit.limit > fit.oldLimit:
		s.log.Info("increased the open files limit", "from", fit.oldLimit, "to", fit.limit)
	case fit.err != nil:
		s.log.Warn("cannot read the open files limit; assuming 1024", "err", fit.err)
	}
	return nil
}

// checkMaxClients is CONFIG SET maxclients's check: the open files limit,
// raised if need be, must carry n clients.
func (s *Server) checkMaxClients(n int) error {
	s.fdMu.Lock()
	defer s.fdMu.Unlock()
	fit := fitFDLimit(s.fdLimiter, n)
	if fit.clients < n {
		s.log.Warn("CONFIG SET maxclients refused: the open files limit is too low",
			"maxclients_requested", n, "open_files_limit", fit.limit, "err", fit.err)
		return configError(fmt.Sprintf("The operating system is not able to handle the specified number of clients, try with %d", fit.clients))
	}
	if fit.limit > fit.oldLimit {
		s.log.Info("increased the open files limit", "from", fit.oldLimit, "to", fit.limit)
	}
	return nil
}
