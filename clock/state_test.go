package clock

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRestore starts a clock from every kind of state file and checks where
// it continues: never below the saved time, the slew continued through the
// downtime, a warning for what deserves one.
func TestRestore(t *testing.T) {
	const h, m, s = int64(time.Hour), int64(time.Minute), int64(time.Second)
	state := func(tm, off int64) string { return string(encodeState(State{Time: tm, Offset: off})) }
	cases := []struct {
		name      string
		file      *string // nil: no file
		wall      int64   // the wall clock at restart
		wantTime  int64
		wantOff   int64
		wantLog   string // in the log
		wantLevel string
		wantSteps int64
	}{
		{
			name: "no state file", file: nil, wall: epoch,
			wantTime: epoch, wantOff: 0, wantLog: "no clock state yet", wantLevel: "INFO",
		},
		{
			name: "clean restart", file: ptr(state(epoch, 0)), wall: epoch + 10*s,
			wantTime: epoch + 10*s, wantOff: 0,
		},
		{
			// The wall clock went back 1 h while the server was down:
			// time continues from the saved time and slews.
			name: "state ahead of the wall clock", file: ptr(state(epoch, 0)), wall: epoch - h + 10*s,
			wantTime: epoch, wantOff: h - 10*s, wantLog: "the wall clock is behind the last run's", wantLevel: "WARN", wantSteps: 1,
		},
		{
			// The wall clock went back 1 h while the server ran: the
			// server kept an offset of +1 h (6 min absorbed after 1 h of
			// slewing); 10 min of downtime absorb 1 min more.
			name: "restart while slewing after a backward step", file: ptr(state(epoch, 54*m)), wall: epoch - 54*m + 10*m,
			wantTime: epoch + 9*m, wantOff: 53 * m, wantLog: "continues its slew", wantLevel: "INFO",
		},
		{
			name: "restart while slewing after a forward step", file: ptr(state(epoch, -h)), wall: epoch + h + 10*m,
			wantTime: epoch + 11*m, wantOff: -h + m, wantLog: "continues its slew", wantLevel: "INFO",
		},
		{
			name: "downtime longer than the slew", file: ptr(state(epoch, -h)), wall: epoch + h + 20*h,
			wantTime: epoch + h + 20*h, wantOff: 0,
		},
		{
			// Within the step threshold: held at the saved time, no warning.
			name: "wall clock slightly behind", file: ptr(state(epoch, 0)), wall: epoch - 50*int64(time.Millisecond),
			wantTime: epoch, wantOff: 50 * int64(time.Millisecond),
		},
		{
			name: "garbage", file: ptr("\x00\x01not json"), wall: epoch,
			wantTime: epoch, wantOff: 0, wantLog: "cannot read the clock state", wantLevel: "WARN",
		},
		{
			name: "truncated", file: ptr(state(epoch+h, 0)[:20]), wall: epoch,
			wantTime: epoch, wantOff: 0, wantLog: "cannot read the clock state", wantLevel: "WARN",
		},
		{
			name: "empty", file: ptr(""), wall: epoch,
			wantTime: epoch, wantOff: 0, wantLog: "cannot read the clock state", wantLevel: "WARN",
		},
		{
			name: "unknown format", file: ptr(`{"format":2,"time_ns":1800000000000000000,"offset_ns":0}`), wall: epoch,
			wantTime: epoch, wantOff: 0, wantLog: "format 2", wantLevel: "WARN",
		},
		{
			name: "negative time", file: ptr(`{"format":1,"time_ns":-5,"offset_ns":0}`), wall: epoch,
			wantTime: epoch, wantOff: 0, wantLog: "not a plausible time", wantLevel: "WARN",
		},
		{
			name: "offset past the time", file: ptr(`{"format":1,"time_ns":1000,"offset_ns":2000}`), wall: epoch,
			wantTime: epoch, wantOff: 0, wantLog: "does not fit", wantLevel: "WARN",
		},
		{
			name: "trailing data", file: ptr(state(epoch+h, 0) + "{}"), wall: epoch,
			wantTime: epoch, wantOff: 0, wantLog: "cannot read the clock state", wantLevel: "WARN",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), StateFile)
			if tc.file != nil {
				if err := os.WriteFile(path, []byte(*tc.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			host := newFakeHost()
			host.wall.Store(tc.wall)
			log, buf := testLogger()
			c := Restore(path, host.sources(), log)
			st := c.Status()
			if st.Now != tc.wantTime || st.Offset != tc.wantOff {
				t.Fatalf("restored at %v offset %v, want %v offset %v", time.Duration(st.Now-epoch), time.Duration(st.Offset),
					time.Duration(tc.wantTime-epoch), time.Duration(tc.wantOff))
			}
			if st.Steps != tc.wantSteps {
				t.Fatalf("steps %d, want %d", st.Steps, tc.wantSteps)
			}
			out := buf.String()
			if tc.wantLog == "" && strings.Contains(out, "level=WARN") {
				t.Fatalf("unexpected warning: %s", out)
			}
			if tc.wantLog != "" && (!strings.Contains(out, tc.wantLog) || !strings.Contains(out, "level="+tc.wantLevel)) {
				t.Fatalf("log lacks %s %q: %s", tc.wantLevel, tc.wantLog, out)
			}
			// Whatever it started from, the clock saves a state it can
			// restart from.
			if err := c.Save(); err != nil {
				t.Fatal(err)
			}
			again := Restore(path, host.sources(), log).Status()
			if again.Now != st.Now || again.Offset != st.Offset {
				t.Fatalf("after Save and Restore: %+v, want %+v", again, st)
			}
		})
	}
}

