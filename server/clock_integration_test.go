package server

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstile/turnstile/clock"
)

// steppableWall is the machine's clocks with a wall clock the test can
// step: the monotonic clock is the real one, the wall clock the real one
// plus skew. Tests cannot change the machine's clock; the server reads it
// only through clock.Sources, so this is what it sees when the clock steps.
type steppableWall struct{ skew atomic.Int64 }

func (w *steppableWall) sources() clock.Sources {
	sys := clock.System()
	return clock.Sources{
		Read: func() (int64, int64) {
			wall, mono := sys.Read()
			return wall + w.skew.Load(), mono
		},
		Mono: sys.Mono,
	}
}

// newClockRestartable runs servers on one data directory, each with the
// clock the binary builds: restored from the state file in --dir, reading
// wall. Snapshots are on, as in the binary's default.
func newClockRestartable(t *testing.T, wall *steppableWall) *restartable {
	return newRestartable(t, func(c *Config) {
		c.Persist.Save = DefaultSaveRules
		c.Clock = clock.Restore(filepath.Join(c.Persist.Dir, clock.StateFile), wall.sources(), c.Logger)
	})
}

// throttleReply parses a CL.THROTTLE reply into its five integers.
func throttleReply(t *testing.T, raw string) [5]int64 {
	t.Helper()
	parts := strings.Split(strings.TrimSuffix(raw, "\r\n"), "\r\n")
	var out [5]int64
	if len(parts) != 6 || parts[0] != "*5" {
		t.Fatalf("CL.THROTTLE reply %q", raw)
	}
	for i, p := range parts[1:] {
		n, err := strconv.ParseInt(strings.TrimPrefix(p, ":"), 10, 64)
		if err != nil {
			t.Fatalf("CL.THROTTLE reply %q: %v", raw, err)
		}
		out[i] = n
	}
	return out
}

// serverTimeUs reads TIME in microseconds.
func serverTimeUs(t *testing.T, rc *rawConn) int64 {
	t.Helper()
	parts := strings.Split(rc.do("TIME"), "\r\n")
	if len(parts) < 5 {
		t.Fatalf("TIME reply %q", parts)
	}
	sec, err1 := strconv.ParseInt(parts[2], 10, 64)
	usec, err2 := strconv.ParseInt(parts[4], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("TIME reply %q", parts)
	}
	return sec*1e6 + usec
}

