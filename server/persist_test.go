package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/turnstile/turnstile/clock"
	"github.com/turnstile/turnstile/persistence"
	"github.com/turnstile/turnstile/shards"
)

// restartable runs servers one after the other on the same data directory
// and manual clock, to test what survives a restart.
type restartable struct {
	t   *testing.T
	dir string
	clk *clock.Manual
	mod func(*Config)
	srv *Server
	rc  *rawConn
}

func newRestartable(t *testing.T, mod func(*Config)) *restartable {
	r := &restartable{t: t, dir: t.TempDir(), clk: clock.NewManual(testEpoch), mod: mod}
	r.start()
	return r
}

func (r *restartable) start() {
	r.t.Helper()
	s, addr, _ := newTestServer(r.t, func(c *Config) {
		c.Clock = r.clk
		c.Persist.Dir = r.dir
		if r.mod != nil {
			r.mod(c)
		}
	})
	r.srv, r.rc = s, dialRaw(r.t, addr)
}

// restart shuts the server down cleanly (as SIGTERM does) and starts a new one.
func (r *restartable) restart() {
	r.t.Helper()
	r.rc.c.Close()
	r.srv.Close()
	r.waitStopped()
	r.start()
}

// waitStopped waits until the server has shut down completely, including
// its final snapshot: a new server on the same directory must not start
// while the old one still writes there.
func (r *restartable) waitStopped() {
	select {
	case <-r.srv.Stopped():
	case <-time.After(10 * time.Second):
		r.t.Fatal("server did not stop")
	}
}

func (r *restartable) expect(want string, args ...string) {
	r.t.Helper()
	if got := r.rc.do(args...); got != want {
		r.t.Fatalf("%v: got %q, want %q", args, got, want)
	}
}

const throttleLimited = "*5\r\n:1\r\n:16\r\n:0\r\n:2\r\n:32\r\n"

func TestAppendOnlySurvivesRestart(t *testing.T) {
	for _, policy := range []persistence.FsyncPolicy{persistence.FsyncAlways, persistence.FsyncEverySec, persistence.FsyncNo} {
		t.Run(policy.String(), func(t *testing.T) {
			r := newRestartable(t, func(c *Config) {
				c.Persist.AppendOnly = true
				c.Persist.AppendFsync = policy
			})
			for i := 0; i < 16; i++ {
				r.rc.do("CL.THROTTLE", "u", "15", "30", "60")
			}
			r.expect(throttleLimited, "CL.THROTTLE", "u", "15", "30", "60")
			r.expect(":3\r\n", "INCRBY", "n", "3")
			r.expect("+OK\r\n", "SET", "s", "hello", "PX", "60000")
			r.expect("+OK\r\n", "SET", "gone", "x", "PX", "1000")
			r.expect("+OK\r\n", "SET", "d", "x")
			r.expect(":1\r\n", "DEL", "d")
			r.expect("+OK\r\n", "SELECT", "3")
			r.expect("+OK\r\n", "SET", "db3", "v")
			r.expect("+OK\r\n", "SELECT", "0")
			r.expect("+OK\r\n", "MULTI")
			r.rc.do("INCR", "n")
			r.rc.do("RENAME", "s", "s2")
			r.expect("*2\r\n:4\r\n+OK\r\n", "EXEC")

			r.clk.Advance(1500 * time.Millisecond)
			r.restart()

			// The limiter is still limited, its retry_after reduced by the 1.5 s.
			r.expect("*5\r\n:1\r\n:16\r\n:0\r\n:1\r\n:31\r\n", "CL.THROTTLE", "u", "15", "30", "60")
			r.expect("$1\r\n4\r\n", "GET", "n")
			r.expect("$5\r\nhello\r\n", "GET", "s2")
			r.expect(":58500\r\n", "PTTL", "s2")
			r.expect(":0\r\n", "EXISTS", "s", "gone", "d")
			r.expect("+OK\r\n", "SELECT", "3")
			r.expect("$1\r\nv\r\n", "GET", "db3")
		})
	}
}

func TestFlushAllIsLogged(t *testing.T) {
	r := newRestartable(t, func(c *Config) { c.Persist.AppendOnly = true })
	r.expect("+OK\r\n", "SET", "a", "1")
	r.expect("+OK\r\n", "FLUSHALL")
	r.expect("+OK\r\n", "SET", "b", "2")
	r.restart()
	r.expect(":1\r\n", "DBSIZE")
	r.expect("$1\r\n2\r\n", "GET", "b")
}

