package server

import (
	"io"
	"log/slog"
	"net"
	"strconv"
	"testing"

	"github.com/turnstile/turnstile/clock"
)

// newBenchClient returns a server and a client whose connection is never
// used: requests are fed straight into its reader.
func newBenchClient(b *testing.B) (*Server, *client) {
	cfg := DefaultConfig()
	cfg.Clock = clock.NewMonotonic()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	c1, c2 := net.Pipe()
	b.Cleanup(func() { c1.Close(); c2.Close() })
	return s, newClient(s, c1)
}

// BenchmarkThrottlePath measures the whole in-process command path for
// CL.THROTTLE on existing keys: RESP parse, lookup, lock, GCRA decision,
// store, reply. It must not allocate.
func BenchmarkThrottlePath(b *testing.B) {
	s, c := newBenchClient(b)
	const nkeys = 1024
	reqs := make([][]byte, nkeys)
	for i := range reqs {
		reqs[i] = []byte(encodeCommand("CL.THROTTLE", "user:"+strconv.Itoa(i), "15", "30", "60"))
	}
	run := func(req []byte) {
		n := copy(c.rd.buf, req)
		c.rd.r, c.rd.w = 0, n
		args, ok, err := c.rd.next(false)
		if !ok || err != nil {
			b.Fatal("parse failed", err)
		}
		s.handle(c, args)
		c.w.b = c.w.b[:0]
	}
	for _, r := range reqs { // create the keys first
		run(r)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run(reqs[i%nkeys])
	}
}

// newFuzzClient is newBenchClient for fuzz targets.
func newFuzzClient(f *testing.F) (*Server, *client) {
	cfg := DefaultConfig()
	cfg.Clock = clock.NewMonotonic()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := New(cfg)
	if err != nil {
		f.Fatal(err)
	}
	c1, c2 := net.Pipe()
	f.Cleanup(func() { c1.Close(); c2.Close() })
	return s, newClient(s, c1)
}

// BenchmarkParseThrottleRequest measures the RESP parse of one CL.THROTTLE
// request (without allocations).
func BenchmarkParseThrottleRequest(b *testing.B) {
	req := []byte(encodeCommand("CL.THROTTLE", "user:0000000042", "15", "30", "60"))
	rd := newReader(DefaultLimits)
	b.ReportAllocs()
	b.SetBytes(int64(len(req)))
	for i := 0; i < b.N; i++ {
		n := copy(rd.buf, req)
		rd.r, rd.w = 0, n
		if args, ok, err := rd.next(false); !ok || err != nil || len(args) != 5 {
			b.Fatal("parse failed")
		}
	}
}
