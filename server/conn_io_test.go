package server

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
)

// These tests exercise the connection loops on sockets: the raw loop
// (serveRaw, Linux) waits for readability after a short read instead of
// reading again, so every way input can be split, delayed or cut off must
// still be read, and every way a connection can end must still wake it. Each
// test also runs against the portable loop (serveStream), which other
// platforms use for sockets, as the subtests "raw" and "stream".

// connLoops are the connection loops the socket tests run against.
var connLoops = []struct {
	name     string
	portable bool // Config.portableConnLoop
}{{"raw", false}, {"stream", true}}

// eachConnLoop runs f once per connection loop, as a subtest; loop sets the
// config to that loop. The raw loop is skipped where the platform has none.
func eachConnLoop(t *testing.T, f func(t *testing.T, loop func(*Config))) {
	t.Helper()
	for _, l := range connLoops {
		t.Run(l.name, func(t *testing.T) {
			if !l.portable && !rawLoopSupported {
				t.Skip("no raw socket loop on " + runtime.GOOS)
			}
			f(t, func(c *Config) { c.portableConnLoop = l.portable })
		})
	}
}

// Each loop serves the connections it is chosen for: while a command runs,
// the client holds the socket's descriptor in the raw loop only (flush
// writes with raw system calls then, with net.Conn.Write otherwise).
func TestConnLoopSelection(t *testing.T) {
	eachConnLoop(t, func(t *testing.T, loop func(*Config)) {
		probe := &Command{Name: "test.rawfd", Arity: 1, Flags: command.Fast,
			Handler: func(x *Ctx) { x.w.Int(int64(boolInt(x.c.fd >= 0))) }}
		s, addr, _ := newTestServer(t, loop, func(c *Config) { c.extraCommands = []*Command{probe} })
		want := ":0\r\n"
		if !s.cfg.portableConnLoop {
			want = ":1\r\n"
		}
		c := dialRaw(t, addr)
		if got := c.do("TEST.RAWFD"); got != want {
			t.Fatalf("descriptor held while a command runs: %q, want %q", got, want)
		}
		// A reply larger than maxPendingReply is flushed in the middle of a
		// pipeline, by the loop's own write path.
		big := strings.Repeat("z", 3*maxPendingReply)
		c.send(encodeCommand("ECHO", big) + encodeCommand("TEST.RAWFD"))
		if got := c.readReply(); got != fmt.Sprintf("$%d\r\n%s\r\n", len(big), big) {
			t.Fatalf("ECHO of %d bytes: %d bytes back", len(big), len(got))
		}
		if got := c.readReply(); got != want {
			t.Fatalf("after a large reply: %q, want %q", got, want)
		}
	})
}