func ptr(s string) *string { return &s }

// TestSaveAndRestoreAcrossAStep runs a clock through a step of the wall
// clock, saves, and restarts it: the offset continues instead of landing at
// once.
func TestSaveAndRestoreAcrossAStep(t *testing.T) {
	path := filepath.Join(t.TempDir(), StateFile)
	host := newFakeHost()
	log, _ := testLogger()
	c := Restore(path, host.sources(), log)
	host.advance(time.Second)
	host.step(-time.Hour)
	for range 8 { // 2 s of readings
		host.advance(250 * time.Millisecond)
		c.Now()
	}
	before := c.Status()
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	if ents, err := os.ReadDir(filepath.Dir(path)); err != nil || len(ents) != 1 {
		t.Fatalf("temporary file left behind: %v %v", ents, err)
	}
	host.advance(5 * time.Second) // down for 5 s
	after := Restore(path, host.sources(), log).Status()
	if after.Now < before.Now {
		t.Fatalf("restart moved time back by %v", time.Duration(before.Now-after.Now))
	}
	if d := after.Now - before.Now; d < int64(4500*time.Millisecond) || d > int64(5*time.Second) {
		t.Fatalf("5 s of downtime moved the clock %v, want 4.5 s (slewing 10%% slow)", time.Duration(d))
	}
	if after.Offset < int64(time.Hour)-int64(2*time.Second) {
		t.Fatalf("offset %v after restart, want about 1 h", time.Duration(after.Offset))
	}
}

// TestSaveFailureWarnsOnce: a state file that cannot be written is logged
// once, and its recovery once.
func TestSaveFailureWarnsOnce(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "blocker")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	host := newFakeHost()
	log, buf := testLogger()
	c := Restore(filepath.Join(blocker, StateFile), host.sources(), log) // a file where the directory should be
	for range 3 {
		if err := c.Save(); err == nil {
			t.Fatal("Save succeeded below a regular file")
		}
	}
	if n := strings.Count(buf.String(), "cannot save the clock state"); n != 1 {
		t.Fatalf("%d warnings, want 1: %s", n, buf.String())
	}
	// Save never creates the directory (a data directory that went away
	// is not recreated empty); once there is one again, it saves.
	os.Remove(blocker)
	if err := c.Save(); err == nil {
		t.Fatal("Save created the missing directory")
	}
	if err := os.Mkdir(blocker, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "clock state saved again") {
		t.Fatalf("no recovery notice: %s", buf.String())
	}
	if err := NewDisciplined(host.sources(), log).Save(); err != nil {
		t.Fatalf("a clock without a state file: Save = %v", err)
	}
}

func FuzzDecodeState(f *testing.F) {
	f.Add(encodeState(State{Time: epoch, Offset: -int64(time.Hour)}))
	f.Add([]byte(`{"format":1,"time_ns":1,"offset_ns":0}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := decodeState(b)
		if err != nil {
			return
		}
		got, err := decodeState(encodeState(st))
		if err != nil || got != st {
			t.Fatalf("round trip of %+v: %+v, %v", st, got, err)
		}
		// Whatever the wall clock, resuming from an accepted state
		// never goes below its time and never overflows.
		for _, wall := range []int64{1, epoch, maxStateTime - 1} {
			tm, off, _ := resume(st, wall)
			if tm < st.Time || tm-off != wall {
				t.Fatalf("resume(%+v, %d) = %d, %d", st, wall, tm, off)
			}
		}
	})
}
