package server

import (
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstile/turnstile/persistence"
)

// gateFS is the real file system, except that while armed every fsync of a
// file waits at a gate: it announces itself on entered and goes on when
// release is closed. Tests use it to look at the server while a write's
// fsync is in progress.
type gateFS struct {
	persistence.OSFS
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newGateFS() *gateFS {
	return &gateFS{entered: make(chan struct{}, 16), release: make(chan struct{})}
}

// open disarms the gate and lets every waiting fsync go on.
func (g *gateFS) open() {
	g.armed.Store(false)
	g.once.Do(func() { close(g.release) })
}

func (g *gateFS) OpenFile(name string, flag int, perm os.FileMode) (persistence.File, error) {
	f, err := g.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &gateFile{File: f, g: g}, nil
}

type gateFile struct {
	persistence.File
	g *gateFS
}

func (f *gateFile) Sync() error {
	if f.g.armed.Load() {
		f.g.entered <- struct{}{}
		<-f.g.release
	}
	return f.File.Sync()
}

// newGatedServer starts a server with appendonly yes, appendfsync always
// and a gateFS. The gate is opened when the test ends, before the server's
// cleanup, which would otherwise wait for a held fsync.
func newGatedServer(t *testing.T) (*Server, string, *gateFS) {
	gate := newGateFS()
	s, addr, _ := newTestServer(t, func(c *Config) {
		c.Persist.AppendOnly = true
		c.Persist.AppendFsync = persistence.FsyncAlways
		c.Persist.Dir = t.TempDir()
		c.Persist.FS = gate
	})
	t.Cleanup(gate.open)
	return s, addr, gate
}

// replyWithin reads one reply, or returns "" if none arrives within d.
func (r *rawConn) replyWithin(d time.Duration) string {
	r.t.Helper()
	r.c.SetReadDeadline(time.Now().Add(d))
	s, err := readRawReply(r.br)
	if err != nil {
		return ""
	}
	return s
}

// TestReadWaitsForDurability: under appendfsync always, a reply never shows
// data whose write has not been fsynced, whoever wrote it. Client A's SET
// is stuck in its fsync; client B's GET of that key, and B's DBSIZE (which
// reads every shard), must wait for that fsync, while a read of a shard the
// SET did not touch is answered at once. (Before the read watermark, B was
// answered "v1" while A's write could still be lost.)
func TestReadWaitsForDurability(t *testing.T) {
	s, addr, gate := newGatedServer(t)
	a, b := dialRaw(t, addr), dialRaw(t, addr)
	other := "other"
	for i := 0; s.dbs[0].ShardOf([]byte(other)) == s.dbs[0].ShardOf([]byte("k")); i++ {
		other = "other" + string(rune('a'+i))
	}
	if got := b.do("SET", other, "x"); got != "+OK\r\n" {
		t.Fatalf("SET %s = %q", other, got)
	}

	gate.armed.Store(true)
	a.send(encodeCommand("SET", "k", "v1"))
	select {
	case <-gate.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the SET's fsync never started")
	}
	if got := b.do("GET", other); got != "$1\r\nx\r\n" {
		t.Fatalf("GET of an untouched shard during the fsync = %q, want x at once", got)
	}
	b.send(encodeCommand("GET", "k"))
	if got := b.replyWithin(300 * time.Millisecond); got != "" {
		t.Fatalf("GET k answered %q while the SET's fsync was still running", got)
	}
	gate.open()
	if got := a.readReply(); got != "+OK\r\n" {
		t.Fatalf("SET = %q", got)
	}
	if got := b.readReply(); got != "$2\r\nv1\r\n" {
		t.Fatalf("GET k after the fsync = %q", got)
	}
}

// TestKeyspaceReadWaitsForDurability: DBSIZE, KEYS and SCAN read every
// shard, so they wait for everything appended before them.
func TestKeyspaceReadWaitsForDurability(t *testing.T) {
	for _, read := range [][]string{{"DBSIZE"}, {"KEYS", "*"}, {"SCAN", "0"}} {
		t.Run(read[0], func(t *testing.T) {
			_, addr, gate := newGatedServer(t)
			a, b := dialRaw(t, addr), dialRaw(t, addr)
			gate.armed.Store(true)
			a.send(encodeCommand("SET", "k", "v1"))
			<-gate.entered
			b.send(encodeCommand(read...))
			if got := b.replyWithin(300 * time.Millisecond); got != "" {
				t.Fatalf("%s answered %q during the SET's fsync", read[0], got)
			}
			gate.open()
			a.readReply()
			if got := b.readReply(); got == "" || got == ":0\r\n" {
				t.Fatalf("%s after the fsync = %q", read[0], got)
			}
		})
	}
}
