package server

import (
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/turnstile/turnstile/persistence"
)

// failFS is the real file system, except that while failing is set every
// write fails with ENOSPC, as on a full disk.
type failFS struct {
	persistence.OSFS
	failing atomic.Bool
}

func (f *failFS) OpenFile(name string, flag int, perm os.FileMode) (persistence.File, error) {
	file, err := f.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &failFile{File: file, fs: f}, nil
}

type failFile struct {
	persistence.File
	fs *failFS
}

func (f *failFile) Write(b []byte) (int, error) {
	if f.fs.failing.Load() {
		return 0, syscall.ENOSPC
	}
	return f.File.Write(b)
}

// TestLogWriteFailureAnswersMisconf: the connection whose commands hit a
// failing append-only log write gets MISCONF errors in place of their
// replies, one per command, and stays connected, like the connections that
// come after it. The write that hit the failure is not acknowledged, and
// its value is shown to nobody while the log cannot be written (reads of
// it get MISCONF too); it stays queued in the log, so once the disk has
// room again the log takes it and it is there, also after a restart.
// (Before, that connection was closed without a reply.)
func TestLogWriteFailureAnswersMisconf(t *testing.T) {
	fs := &failFS{}
	r := newRestartable(t, func(c *Config) {
		c.Persist.AppendOnly = true
		c.Persist.FS = fs
	})
	r.expect("+OK\r\n", "SET", "k", "v1")
	fs.failing.Store(true)

	const misconf = "-MISCONF Errors writing to the AOF file: "
	r.rc.send(encodeCommand("SET", "k", "v2") + encodeCommand("PING"))
	for i, what := range []string{"SET", "PING after it"} {
		if got := r.rc.readReply(); !strings.HasPrefix(got, misconf) || !strings.Contains(got, "no space left on device") {
			t.Fatalf("reply %d (%s) while the log write fails = %q, want %q...", i, what, got, misconf)
		}
	}
	r.expect("$2\r\nhi\r\n", "ECHO", "hi") // still connected (PING is refused too, as Redis does)

	other := dialRaw(t, r.srv.Addr().String())
	if got := other.do("SET", "x", "1"); !strings.HasPrefix(got, misconf) {
		t.Fatalf("SET on another connection = %q, want MISCONF", got)
	}
	if got := other.do("GET", "k"); !strings.HasPrefix(got, misconf) {
		t.Fatalf("GET of the unlogged write = %q, want MISCONF", got)
	}
	if got := infoField(other.do("INFO", "persistence"), "aof_last_write_status"); got != "err" {
		t.Fatalf("aof_last_write_status = %q", got)
	}

	fs.failing.Store(false)
	deadline := time.Now().Add(5 * time.Second)
	for other.do("SET", "x", "1") != "+OK\r\n" {
		if time.Now().After(deadline) {
			t.Fatal("writes still refused 5 s after the disk has room again")
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.expect("$2\r\nv2\r\n", "GET", "k")
	r.restart()
	r.expect("$2\r\nv2\r\n", "GET", "k")
	r.expect("$1\r\n1\r\n", "GET", "x")
}