func TestRewriteKeepsStateAndShrinks(t *testing.T) {
	r := newRestartable(t, func(c *Config) { c.Persist.AppendOnly = true })
	for i := 0; i < 2000; i++ {
		r.rc.do("INCR", "counter")
	}
	before := r.srv.aofLog().Stats()
	r.expect("+Background append only file rewriting started\r\n", "BGREWRITEAOF")
	waitFor(t, func() bool { return !r.srv.persist.rewriteRunning.Load() })
	after := r.srv.aofLog().Stats()
	if after.BaseSize+after.IncrSize >= before.BaseSize+before.IncrSize {
		t.Fatalf("rewrite did not shrink the log: %+v -> %+v", before, after)
	}
	r.expect(":2001\r\n", "INCR", "counter")
	r.restart()
	r.expect("$4\r\n2001\r\n", "GET", "counter")
}

func TestSnapshotSaveAndLoad(t *testing.T) {
	r := newRestartable(t, nil)
	r.expect("+OK\r\n", "SET", "k", "v")
	r.expect("+OK\r\n", "SET", "short", "v", "PX", "500")
	r.expect("*5\r\n:0\r\n:16\r\n:15\r\n:-1\r\n:2\r\n", "CL.THROTTLE", "u", "15", "30", "60")
	r.expect("+OK\r\n", "SAVE")
	if got := r.rc.do("LASTSAVE"); got != ":"+itoa(testEpoch/1e9)+"\r\n" {
		t.Fatalf("LASTSAVE: %q", got)
	}
	r.expect("+OK\r\n", "SET", "after", "not saved")
	r.clk.Advance(time.Second)
	r.restart() // no save rules: nothing is saved at shutdown
	r.expect("$1\r\nv\r\n", "GET", "k")
	r.expect(":0\r\n", "EXISTS", "short", "after")
	// The saved TAT (2 s ahead, 1 s of it elapsed) is honoured.
	r.expect("*5\r\n:0\r\n:16\r\n:14\r\n:-1\r\n:3\r\n", "CL.THROTTLE", "u", "15", "30", "60")
	if _, err := os.Stat(filepath.Join(r.dir, "dump.tsr")); err != nil {
		t.Fatal(err)
	}
}

func TestSaveRulesAndShutdownSave(t *testing.T) {
	r := newRestartable(t, func(c *Config) { c.Persist.Save = []SaveRule{{Seconds: 3600, Changes: 1}} })
	r.expect("+OK\r\n", "SET", "k", "v")
	r.restart() // save rules exist: the shutdown saves
	r.expect("$1\r\nv\r\n", "GET", "k")
	r.expect("+OK\r\n", "SET", "k", "v2")
	r.rc.send(encodeCommand("SHUTDOWN", "NOSAVE"))
	r.rc.expectClosed()
	r.waitStopped()
	r.start()
	r.expect("$1\r\nv\r\n", "GET", "k")
}

func TestBgsaveAndInfoPersistence(t *testing.T) {
	r := newRestartable(t, func(c *Config) { c.Persist.AppendOnly = true })
	r.expect("+OK\r\n", "SET", "k", "v")
	r.expect("+Background saving started\r\n", "BGSAVE")
	waitFor(t, func() bool { return !r.srv.persist.bgsaveRunning.Load() })
	info := r.rc.do("INFO", "persistence")
	for _, want := range []string{"loading:0", "aof_enabled:1", "rdb_last_bgsave_status:ok", "aof_last_write_status:ok", "rdb_changes_since_last_save:0"} {
		if !strings.Contains(info, want+"\r\n") {
			t.Errorf("INFO persistence lacks %q:\n%s", want, info)
		}
	}
}

