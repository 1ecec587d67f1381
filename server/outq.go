package server

import (
	"sync"
	"sync/atomic"
	"time"
)

// The outbound queue: how one connection hands output to another.
//
// Pub/sub messages and client-side caching invalidations are produced by
// the connection that runs PUBLISH or the write, and belong on another
// connection's socket. The producer never writes that socket (it could
// block on a slow reader) and never touches the target's reply Writer
// (owned by the target's goroutine). It appends the encoded frame to the
// target's outQueue under the queue's mutex, and, unless a wake-up is
// already armed, wakes the target's goroutine by setting the target's read
// deadline in the past: both connection loops (the raw loop of
// conn_raw_linux.go and the portable serveStream) wait for input in a read
// that a deadline interrupts, and both treat an expired deadline on a live
// connection as "drain the queue, clear the deadline, read again". Nothing
// is held while the deadline is set, and setting it does not block.
//
// Only the connection's own goroutine writes its socket: flush writes the
// pending replies (client.w) first and then what the queue holds. So a
// reply produced before an invalidation was queued reaches the client
// before that invalidation (a client that cached a value read before a
// write always hears of the write after the value), and a SUBSCRIBE's
// confirmation, written while the subscription is registered, precedes
// every message of the channel. UNSUBSCRIBE moves the queue into its reply
// stream before answering, so the channel's queued messages come first.
//
// The queue is bounded by client-output-buffer-limit's pubsub class
// (outlimit.go; default 32mb hard, 8mb for 60 s soft), as Redis bounds a
// subscriber's output: a connection whose undelivered output from other
// connections (queued, plus taken and still being written) would reach the
// hard limit, or stays at or above the soft limit for longer than its
// seconds, is disconnected and its queue dropped. A slow subscriber
// therefore costs at most the hard limit of memory, and a publisher never
// waits for it. The queue's bytes count in the server's client buffer
// memory (clientmem.go).

// outQueue is one connection's output from other connections.
type outQueue struct {
	mu       sync.Mutex
	buf      []byte    // frames not yet taken by the connection
	spare    []byte    // a written buffer kept for reuse
	pending  int       // len(buf) plus bytes taken and not yet written
	softFrom time.Time // since when pending is at or above the soft limit (zero: it is not)
	wake     bool      // a wake-up (expired read deadline) is armed and not yet consumed
	closed   bool      // the connection ended or overflowed: frames are dropped
	has      atomic.Bool

	mem *clientMem // where pending is accounted, under the client's id
	id  int64
}

// addPending changes pending by n and the server's account with it. mu is
// held.
func (q *outQueue) addPending(n int) {
	q.pending += n
	q.mem.add(q.id, int64(n))
}

// dropBuf drops the frames not yet taken. mu is held.
func (q *outQueue) dropBuf() {
	if len(q.buf) > 4*maxPendingReply {
		q.mem.addFreed(q.id, int64(len(q.buf)))
	}
	q.addPending(-len(q.buf))
	q.buf, q.spare = nil, nil
	q.has.Store(false)
}

// push queues frame b for c's connection. from is the connection running
// the producing command (nil for none): pushing to itself needs no wake-up,
// as it writes its queue when it flushes its replies.
func (c *client) push(from *client, b []byte) {
	q := &c.out
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	if n := q.pending + len(b); c.s.outputLimit(classPubSub).exceeds(int64(n), &q.softFrom) {
		q.closed = true
		q.dropBuf()
		q.mu.Unlock()
		c.overOutputLimit(classPubSub, int64(n), "undelivered pub/sub and invalidation output")
		c.kill()
		return
	}
	q.buf = append(q.buf, b...)
	q.addPending(len(b))
	q.has.Store(true)
	wake := c != from && !q.wake
	if wake {
		q.wake = true
	}
	q.mu.Unlock()
	if wake {
		c.conn.SetReadDeadline(time.Unix(1, 0))
	}
}

// take removes the queued frames; done must be called with their length
// once they are written (or dropped).
func (q *outQueue) take() []byte {
	q.mu.Lock()
	b := q.buf
	q.buf, q.spare = q.spare, nil
	q.wake = false
	q.has.Store(false)
	q.mu.Unlock()
	return b
}

// done accounts for n taken bytes written, keeping a small buffer.
func (q *outQueue) done(b []byte) {
	q.mu.Lock()
	q.addPending(-len(b))
	if q.pending == 0 {
		q.softFrom = time.Time{} // all written: a later episode is timed afresh
	}
	if !q.closed && q.spare == nil && cap(b) <= 4*maxPendingReply {
		q.spare = b[:0]
	} else if len(b) > 4*maxPendingReply {
		q.mem.addFreed(q.id, int64(len(b)))
	}
	q.mu.Unlock()
}

// close drops the queue: the connection is ending. Bytes taken and not
// yet written are accounted by their done.
func (q *outQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.dropBuf()
	q.mu.Unlock()
}

// flushOut writes what the queue holds (one batch: frames queued meanwhile
// arm a new wake-up). false means the connection is gone.
func (c *client) flushOut() bool {
	b := c.out.take()
	if len(b) == 0 {
		return true
	}
	ok := c.writeLimited(b, classPubSub)
	c.out.done(b)
	return ok
}

// takeOut moves the queued frames into the reply stream (c.w), after the
// replies already there: UNSUBSCRIBE uses it so that the messages queued
// for a channel precede the confirmation of leaving it.
func (c *client) takeOut() {
	if !c.out.has.Load() {
		return
	}
	b := c.out.take()
	c.w.Append(b)
	c.out.done(b)
}

// woken handles an expired read deadline on a live connection: a wake-up
// from push (or the raw loop's recheck). It clears the deadline, then
// writes the queue; the order matters, as a push after the clearing arms
// a new wake-up unless it finds its frames taken by this call. false means
// the connection is gone.
func (c *client) woken() bool {
	c.recheckAt = time.Time{}
	if err := c.conn.SetReadDeadline(time.Time{}); err != nil {
		return false
	}
	if c.killed.Load() { // kill's deadline may just have been cleared
		return false
	}
	if c.out.has.Load() {
		return c.flushOut()
	}
	return true
}
