package server

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/turnstile/turnstile/clock"
	"github.com/turnstile/turnstile/resp"
)

// testEpoch is the manual clock's start: 2023-11-14T22:13:20Z.
const testEpoch = int64(1_700_000_000_000_000_000)

// newTestServer starts a server on a free loopback port with a manual clock
// and returns it once loaded; it is closed when the test ends. mod may
// adjust the config.
func newTestServer(t testing.TB, mod ...func(*Config)) (*Server, string, *clock.Manual) {
	t.Helper()
	clk := clock.NewManual(testEpoch)
	s, addr, done := startServer(t, func(c *Config) {
		c.Clock = clk
		for _, m := range mod {
			m(c)
		}
	})
	select {
	case <-s.Ready():
	case err := <-done:
		t.Fatalf("server stopped while loading: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("server did not finish loading")
	}
	t.Cleanup(func() {
		s.Close()
		waitServe(t, done, "server did not stop", t.Errorf)
	})
	return s, addr, clk
}

// waitServe waits up to 5 s for Serve's result on done and reports an
// error or the timeout (with msg) through fail.
func waitServe(t testing.TB, done <-chan error, msg string, fail func(string, ...any)) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			fail("serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		fail("%s", msg)
	}
}

// startServer builds a test config (free port, 16 shards, logs discarded),
// lets mod adjust it, and runs Serve in a goroutine whose result arrives on
// done. It does not wait for loading.
func startServer(t testing.TB, mod func(*Config)) (*Server, string, chan error) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Port = 0
	cfg.Shards = 16
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	mod(&cfg)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), ln) }()
	return s, ln.Addr().String(), done
}

// rawConn is a minimal RESP client for tests that need exact bytes.
type rawConn struct {
	t  testing.TB
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, br: bufio.NewReader(c)}
}

// send writes raw bytes.
func (r *rawConn) send(s string) {
	r.t.Helper()
	r.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.c.Write([]byte(s)); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// do sends a command as a RESP array and returns the raw reply.
func (r *rawConn) do(args ...string) string {
	r.t.Helper()
	r.send(encodeCommand(args...))
	return r.readReply()
}

func encodeCommand(args ...string) string {
	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	return string(resp.AppendRequest(nil, bs...))
}

// readReply reads one complete RESP2/RESP3 reply and returns its raw bytes.
func (r *rawConn) readReply() string {
	r.t.Helper()
	r.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	s, err := readRawReply(r.br)
	if err != nil {
		r.t.Fatalf("read reply: %v", err)
	}
	return s
}

// expectClosed checks that the server closes the connection.
func (r *rawConn) expectClosed() {
	r.t.Helper()
	r.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if b, err := r.br.ReadByte(); err == nil {
		r.t.Fatalf("connection still open, got byte %q", b)
	}
}

func readRawReply(br *bufio.Reader) (string, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return "", err
	}
	if len(line) < 3 {
		return line, nil
	}
	n := 0
	neg := false
	for _, c := range line[1 : len(line)-2] {
		if c == '-' {
			neg = true
			continue
		}
		if c < '0' || c > '9' {
			n = -1
			break
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -1
	}
	switch line[0] {
	case '$', '=', '!':
		if n < 0 {
			return line, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return "", err
		}
		return line + string(buf), nil
	case '*', '~', '>', '%', '|':
		if n < 0 {
			return line, nil
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		out := line
		for i := 0; i < n; i++ {
			s, err := readRawReply(br)
			if err != nil {
				return "", err
			}
			out += s
		}
		return out, nil
	}
	return line, nil
}
