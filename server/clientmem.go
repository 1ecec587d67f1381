package server

import (
	"sync/atomic"

	"github.com/turnstile/turnstile/resp"
)

// Client buffer memory: what the connections' query (input) buffers, reply
// buffers and outbound queues (outq.go) hold, kept up to date as it
// changes so that clientBufferBytes is cheap to call often (maxmemory
// accounting, INFO memory's mem_clients_normal).
//
// Each connection's goroutine accounts its own input and reply buffers
// (noteBuffers, after every batch and before a reply is written, so a
// large request shows while it arrives and a large reply while it waits to
// be written), and the outbound queue is accounted by whoever changes it,
// under its mutex. The totals are striped by client id so that connections
// on different CPUs do not contend on one cache line; a reader sums the
// stripes.
//
// The bytes of large buffers given back (a connection's buffers beyond
// smallClientBuffers when it shrinks them or ends) are counted too:
// memReleaser returns memory to the OS after a lot of that, since the Go
// heap keeps freed buffers until a collection that an idle server may not
// run for minutes (memrelease.go).

// smallClientBuffers is how much buffer memory a connection holds in the
// ordinary course (input buffer, reply buffer and a spare of its queue);
// only what it gives back beyond that counts as a large buffer freed.
const smallClientBuffers = 4*resp.InitialReadBuf + 4*maxPendingReply

const clientMemStripes = 32

// clientMem is the server's total of client buffer bytes.
type clientMem struct {
	held  [clientMemStripes]paddedInt64 // bytes held now
	freed [clientMemStripes]paddedInt64 // large buffer bytes given back, ever
}

type paddedInt64 struct {
	atomic.Int64
	_ [56]byte
}

func (m *clientMem) add(id, n int64) { m.held[uint64(id)%clientMemStripes].Add(n) }

func (m *clientMem) addFreed(id, n int64) { m.freed[uint64(id)%clientMemStripes].Add(n) }

func sumStripes(st *[clientMemStripes]paddedInt64) int64 {
	var n int64
	for i := range st {
		n += st[i].Load()
	}
	return n
}

// clientBufferBytes is the total bytes of every client's query (input)
// and output buffers now held: input buffers, reply buffers (pending
// replies, and the buffer kept for the next ones) and outbound queues
// (undelivered pub/sub messages and invalidations). Cheap: it sums a few
// atomics.
func (s *Server) clientBufferBytes() int64 { return sumStripes(&s.clientMem.held) }

// clientBytesFreed is the bytes of large client buffers given back since
// start-up (memrelease.go watches it).
func (s *Server) clientBytesFreed() int64 { return sumStripes(&s.clientMem.freed) }

// noteBuffers brings the server's total up to date with the connection's
// input and reply buffers. Owner goroutine only; an atomic add only when
// their sizes changed.
func (c *client) noteBuffers() {
	n := int64(c.rd.Size()) + int64(c.w.Cap())
	if n == c.bufHeld {
		return
	}
	c.s.clientMem.add(c.id, n-c.bufHeld)
	if freed := c.bufHeld - max(n, smallClientBuffers); freed > 0 {
		c.s.clientMem.addFreed(c.id, freed)
	}
	c.bufHeld = n
}

// dropBuffers accounts the end of the connection: its buffers are garbage.
func (c *client) dropBuffers() {
	c.s.clientMem.add(c.id, -c.bufHeld)
	if c.bufHeld > smallClientBuffers {
		c.s.clientMem.addFreed(c.id, c.bufHeld-smallClientBuffers)
	}
	c.bufHeld = 0
}
