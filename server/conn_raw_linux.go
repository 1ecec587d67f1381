//go:build linux

package server

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// The raw socket loop, Linux only: serveRaw reads and writes the socket
// with raw read(2) and write(2) calls inside syscall.RawConn.Read. Other
// platforms serve every connection with the portable serveStream loop
// (conn_raw_other.go).

// rawLoopSupported reports whether serveRawConn can serve sockets here.
const rawLoopSupported = true

// serveRawConn serves the connection with serveRaw if it has a file
// descriptor (a TCP or Unix socket) and returns what serveRaw returned.
// served is false, and nothing has been read, otherwise; the caller then
// uses serveStream.
func (c *client) serveRawConn() (served bool, err error) {
	sc, ok := c.conn.(syscall.Conn)
	if !ok {
		return false, nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false, nil
	}
	return true, c.serveRaw(rc)
}

// serveRaw is the connection loop for sockets. It saves the system call a
// net.Conn.Read loop spends per request on a read that only returns EAGAIN:
// a read that returned less than it asked for emptied the socket, so after
// running the requests and writing the replies the loop waits for the
// socket to become readable instead of reading again.
//
// The loop runs inside RawConn.Read, and that is what makes the wait safe
// with Go's edge-triggered poller. RawConn.Read clears the descriptor's
// readiness once, before its first call of the callback, and then
// alternates: callback, wait for readiness, callback, ... Readiness that
// arrives after the clearing is kept until the next wait consumes it. So
// each wait must follow a read, made after the clearing, that emptied the
// socket; a new RawConn.Read per request would clear readiness that data
// arriving since the last read had set, and that data would sit unread. The
// callback therefore always reads first (also after a spurious wake-up,
// where the read returns EAGAIN and it waits again), waits only after a
// short read or EAGAIN, and reads again at once after a read that filled
// the free space (more may be queued).
//
// A short read proves that no data is queued, but not that nothing else is
// pending: a FIN (or reset) that arrived with the last data is reported by
// the next read, and its readiness was used up by the wake-up that read the
// data. No further event comes, so after a short read the loop arms a read
// deadline (idleRecheck ahead, renewed only when half of it is gone): when
// it expires the loop leaves RawConn.Read and enters it again, which reads
// before it waits. An idle connection thus makes one more read, and a peer's
// close that came with its last request is seen within idleRecheck; the
// next wait, after a read that returned EAGAIN, needs no deadline.
//
// While the callback runs, the connection holds the descriptor's read lock,
// and net.Conn.Close would block until the loop returns; so the server ends
// a connection with kill (a flag and an expired deadline), never by closing
// it from another goroutine.
func (c *client) serveRaw(rc syscall.RawConn) error {
	var ioErr error
	done := false
	read := func(fd uintptr) bool {
		c.fd = int(fd)
		defer func() { c.fd = -1 }()
		for {
			if c.killed.Load() {
				ioErr = net.ErrClosed
				return true
			}
			b, err := c.rd.Space()
			if err != nil {
				ioErr = err
				return true
			}
			n, err := rawRead(fd, b)
			switch {
			case err == syscall.EINTR:
				continue
			case err == syscall.EAGAIN:
				return false // nothing queued: wait for readability
			case err != nil:
				ioErr = err
				return true
			case n == 0:
				ioErr = io.EOF
				return true
			}
			c.rd.Advance(n)
			if !c.process() {
				done = true
				return true
			}
			if n < len(b) { // the socket was empty: wait, then read
				if err := c.armRecheck(); err != nil {
					ioErr = err
					return true
				}
				// The recheck deadline may have replaced a wake-up's
				// (outq.go): write what was queued before waiting.
				if c.out.has.Load() && !c.flushOut() {
					ioErr = net.ErrClosed
					return true
				}
				return false
			}
		}
	}
	for {
		err := rc.Read(read)
		switch {
		case ioErr != nil:
			return ioErr
		case done:
			return nil
		case errors.Is(err, os.ErrDeadlineExceeded) && !c.killed.Load():
			// The recheck deadline, or a wake-up from another connection
			// that queued output (outq.go): write that, then enter again,
			// which reads first.
			if !c.woken() {
				return net.ErrClosed
			}
			// A blocked client's wake-up or timeout (blocking.go): its
			// command runs again, then the requests queued behind it.
			if c.blocked != nil && !c.process() {
				return nil
			}
		case err == nil:
			return nil
		default:
			return err
		}
	}
}

// idleRecheck is how long a connection waits for input after a short read
// before it reads once more (see serveRaw).
const idleRecheck = 200 * time.Millisecond

// armRecheck makes sure a read deadline at most idleRecheck ahead is set.
func (c *client) armRecheck() error {
	now := time.Now()
	if c.recheckAt.Sub(now) >= idleRecheck/2 {
		return nil
	}
	c.recheckAt = now.Add(idleRecheck)
	d := c.recheckAt
	if b := c.blocked; b != nil && !b.deadline.IsZero() && b.deadline.Before(d) {
		d = b.deadline // a blocked client's timeout comes first
	}
	if err := c.conn.SetReadDeadline(d); err != nil {
		return err
	}
	// kill sets its flag before its deadline: if this deadline replaced
	// kill's, the flag is already visible here.
	if c.killed.Load() {
		return net.ErrClosed
	}
	if c.blocked != nil && c.wakePending() { // likewise a blocked client's wake-up
		c.conn.SetReadDeadline(time.Unix(1, 0))
	}
	return nil
}

// writeRaw writes b to the socket with raw system calls (see rawRead), and
// leaves it to net.Conn.Write, which waits for room, when the socket's
// buffer is full. Only inside serveRaw's callback, where c.fd is valid.
func (c *client) writeRaw(b []byte) error {
	for len(b) > 0 {
		n, err := rawWrite(c.fd, b)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			_, err = c.conn.Write(b)
			return err
		case err != nil:
			return err
		}
		b = b[n:]
	}
	return nil
}

// rawRead and rawWrite are read(2) and write(2) on a non-blocking socket
// without the scheduler's entersyscall/exitsyscall. Such a call cannot block
// (it returns EAGAIN instead; waiting is left to the poller), so the
// scheduler need not hand the P to another thread while it runs, and the
// bookkeeping costs more than it saves: when the whole process was idle,
// sysmon has gone to sleep, and the first entersyscall wakes it (a futex
// call); woken that way, sysmon polls every 20 µs for the next millisecond
// or so, each time a context switch on the server's CPU when the server is
// pinned to one. At -P 1 with 50 clients that was 13k sysmon wake-ups, 6k
// futex calls and 31k of 57k context switches per 300k requests.
//
// The cost: while one of these calls runs, a stop-the-world phase waits for
// it (microseconds: a loopback write runs the receiver's side too).
func rawRead(fd uintptr, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

func rawWrite(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// peerGone reports whether the client has closed its side of the socket or
// the socket failed, without consuming input (MSG_PEEK): a forwarded
// blocking command checks it while it waits (forward.go). False when
// unknown (no descriptor, outside serveRaw's callback).
func (c *client) peerGone() bool {
	if c.fd < 0 {
		return false
	}
	var b [1]byte
	for {
		n, _, err := syscall.Recvfrom(c.fd, b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return false
		case err != nil:
			return true
		}
		return n == 0
	}
}