func TestCorruptLogRefusesToStart(t *testing.T) {
	r := newRestartable(t, func(c *Config) { c.Persist.AppendOnly = true })
	for i := 0; i < 50; i++ {
		r.rc.do("SET", "k"+itoa(int64(i)), "value")
	}
	r.srv.Close()
	r.waitStopped()
	// Flip a byte in the middle of the incremental log.
	incr, _ := filepath.Glob(filepath.Join(r.dir, "*incr*"))
	if len(incr) == 0 {
		files, _ := os.ReadDir(r.dir)
		t.Fatalf("no incr file in %v", files)
	}
	data, err := os.ReadFile(incr[0])
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x40
	os.WriteFile(incr[0], data, 0o644)

	s, _, errc := startServer(t, func(c *Config) {
		c.Clock = r.clk
		c.Persist.Dir = r.dir
		c.Persist.AppendOnly = true
	})
	select {
	case err := <-errc:
		var ce *persistence.CorruptError
		if err == nil || !asCorrupt(err, &ce) || ce.File == "" {
			t.Fatalf("want a CorruptError naming the file, got %v", err)
		}
	case <-time.After(5 * time.Second):
		s.Close()
		t.Fatal("server started on a corrupt log")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func asCorrupt(err error, target **persistence.CorruptError) bool { return errors.As(err, target) }

// TestAppendOnlyStartsFromSnapshot turns appendonly on for a dataset that
// only has a snapshot: the data is loaded from it and becomes the log's
// base, so it survives the next restart too.
func TestAppendOnlyStartsFromSnapshot(t *testing.T) {
	aof := false
	r := newRestartable(t, func(c *Config) { c.Persist.AppendOnly = aof })
	r.expect("+OK\r\n", "SET", "k", "v")
	r.expect("+OK\r\n", "SAVE")
	aof = true
	r.restart()
	r.expect("$1\r\nv\r\n", "GET", "k")
	r.expect("+OK\r\n", "SET", "k2", "v2")
	os.Remove(filepath.Join(r.dir, "dump.tsr"))
	r.restart()
	r.expect("$1\r\nv\r\n", "GET", "k")
	r.expect("$2\r\nv2\r\n", "GET", "k2")
}

// TestLoadDropsExpiredKeys: replay applies effects as written (no clock),
// then one pass drops the keys that expired while the server was down, so
// DBSIZE after a restart counts live keys only, from the log and from a
// snapshot.
func TestLoadDropsExpiredKeys(t *testing.T) {
	for _, aof := range []bool{true, false} {
		t.Run(fmt.Sprintf("appendonly=%v", aof), func(t *testing.T) {
			r := newRestartable(t, func(c *Config) {
				c.Persist.AppendOnly = aof
				c.Persist.Save = []SaveRule{{Seconds: 3600, Changes: 1}} // a snapshot at shutdown
			})
			r.expect("+OK\r\n", "SET", "short", "x", "PX", "1000")
			r.expect("+OK\r\n", "SET", "long", "x", "PX", "60000")
			r.expect("+OK\r\n", "SET", "forever", "x")
			r.rc.do("CL.THROTTLE", "rl", "0", "1", "1") // full again after 1 s
			r.clk.Advance(2 * time.Second)
			r.restart()
			r.expect(":2\r\n", "DBSIZE")
			r.expect(":0\r\n", "EXISTS", "short", "rl")
		})
	}
}

// TestNoActiveExpiryWhileLoading: a key that had expired by the time the
// server restarts, but that the log goes on changing after its expiry was
// set (here an LTRIM while it still lived), loads: active expiry waits for
// the load to end, as in Redis, instead of removing the key between two of
// its logged changes (the LTRIM would then find a shorter list, and the
// server would refuse to start). A long log between the two gives the
// expiry cycle, at hz 500, many turns during the load.
func TestNoActiveExpiryWhileLoading(t *testing.T) {
	r := newRestartable(t, func(c *Config) {
		c.Persist.AppendOnly = true
		c.Persist.Save = nil
		c.Hz = 500
	})
	r.expect(":4\r\n", "RPUSH", "list", "a", "b", "c", "d")
	r.expect(":1\r\n", "PEXPIRE", "list", "1000")
	const filler, batch = 30_000, 1000 // about 1.2 MB of log
	var b strings.Builder
	for i := 0; i < filler; i += batch {
		b.Reset()
		for j := i; j < i+batch; j++ {
			b.WriteString(encodeCommand("SET", "filler:"+strconv.Itoa(j), "some value to make the log longer"))
		}
		r.rc.send(b.String())
		for j := 0; j < batch; j++ {
			r.rc.readReply()
		}
	}
	r.expect("+OK\r\n", "LTRIM", "list", "0", "1")
	r.clk.Advance(10 * time.Second) // the list has expired at the restart
	r.restart()
	r.expect(":0\r\n", "EXISTS", "list")
	r.expect(":"+strconv.Itoa(filler)+"\r\n", "DBSIZE")
}

// TestLoggedValuesAreNotRewritten: a command that stores a value read
// from the keyspace (COPY, RENAME, MOVE, GETEX) logs that value; later
// writes in the same transaction that rewrite records in place (a
// same-length value: COPY's source here), or that would reuse a released
// record's space, must not change what the log says, so a restart from
// the log gives the same values.
func TestLoggedValuesAreNotRewritten(t *testing.T) {
	r := newRestartable(t, func(c *Config) {
		c.Persist.AppendOnly = true
		c.Persist.Save = nil
		c.Shards = 1 // every key in one table
	})
	setup := [][]string{
		{"SET", "a", "aaaa"}, {"SET", "r", "rrrr"}, {"SET", "m", "mmmm"}, {"SET", "g", "gggg"}, {"SET", "p", "pppp", "EX", "100"},
	}
	for _, c := range setup {
		r.expect("+OK\r\n", c...)
	}
	r.expect("+OK\r\n", "MULTI")
	for _, c := range [][]string{
		{"COPY", "a", "b"}, {"SET", "a", "bbbb"}, // in place: the copy's logged value must stay aaaa
		{"RENAME", "r", "s"}, {"SET", "q", "xxxx"}, // r's record released: q's, of its size, may take its space
		{"MOVE", "m", "1"}, {"SET", "n", "yyyy"},
		{"GETEX", "g", "EX", "100"}, {"SET", "h", "zzzz"},
		{"GETEX", "p", "PERSIST"}, {"SET", "o", "wwww", "EX", "100"},
		{"SET", "a", "cccc"},
	} {
		r.expect("+QUEUED\r\n", c...)
	}
	if reply := r.rc.do("EXEC"); strings.Contains(reply, "-ERR") {
		t.Fatalf("EXEC: %q", reply) // lockcheck builds refuse keyspace bytes stored without owned
	}
	keys := []string{"a", "b", "s", "g", "p", "q", "n", "h", "o"}
	want := r.rc.do(append([]string{"MGET"}, keys...)...)
	r.expect("+OK\r\n", "SELECT", "1")
	wantMoved := r.rc.do("GET", "m")
	r.restart()
	if got := r.rc.do(append([]string{"MGET"}, keys...)...); got != want {
		t.Fatalf("after the restart:\n got %q\nwant %q", got, want)
	}
	r.expect("+OK\r\n", "SELECT", "1")
	r.expect(wantMoved, "GET", "m")
}

// TestApplyEffectReadsNoClock: ApplyEffect stores an entry exactly as
// logged, even one whose expiry has passed (a replica or a replay must not
// decide expiry with its own clock); dropExpired is the separate pass.
func TestApplyEffectReadsNoClock(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Clock = clock.NewManual(testEpoch)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	past := shards.BytesEntry([]byte("v"), testEpoch-1)
	if err := s.ApplyEffect(persistence.Effect{Op: persistence.OpSet, DB: 2, Key: []byte("k"), Entry: past}); err != nil {
		t.Fatal(err)
	}
	if n := s.dbs[2].Len(); n != 1 {
		t.Fatalf("after applying an expired entry Len = %d, want 1 (stored as logged)", n)
	}
	if n := s.dropExpired(testEpoch); n != 1 || s.dbs[2].Len() != 0 {
		t.Fatalf("dropExpired removed %d, Len now %d", n, s.dbs[2].Len())
	}
	if err := s.ApplyEffect(persistence.Effect{Op: persistence.OpSet, DB: 99}); err == nil {
		t.Fatal("an effect for a database that does not exist was applied")
	}
}

// TestSaveInsideExec: SAVE queued after a write in MULTI neither hangs
// the EXEC (whose shards the dump would wait for) nor the key's shard, and
// the snapshot holds the transaction's write.
func TestSaveInsideExec(t *testing.T) {
	r := newRestartable(t, func(c *Config) { c.Persist.Save = nil })
	r.expect("+OK\r\n", "MULTI")
	r.expect("+QUEUED\r\n", "SET", "k", "v")
	r.expect("+QUEUED\r\n", "SAVE")
	r.expect("+QUEUED\r\n", "INCR", "n")
	done := make(chan string, 1)
	go func() { done <- r.rc.do("EXEC") }()
	select {
	case got := <-done:
		if got != "*3\r\n+OK\r\n+OK\r\n:1\r\n" {
			t.Fatalf("EXEC: %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("EXEC with SAVE after a write hangs")
	}
	r.expect("$1\r\nv\r\n", "GET", "k")
	r.srv.Close()
	r.waitStopped()
	r.start()
	r.expect("$1\r\nv\r\n", "GET", "k")
	r.expect("$1\r\n1\r\n", "GET", "n")
}
