package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"
)

// A failed accept is not the end of the server. Running out of file
// descriptors (EMFILE, ENFILE), of buffers (ENOBUFS, ENOMEM), or a
// connection aborted before it was taken (ECONNABORTED) all pass once
// connections close, and a server that exits on them drops every client
// it has. So Serve stops only when its listener is closed; after any other
// accept error it waits and tries again, as net/http's Server does: 5 ms
// after the first failure, doubling up to 1 s while failures go on, and
// from 0 again after an accept succeeds. The pending connections wait in
// the listen backlog meanwhile.
//
// The log hears of a failure at once, then at most every acceptLogEvery
// with the number of failures since the last report: a streak of EMFILE,
// or accepts that fail and succeed in turn while descriptors are scarce,
// does not flood it.

const (
	acceptDelayMin = 5 * time.Millisecond
	acceptDelayMax = time.Second
	acceptLogEvery = 10 * time.Second
)

// acceptRetry is the accept loop's state between failures. Owned by the
// accept loop.
type acceptRetry struct {
	delay    time.Duration // the last wait; 0 after a success
	unlogged int           // failures not reported yet
	lastLog  time.Time     // the last report; zero: none yet
}

// failed records a failed accept and returns how long to wait before the
// next one.
func (r *acceptRetry) failed(log *slog.Logger, err error, now time.Time) time.Duration {
	r.delay = min(max(2*r.delay, acceptDelayMin), acceptDelayMax)
	r.unlogged++
	if r.lastLog.IsZero() || now.Sub(r.lastLog) >= acceptLogEvery {
		log.Warn("accepting a connection failed; retrying", "err", err,
			"failures", r.unlogged, "retry_in", r.delay)
		r.unlogged, r.lastLog = 0, now
	}
	return r.delay
}

// ok records a successful accept: the next failure waits the least again.
func (r *acceptRetry) ok() { r.delay = 0 }

// acceptLoop accepts connections on ln until the server is closed (nil),
// or until ln is closed by something else: then it closes the server and
// returns why.
func (s *Server) acceptLoop(ln net.Listener) error {
	var retry acceptRetry // every error but a closed listener passes
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isClosed() {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				s.Close()
				return fmt.Errorf("accept: %w", err)
			}
			t := time.NewTimer(retry.failed(s.log, err, time.Now()))
			select {
			case <-t.C:
			case <-s.stop:
				t.Stop()
			}
			continue
		}
		retry.ok()
		s.accept(nc)
	}
}

// reject writes msg to a connection the server does not serve (maxclients,
// protected mode) and closes it, giving it at most a second. A TLS
// connection first needs its handshake, a round trip with the peer: that
// is done in a goroutine of its own, not in the accept loop.
func (s *Server) reject(nc net.Conn, msg string) {
	s.stats.rejectedConns.Add(1)
	write := func() {
		nc.SetDeadline(time.Now().Add(time.Second))
		nc.Write([]byte(msg))
		closeConn(nc)
	}
	if _, ok := nc.(*tls.Conn); ok {
		s.goFunc(write)
		return
	}
	write()
}

// closeConn closes a connection without waiting for the peer: a TLS
// connection is closed under its TLS layer, as tls.Conn.Close would first
// send a close_notify alert and could wait up to 5 s for room to write it.
func closeConn(nc net.Conn) {
	if tc, ok := nc.(*tls.Conn); ok {
		tc.NetConn().Close()
		return
	}
	nc.Close()
}