// waitClients waits until the server has n connections.
func waitClients(t *testing.T, s *Server, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for s.Clients() != n {
		if time.Now().After(deadline) {
			t.Fatalf("server has %d clients, want %d", s.Clients(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// A request that arrives a few bytes at a time, with pauses long enough for
// the connection to wait for input between the pieces, is parsed whole.
func TestConnRequestInSmallPiecesWithPauses(t *testing.T) {
	eachConnLoop(t, testConnRequestInSmallPiecesWithPauses)
}

func testConnRequestInSmallPiecesWithPauses(t *testing.T, loop func(*Config)) {
	_, addr, _ := newTestServer(t, loop)
	c := dialRaw(t, addr)
	req := encodeCommand("SET", "k", strings.Repeat("v", 40)) + encodeCommand("GET", "k") + "PING\r\n"
	for i := 0; i < len(req); {
		n := min(1+rand.IntN(5), len(req)-i)
		c.send(req[i : i+n])
		i += n
		if rand.IntN(3) > 0 {
			time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
		}
	}
	if got := c.readReply(); got != "+OK\r\n" {
		t.Fatalf("SET: %q", got)
	}
	if got := c.readReply(); got != "$40\r\n"+strings.Repeat("v", 40)+"\r\n" {
		t.Fatalf("GET: %q", got)
	}
	if got := c.readReply(); got != "+PONG\r\n" {
		t.Fatalf("PING: %q", got)
	}
}

// A pipeline much larger than the read buffer and the socket buffers, sent
// while the replies are read concurrently, gets every reply in order. So
// does one bulk argument that needs many reads.
func TestConnPipelineLargerThanReadBuffer(t *testing.T) {
	eachConnLoop(t, testConnPipelineLargerThanReadBuffer)
}

func testConnPipelineLargerThanReadBuffer(t *testing.T, loop func(*Config)) {
	_, addr, _ := newTestServer(t, loop)
	c := dialRaw(t, addr)
	const n = 20000
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(encodeCommand("ECHO", fmt.Sprintf("%d-%s", i, strings.Repeat("x", i%200))))
	}
	big := strings.Repeat("0123456789", 300_000) // 3 MB in one argument
	b.WriteString(encodeCommand("SET", "big", big))
	b.WriteString(encodeCommand("STRLEN", "big"))
	req := b.String()
	if len(req) < 100*resp.InitialReadBuf {
		t.Fatalf("pipeline of %d bytes is too small for this test", len(req))
	}
	errc := make(chan error, 1)
	go func() {
		c.c.SetWriteDeadline(time.Now().Add(20 * time.Second))
		_, err := c.c.Write([]byte(req))
		errc <- err
	}()
	c.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	for i := 0; i < n; i++ {
		got, err := readRawReply(c.br)
		if err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		want := fmt.Sprintf("%d-%s", i, strings.Repeat("x", i%200))
		if got != fmt.Sprintf("$%d\r\n%s\r\n", len(want), want) {
			t.Fatalf("reply %d: %q", i, got)
		}
	}
	if got, err := readRawReply(c.br); err != nil || got != "+OK\r\n" {
		t.Fatalf("SET big: %q %v", got, err)
	}
	if got, err := readRawReply(c.br); err != nil || got != fmt.Sprintf(":%d\r\n", len(big)) {
		t.Fatalf("STRLEN big: %q %v", got, err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// Clients that send their next request before the previous reply arrives,
// in pieces of random size at random moments, never leave input unread: a
// lost wake-up would stall a client until the test times out.
func TestConnAsyncPipeliningNeverStalls(t *testing.T) {
	eachConnLoop(t, testConnAsyncPipeliningNeverStalls)
}

func testConnAsyncPipeliningNeverStalls(t *testing.T, loop func(*Config)) {
	_, addr, _ := newTestServer(t, loop)
	const clients, reqs = 8, 3000
	var wg sync.WaitGroup
	errs := make(chan error, 2*clients)
	for ci := 0; ci < clients; ci++ {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(30 * time.Second))
		wg.Add(2)
		go func() { // writer: requests cut at random points, random pauses
			defer wg.Done()
			var buf []byte
			for i := 0; i < reqs; i++ {
				buf = append(buf, encodeCommand("ECHO", fmt.Sprintf("c%d-%d", ci, i))...)
				if rand.IntN(4) > 0 && i < reqs-1 {
					continue
				}
				for len(buf) > 0 {
					k := 1 + rand.IntN(len(buf))
					if _, err := nc.Write(buf[:k]); err != nil {
						errs <- err
						return
					}
					buf = buf[k:]
					if rand.IntN(8) == 0 {
						time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
					}
				}
			}
		}()
		go func() { // reader
			defer wg.Done()
			br := bufio.NewReader(nc)
			for i := 0; i < reqs; i++ {
				got, err := readRawReply(br)
				want := fmt.Sprintf("c%d-%d", ci, i)
				if err != nil || got != fmt.Sprintf("$%d\r\n%s\r\n", len(want), want) {
					errs <- fmt.Errorf("client %d reply %d: %q %v", ci, i, got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A client that closes in the middle of a request, with the connection
// waiting for the rest, is removed; the server keeps serving others.
func TestConnClientClosesMidCommand(t *testing.T) { eachConnLoop(t, testConnClientClosesMidCommand) }

func testConnClientClosesMidCommand(t *testing.T, loop func(*Config)) {
	s, addr, _ := newTestServer(t, loop)
	other := dialRaw(t, addr)
	if got := other.do("PING"); got != "+PONG\r\n" {
		t.Fatal(got)
	}
	c := dialRaw(t, addr)
	if got := c.do("PING"); got != "+PONG\r\n" {
		t.Fatal(got)
	}
	c.send("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\nabc")
	time.Sleep(20 * time.Millisecond) // the server has read the piece and waits
	c.c.Close()
	waitClients(t, s, 1)
	if got := other.do("EXISTS", "k"); got != ":0\r\n" {
		t.Fatalf("EXISTS k after a cut request: %q", got)
	}
	// A client that half-closes (shuts down writing) right after its last
	// requests gets their replies, then the server closes too. The FIN
	// often arrives with the data, before the server reads it; then the
	// read that empties the socket does not report it. Repeated, so that
	// both orders happen.
	for i := 0; i < 20; i++ {
		h := dialRaw(t, addr)
		h.send(encodeCommand("PING") + encodeCommand("ECHO", "bye"))
		h.c.(*net.TCPConn).CloseWrite()
		if got := h.readReply(); got != "+PONG\r\n" {
			t.Fatal(got)
		}
		if got := h.readReply(); got != "$3\r\nbye\r\n" {
			t.Fatal(got)
		}
		h.c.SetReadDeadline(time.Now().Add(peerCloseBound))
		if b, err := h.br.ReadByte(); err == nil {
			t.Fatalf("got byte %q after the replies", b)
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("half-closed connection %d still open after %v", i, peerCloseBound)
		}
		h.c.Close()
	}
	waitClients(t, s, 1)
}

// Close ends idle connections waiting for input, a connection waiting for
// the rest of a request, and one whose reply write is blocked because the
// client does not read; it does not wait for any of them to send anything.
func TestConnCloseEndsWaitingConnections(t *testing.T) {
	eachConnLoop(t, testConnCloseEndsWaitingConnections)
}

func testConnCloseEndsWaitingConnections(t *testing.T, loop func(*Config)) {
	s, addr, done := startServer(t, loop)
	<-s.Ready()
	var idle []*rawConn
	for i := 0; i < 5; i++ {
		c := dialRaw(t, addr)
		if got := c.do("PING"); got != "+PONG\r\n" {
			t.Fatal(got)
		}
		idle = append(idle, c)
	}
	partial := dialRaw(t, addr)
	partial.send("*2\r\n$4\r\nECHO\r\n$5\r\nab")
	// A client that sends requests with large replies and reads none: the
	// server's write blocks once the socket buffers are full.
	stuck := dialRaw(t, addr)
	stuck.do("SET", "big", strings.Repeat("x", 1<<20))
	go func() {
		for i := 0; i < 64; i++ {
			stuck.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if _, err := stuck.c.Write([]byte(encodeCommand("GET", "big"))); err != nil {
				return
			}
		}
	}()
	time.Sleep(100 * time.Millisecond)
	waitClients(t, s, 7)

	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	waitServe(t, done, "Serve did not return after Close", t.Fatalf)
	if n := s.Clients(); n != 0 {
		t.Fatalf("%d clients left", n)
	}
	for _, c := range append(idle, partial) {
		c.expectClosed()
	}
	// The server may close with requests still unread, so the stuck
	// client can see a reset instead of the end of the stream; either way
	// the connection must end, not time out.
	stuck.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.Copy(io.Discard, stuck.c); err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("stuck client: %v", err)
		}
	}
}

// SHUTDOWN from one client ends the server while other clients sit idle in
// the wait for input.
func TestConnShutdownWithIdleClients(t *testing.T) { eachConnLoop(t, testConnShutdownWithIdleClients) }

func testConnShutdownWithIdleClients(t *testing.T, loop func(*Config)) {
	s, addr, done := startServer(t, loop)
	<-s.Ready()
	for i := 0; i < 3; i++ {
		c := dialRaw(t, addr)
		c.do("PING")
	}
	c := dialRaw(t, addr)
	c.send(encodeCommand("SHUTDOWN", "NOSAVE"))
	waitServe(t, done, "server did not stop after SHUTDOWN", t.Fatalf)
	c.expectClosed()
}

// Replies larger than the socket buffers, to a client that reads slowly:
// the server's write finds the socket full and must wait for room, then
// finish the reply, byte for byte.
func TestConnLargeRepliesToSlowReader(t *testing.T) {
	eachConnLoop(t, testConnLargeRepliesToSlowReader)
}

func testConnLargeRepliesToSlowReader(t *testing.T, loop func(*Config)) {
	_, addr, _ := newTestServer(t, loop)
	c := dialRaw(t, addr)
	val := strings.Repeat("abcdefghij", 200_000) // 2 MB
	if got := c.do("SET", "big", val); got != "+OK\r\n" {
		t.Fatal(got)
	}
	const n = 4
	c.send(strings.Repeat(encodeCommand("GET", "big"), n) + encodeCommand("PING"))
	time.Sleep(50 * time.Millisecond) // let the server fill the socket buffers
	c.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	want := fmt.Sprintf("$%d\r\n%s\r\n", len(val), val)
	buf := make([]byte, len(want))
	for i := 0; i < n; i++ {
		for off := 0; off < len(buf); {
			k := min(len(buf)-off, 64<<10)
			m, err := io.ReadFull(c.br, buf[off:off+k])
			if err != nil {
				t.Fatalf("reply %d: %v", i, err)
			}
			off += m
			if off%(512<<10) < k {
				time.Sleep(2 * time.Millisecond)
			}
		}
		if string(buf) != want {
			t.Fatalf("reply %d differs", i)
		}
	}
	if got := c.readReply(); got != "+PONG\r\n" {
		t.Fatal(got)
	}
}
