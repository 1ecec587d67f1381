package server

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/turnstile/turnstile/persistence"
)

// fullFS is the real file system, except that while full is set, opening a
// file for writing fails with ENOSPC (a full disk). It counts the attempts
// to create the snapshot's temporary file.
type fullFS struct {
	persistence.OSFS
	full     atomic.Bool
	attempts atomic.Int64 // snapshot files the server tried to create
}

func (f *fullFS) OpenFile(name string, flag int, perm os.FileMode) (persistence.File, error) {
	if flag&(os.O_WRONLY|os.O_RDWR) != 0 {
		if strings.HasSuffix(name, ".tmp") {
			f.attempts.Add(1)
		}
		if f.full.Load() {
			return nil, &os.PathError{Op: "open", Path: name, Err: syscall.ENOSPC}
		}
	}
	return f.OSFS.OpenFile(name, flag, perm)
}

// newFullDiskServer starts a server with save rules and a fullFS.
func newFullDiskServer(t *testing.T, rules ...SaveRule) (*restartable, *fullFS) {
	fs := &fullFS{}
	if len(rules) == 0 {
		rules = []SaveRule{{Seconds: 3600, Changes: 1}}
	}
	r := newRestartable(t, func(c *Config) {
		c.Persist.Save = rules
		c.Persist.FS = fs
	})
	return r, fs
}

// bgsaveAndWait runs BGSAVE and waits until it has finished.
func (r *restartable) bgsaveAndWait() {
	r.t.Helper()
	r.expect("+Background saving started\r\n", "BGSAVE")
	waitFor(r.t, func() bool { return !r.srv.persist.bgsaveRunning.Load() })
}

func (r *restartable) infoField(name string) string {
	r.t.Helper()
	return r.rc.infoField(r.t, name)
}

const misconfRDB = "-" + errBgsaveMisconf + "\r\n"

// TestBgsaveErrorStopsWrites: after a background save fails (disk full)
// while save rules exist, commands that write, CL.THROTTLE included, and
// PING get Redis's MISCONF reply, and reads keep working, until a snapshot
// succeeds; stop-writes-on-bgsave-error no lifts the refusal (CONFIG SET).
func TestBgsaveErrorStopsWrites(t *testing.T) {
	r, fs := newFullDiskServer(t)
	r.expect("+OK\r\n", "SET", "k", "v")
	r.expect("*5\r\n:0\r\n:16\r\n:15\r\n:-1\r\n:2\r\n", "CL.THROTTLE", "u", "15", "30", "60")
	if got := r.infoField("rdb_last_bgsave_status"); got != "ok" {
		t.Fatalf("status before any save: %q", got)
	}
	r.expect("+OK\r\n", "MULTI")
	r.expect("+QUEUED\r\n", "INCR", "n") // queued while saves still worked

	fs.full.Store(true)
	second := dialRaw(t, r.srv.Addr().String())
	second.expectDo(t, "+Background saving started\r\n", "BGSAVE")
	waitFor(t, func() bool { return !r.srv.persist.bgsaveRunning.Load() })

	for _, f := range [][2]string{{"rdb_last_bgsave_status", "err"}, {"rdb_last_bgsave_time_sec", "0"},
		{"rdb_current_bgsave_time_sec", "-1"}, {"rdb_saves", "1"}, {"rdb_changes_since_last_save", "2"}} {
		if got := second.infoField(t, f[0]); got != f[1] {
			t.Errorf("INFO %s: %q, want %q", f[0], got, f[1])
		}
	}
	r.expect("-EXECABORT Transaction discarded because of: "+errBgsaveMisconf+"\r\n", "EXEC")
	for _, cmd := range [][]string{
		{"SET", "k", "v2"}, {"CL.THROTTLE", "u", "15", "30", "60"}, {"DEL", "k"}, {"INCR", "n"},
		{"EXPIRE", "k", "10"}, {"PING"}, {"EVAL", "return redis.call('set', KEYS[1], 'x')", "1", "k"},
	} {
		got := r.rc.do(cmd...)
		if cmd[0] == "EVAL" {
			if !strings.HasPrefix(got, "-"+errBgsaveMisconf) {
				t.Errorf("%v: %q, want MISCONF", cmd, got)
			}
			continue
		}
		if got != misconfRDB {
			t.Errorf("%v: %q, want MISCONF", cmd, got)
		}
	}
	r.expect("$1\r\nv\r\n", "GET", "k") // reads work
	r.expect(":1\r\n", "EXISTS", "u")
	r.expect("$2\r\nhi\r\n", "ECHO", "hi")
	r.expect("+OK\r\n", "MULTI")
	r.expect(misconfRDB, "SET", "k", "v3") // refused while queueing: EXEC aborts
	r.expect("-EXECABORT Transaction discarded because of previous errors.\r\n", "EXEC")

	// stop-writes-on-bgsave-error no: writes go on despite the failure.
	r.expect("*2\r\n$27\r\nstop-writes-on-bgsave-error\r\n$3\r\nyes\r\n", "CONFIG", "GET", "stop-writes-on-bgsave-error")
	r.expect("+OK\r\n", "CONFIG", "SET", "stop-writes-on-bgsave-error", "no")
	r.expect("+OK\r\n", "SET", "k", "v4")
	r.expect("+OK\r\n", "CONFIG", "SET", "stop-writes-on-bgsave-error", "yes")
	r.expect(misconfRDB, "SET", "k", "v5")

	// A failed SAVE leaves things as they are (as Redis: only background
	// saves set the status); a successful one lifts the refusal.
	if got := r.rc.do("SAVE"); !strings.HasPrefix(got, "-ERR ") {
		t.Fatalf("SAVE on a full disk: %q", got)
	}
	r.expect(misconfRDB, "SET", "k", "v5")
	fs.full.Store(false)
	r.bgsaveAndWait()
	if got := r.infoField("rdb_last_bgsave_status"); got != "ok" {
		t.Fatalf("status after a good save: %q", got)
	}
	r.expect("+OK\r\n", "SET", "k", "v6")
	r.expect("+PONG\r\n", "PING")
	r.expect("*5\r\n:0\r\n:16\r\n:14\r\n:-1\r\n:4\r\n", "CL.THROTTLE", "u", "15", "30", "60")
}