// waitClockOffset polls INFO server until the server's clock offset is
// within a second of want (the step is seen within 100 ms of reads).
func waitClockOffset(t *testing.T, rc *rawConn, want time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		info := rc.do("INFO", "server")
		off, err := strconv.ParseInt(infoField(info, "clock_offset_ms"), 10, 64)
		if err == nil && (time.Duration(off)*time.Millisecond-want).Abs() < time.Second {
			return info
		}
		if time.Now().After(deadline) {
			t.Fatalf("clock_offset_ms %q, want about %d", infoField(info, "clock_offset_ms"), want.Milliseconds())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestClockStepBackSurvivesRestart is issue 13's first clock defect: the
// wall clock goes back 1 h while the server runs, then the server
// restarts. The server clock was anchored to the wall clock at start-up, so
// the restart applied the whole step at once and a client limited for 60 s
// stayed blocked for 3,660 s. The disciplined clock keeps the step as an
// offset, saves it, and continues it after the restart: the client waits
// no longer than its real remaining time.
func TestClockStepBackSurvivesRestart(t *testing.T) {
	wall := &steppableWall{}
	r := newClockRestartable(t, wall)
	if got := throttleReply(t, r.rc.do("CL.THROTTLE", "user", "0", "1", "60")); got[0] != 0 {
		t.Fatalf("first request limited: %v", got)
	}
	if got := throttleReply(t, r.rc.do("CL.THROTTLE", "user", "0", "1", "60")); got[0] != 1 || got[3] != 60 {
		t.Fatalf("second request: %v, want limited for 60 s", got)
	}
	before := serverTimeUs(t, r.rc)

	wall.skew.Store(-int64(time.Hour))
	info := waitClockOffset(t, r.rc, time.Hour)
	for name, want := range map[string]string{"clock_slewing": "1", "clock_wall_steps": "1", "clock_slew_rate_perc": "10"} {
		if got := infoField(info, name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if got, _ := strconv.ParseInt(infoField(info, "clock_last_wall_step_ms"), 10, 64); got > -3599_000 || got < -3601_000 {
		t.Errorf("clock_last_wall_step_ms = %d, want about -3600000", got)
	}
	// The once-a-second background loop saves the offset, so that even a
	// crash keeps it.
	waitStateOffset(t, filepath.Join(r.dir, clock.StateFile), time.Hour)

	r.restart()
	if after := serverTimeUs(t, r.rc); after < before {
		t.Fatalf("the restart moved the server time back by %v", time.Duration(before-after)*time.Microsecond)
	}
	got := throttleReply(t, r.rc.do("CL.THROTTLE", "user", "0", "1", "60"))
	if got[0] != 1 || got[3] > 60 || got[3] < 55 {
		t.Fatalf("after the restart: %v, want still limited for at most the 60 s left (retry_after %d s)", got, got[3])
	}
}

// TestClockStepForwardSurvivesRestart is the other direction: the wall
// clock jumps 1 h ahead while the server runs, then the server restarts.
// Applied at once on restart, the step reset every limit (every theoretical
// arrival time fell in the past) and dropped a 600 s session key. The
// disciplined clock runs at most 10% fast instead: after the restart the
// limit still holds and the key is still there.
func TestClockStepForwardSurvivesRestart(t *testing.T) {
	wall := &steppableWall{}
	r := newClockRestartable(t, wall)
	r.expect("+OK\r\n", "SET", "session", "token", "EX", "600")
	r.rc.do("CL.THROTTLE", "user", "0", "1", "600")
	if got := throttleReply(t, r.rc.do("CL.THROTTLE", "user", "0", "1", "600")); got[0] != 1 {
		t.Fatalf("second request: %v, want limited", got)
	}

	wall.skew.Store(int64(time.Hour))
	waitClockOffset(t, r.rc, -time.Hour)
	// While running too, the step is not applied at once.
	if got := throttleReply(t, r.rc.do("CL.THROTTLE", "user", "0", "1", "600")); got[0] != 1 {
		t.Fatalf("after the step: %v, want still limited", got)
	}

	r.restart()
	r.expect("$5\r\ntoken\r\n", "GET", "session")
	if ttl, _ := strconv.ParseInt(strings.Trim(r.rc.do("TTL", "session"), ":\r\n"), 10, 64); ttl < 590 || ttl > 600 {
		t.Fatalf("TTL session = %d after the restart, want about 600", ttl)
	}
	got := throttleReply(t, r.rc.do("CL.THROTTLE", "user", "0", "1", "600"))
	if got[0] != 1 || got[3] < 590 {
		t.Fatalf("after the restart: %v, want still limited for about 600 s", got)
	}
	if off, _ := strconv.ParseInt(infoField(r.rc.do("INFO", "server"), "clock_offset_ms"), 10, 64); off > -3590_000 {
		t.Fatalf("clock_offset_ms = %d after the restart, want the slew continued from about -3600000", off)
	}
}

// TestClockStateCorruptStartsFromWall: an unreadable state file does not
// stop the server; the clock starts at the wall clock and the next save
// replaces the file.
func TestClockStateCorruptStartsFromWall(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, clock.StateFile)
	if err := os.WriteFile(path, []byte("{\"format\":1,\"time_"), 0o644); err != nil {
		t.Fatal(err)
	}
	wall := &steppableWall{}
	var logs syncBuffer
	_, addr, _ := newTestServer(t, func(c *Config) {
		c.Persist.Dir = dir
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		c.Clock = clock.Restore(path, wall.sources(), c.Logger)
	})
	rc := dialRaw(t, addr)
	if d := time.Duration(serverTimeUs(t, rc)*1e3 - time.Now().UnixNano()).Abs(); d > time.Second {
		t.Fatalf("server time %v away from the wall clock", d)
	}
	waitStateOffset(t, path, 0)
	if !strings.Contains(logs.String(), "cannot read the clock state") {
		t.Fatalf("no warning about the state file: %s", logs.String())
	}
}

// syncBuffer is a log destination that tests may read while the server
// writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitStateOffset waits up to 3 s for the state file at path to hold an
// offset within a second of want.
func waitStateOffset(t *testing.T, path string, want time.Duration) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		var st struct {
			Offset int64 `json:"offset_ns"`
		}
		b, err := os.ReadFile(path)
		if err == nil && json.Unmarshal(b, &st) == nil && (time.Duration(st.Offset)-want).Abs() < time.Second {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("state file %s holds %q (%v), want offset about %v", path, b, err, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDisciplinedThroughFloor: on a cluster node the server's clock is the
// node's Floor around the disciplined clock; the server still finds it to
// save and report it.
func TestDisciplinedThroughFloor(t *testing.T) {
	d := clock.NewDisciplined(clock.System(), nil)
	for _, c := range []clock.Clock{d, clock.NewFloor(d), clock.NewFloor(clock.NewFloor(d))} {
		if got := (&Server{clock: c}).disciplined(); got != d {
			t.Fatalf("%T: found %p, want %p", c, got, d)
		}
	}
	if got := (&Server{clock: clock.NewFloor(clock.NewManual(1))}).disciplined(); got != nil {
		t.Fatalf("a manual clock: found %p, want none", got)
	}
}