// TestBgsaveErrorWithoutSaveRules: without save rules a failed BGSAVE
// reports err but refuses nothing (as Redis: the refusal needs rules).
func TestBgsaveErrorWithoutSaveRules(t *testing.T) {
	fs := &fullFS{}
	r := newRestartable(t, func(c *Config) { c.Persist.FS = fs })
	fs.full.Store(true)
	r.bgsaveAndWait()
	if got := r.infoField("rdb_last_bgsave_status"); got != "err" {
		t.Fatalf("status: %q", got)
	}
	r.expect("+OK\r\n", "SET", "k", "v")
}

// TestBgsaveRetryDelay: after a failed background save, the save rules try
// again only once 5 s have passed (Redis's CONFIG_BGSAVE_RETRY_DELAY), not
// at every tick; after a good save they follow the rules again.
func TestBgsaveRetryDelay(t *testing.T) {
	r, fs := newFullDiskServer(t, SaveRule{Seconds: 1, Changes: 1})
	s := r.srv
	fs.full.Store(true)
	r.expect("+OK\r\n", "SET", "k", "v")
	// tick advances the manual clock and runs the save rules, as the
	// background loop does once a second, then waits for the save.
	tick := func(d time.Duration) {
		r.clk.Advance(d)
		s.persistTick(s.clock.Now())
		waitFor(t, func() bool { return !s.persist.bgsaveRunning.Load() })
	}
	tick(2 * time.Second) // the rule is due: the first attempt fails
	if n := fs.attempts.Load(); n != 1 {
		t.Fatalf("%d attempts after the rule came due, want 1", n)
	}
	for i := 0; i < 5; i++ { // 1..5 s after the failure
		tick(time.Second)
	}
	if n := fs.attempts.Load(); n != 1 {
		t.Fatalf("%d attempts within 5 s of a failed save, want 1 (no retry before the delay)", n)
	}
	tick(time.Second) // 6 s after: past the delay
	if n := fs.attempts.Load(); n != 2 {
		t.Fatalf("%d attempts 6 s after a failed save, want 2", n)
	}
	fs.full.Store(false)
	tick(6 * time.Second)
	if n := fs.attempts.Load(); n != 3 || s.dirty.Load() != 0 {
		t.Fatalf("%d attempts, %d changes unsaved after the disk recovered, want 3 and 0", n, s.dirty.Load())
	}
	r.expect("+OK\r\n", "SET", "k", "v2") // writes accepted again
	tick(2 * time.Second)                 // a good save before: the rule applies at once
	if n := fs.attempts.Load(); n != 4 {
		t.Fatalf("%d attempts, want 4", n)
	}
}

// TestShutdownRefusedWhileSaveFails: a shutdown (SHUTDOWN, or Shutdown as
// a signal calls it) whose final snapshot fails leaves the server running
// with every key, as Redis refuses to exit; once the disk works again the
// shutdown succeeds and the snapshot holds every key. SHUTDOWN NOSAVE and
// FORCE stop it whatever the disk.
func TestShutdownRefusedWhileSaveFails(t *testing.T) {
	r, fs := newFullDiskServer(t)
	const n = 200
	for i := 0; i < n; i++ {
		r.rc.do("SET", fmt.Sprint("key:", i), fmt.Sprint(i))
	}
	r.expect("*5\r\n:0\r\n:16\r\n:15\r\n:-1\r\n:2\r\n", "CL.THROTTLE", "u", "15", "30", "60")
	fs.full.Store(true)
	r.expect("-ERR Errors trying to SHUTDOWN. Check logs.\r\n", "SHUTDOWN")
	r.expect("-ERR Errors trying to SHUTDOWN. Check logs.\r\n", "SHUTDOWN", "SAVE")
	if err := r.srv.Shutdown(ShutdownOptions{}); err == nil || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Shutdown on a full disk: %v, want ENOSPC", err)
	}
	select {
	case <-r.srv.Stopped():
		t.Fatal("the server stopped although its final snapshot failed")
	case <-time.After(50 * time.Millisecond):
	}
	// Still serving, with every key, on the same and on new connections;
	// writes go on (no background save failed).
	r.expect(fmt.Sprintf(":%d\r\n", n+1), "DBSIZE")
	r.expect("$3\r\n199\r\n", "GET", "key:199")
	r.expect("+OK\r\n", "SET", "late", "x")
	other := dialRaw(t, r.srv.Addr().String())
	other.expectDo(t, "$1\r\nx\r\n", "GET", "late")

	fs.full.Store(false)
	r.rc.send(encodeCommand("SHUTDOWN"))
	r.rc.expectClosed()
	r.waitStopped()
	r.start() // the same directory: the snapshot holds every key
	r.expect(fmt.Sprintf(":%d\r\n", n+2), "DBSIZE")
	r.expect("$1\r\nx\r\n", "GET", "late")
	r.expect("*5\r\n:0\r\n:16\r\n:14\r\n:-1\r\n:4\r\n", "CL.THROTTLE", "u", "15", "30", "60")

	fs.full.Store(true)
	for _, args := range [][]string{{"SHUTDOWN", "NOSAVE"}, {"SHUTDOWN", "FORCE"}} {
		r.rc.send(encodeCommand(args...))
		r.rc.expectClosed()
		r.waitStopped()
		r.start()
	}
	fs.full.Store(false) // for the final save when the test ends
}

// TestShutdownHoldsRepliesDuringFinalSave: a write made while the final
// snapshot is being written is not in it, so its reply is held back until
// the outcome is known: never sent if the server then closes, sent if the
// snapshot failed and the server goes on.
func TestShutdownHoldsRepliesDuringFinalSave(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("fail=%v", fail), func(t *testing.T) {
			gate := newGateFS()
			fs := &gatedFullFS{gate: gate}
			r := newRestartable(t, func(c *Config) {
				c.Persist.Save = []SaveRule{{Seconds: 3600, Changes: 1}}
				c.Persist.FS = fs
			})
			t.Cleanup(gate.open)
			r.expect("+OK\r\n", "SET", "before", "1")
			gate.armed.Store(true) // the snapshot's fsync waits at the gate
			fs.failSync.Store(fail)
			done := make(chan error, 1)
			go func() { done <- r.srv.Shutdown(ShutdownOptions{}) }()
			<-gate.entered // the snapshot is being written
			r.rc.send(encodeCommand("SET", "during", "1"))
			if got := r.rc.replyWithin(100 * time.Millisecond); got != "" {
				t.Fatalf("a write during the final snapshot was answered before its outcome: %q", got)
			}
			gate.open()
			err := <-done
			if fail {
				if err == nil {
					t.Fatal("Shutdown succeeded although the snapshot's fsync failed")
				}
				if got := r.rc.replyWithin(5 * time.Second); got != "+OK\r\n" {
					t.Fatalf("held reply after a failed shutdown: %q", got)
				}
				r.expect("$1\r\n1\r\n", "GET", "during")
				fs.failSync.Store(false) // for the final save when the test ends
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r.rc.expectClosed()
			r.waitStopped()
			r.start()
			r.expect(":1\r\n", "EXISTS", "before")
			r.expect(":0\r\n", "EXISTS", "during") // never acknowledged
		})
	}
}

// gatedFullFS is a gateFS whose file fsyncs fail, after the gate, while
// failSync is set.
type gatedFullFS struct {
	gate     *gateFS
	failSync atomic.Bool
}

func (g *gatedFullFS) OpenFile(name string, flag int, perm os.FileMode) (persistence.File, error) {
	f, err := g.gate.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &failSyncFile{File: f, fail: &g.failSync}, nil
}

func (g *gatedFullFS) Rename(a, b string) error { return g.gate.Rename(a, b) }
func (g *gatedFullFS) Remove(name string) error { return g.gate.Remove(name) }
func (g *gatedFullFS) MkdirAll(path string, perm os.FileMode) error {
	return g.gate.MkdirAll(path, perm)
}
func (g *gatedFullFS) Stat(name string) (os.FileInfo, error) { return g.gate.Stat(name) }
func (g *gatedFullFS) SyncDir(dir string) error              { return g.gate.SyncDir(dir) }

type failSyncFile struct {
	persistence.File
	fail *atomic.Bool
}

func (f *failSyncFile) Sync() error {
	if err := f.File.Sync(); err != nil {
		return err
	}
	if f.fail.Load() {
		return syscall.EIO
	}
	return nil
}

func (r *rawConn) expectDo(t *testing.T, want string, args ...string) {
	t.Helper()
	if got := r.do(args...); got != want {
		t.Fatalf("%v: got %q, want %q", args, got, want)
	}
}

func (r *rawConn) infoField(t *testing.T, name string) string {
	t.Helper()
	info := r.do("INFO", "persistence")
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return v
		}
	}
	t.Fatalf("INFO persistence has no %s:\n%s", name, info)
	return ""
}
