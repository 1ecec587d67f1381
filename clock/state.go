package clock

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"

	"github.com/turnstile/turnstile/internal/atomicfile"
)

// StateFile is the name of the clock's state file in the data directory.
const StateFile = "turnstile-clock.json"

// stateFormat is the version of the state file's layout.
const stateFormat = 1

// maxStateTime bounds the times and offsets a state file may hold (2^62 ns
// is in the year 2116), so that no sum of them overflows.
const maxStateTime = 1 << 62

// State is what a restart needs to continue the clock: the last time it
// served and its offset from the wall clock then. The file is JSON:
// {"format":1,"time_ns":<Unix ns>,"offset_ns":<ns>}.
type State struct {
	Time   int64 // server time, Unix ns
	Offset int64 // server time minus the wall clock at Time, ns
}

type stateJSON struct {
	Format int   `json:"format"`
	Time   int64 `json:"time_ns"`
	Offset int64 `json:"offset_ns"`
}

// encodeState returns the file's bytes for st.
func encodeState(st State) []byte {
	b, _ := json.Marshal(stateJSON{Format: stateFormat, Time: st.Time, Offset: st.Offset}) // cannot fail: plain integers
	return append(b, '\n')
}

// decodeState parses a state file, rejecting anything it did not write.
func decodeState(b []byte) (State, error) {
	var j stateJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return State{}, fmt.Errorf("parse: %w", err)
	}
	switch {
	case j.Format != stateFormat:
		return State{}, fmt.Errorf("format %d, want %d", j.Format, stateFormat)
	case j.Time <= 0 || j.Time >= maxStateTime:
		return State{}, fmt.Errorf("time_ns %d is not a plausible time", j.Time)
	case j.Offset <= -maxStateTime || j.Offset >= maxStateTime || j.Time-j.Offset <= 0:
		return State{}, fmt.Errorf("offset_ns %d does not fit time_ns %d", j.Offset, j.Time)
	}
	return State{Time: j.Time, Offset: j.Offset}, nil
}

// resume computes where a clock restarted at wall-clock time wall continues
// from st: its time and offset, and the step of the wall clock it sees
// (negative when the wall clock is behind the last reading; 0 otherwise).
// The downtime, measured by the wall clock, slews the offset as running
// would have; the time never falls below st.Time.
func resume(st State, wall int64) (t, off, step int64) {
	lastWall := st.Time - st.Offset
	down := wall - lastWall
	if down < 0 {
		return st.Time, st.Time - wall, down
	}
	off = st.Offset - slewed(st.Offset, down)
	return wall + off, off, 0
}

// Restore returns a clock that continues from the state file at path and
// keeps it there (Save). A missing file starts the clock at the wall clock;
// so does an unreadable one, with a warning. log receives the clock's
// messages (nil: slog.Default()).
func Restore(path string, src Sources, log *slog.Logger) *Disciplined {
	if log == nil {
		log = slog.Default()
	}
	wall, m := src.Read() // the file's I/O below must not count as a step
	t, off, step := wall, int64(0), int64(0)
	b, err := os.ReadFile(path)
	var st State
	if err == nil {
		st, err = decodeState(b)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		log.Info("no clock state yet; the clock starts at the wall clock", "file", path)
	case err != nil:
		log.Warn("cannot read the clock state; the clock starts at the wall clock, which may be behind the time of the last run",
			"file", path, "err", err)
	default:
		t, off, step = resume(st, wall)
		if step <= -int64(StepThreshold) {
			log.Warn("the wall clock is behind the last run's; the clock continues from the last run's time and slews toward it",
				"step_ms", step/1e6, "direction", direction(step), "offset_ms", off/1e6, "slew_seconds", slewSeconds(off))
		} else if off != 0 {
			log.Info("the clock continues its slew toward the wall clock", "offset_ms", off/1e6, "slew_seconds", slewSeconds(off))
		}
	}
	d := newDisciplined(src, log, t, off, m)
	d.path = path
	if step <= -int64(StepThreshold) {
		d.steps.Store(1)
		d.lastStep.Store(step)
	}
	return d
}

// Save writes the clock's state to its state file (none for a clock from
// NewDisciplined), atomically: a new file is written, synced and renamed
// over the old one, so a crash leaves the old state or the new one. The
// first failure after a success is logged as a warning, the next success
// as a notice.
func (d *Disciplined) Save() error {
	if d.path == "" {
		return nil
	}
	d.saveMu.Lock()
	defer d.saveMu.Unlock()
	s := d.Status()
	err := writeFileAtomic(d.path, encodeState(State{Time: s.Now, Offset: s.Offset}))
	switch {
	case err != nil && !d.saveFailing:
		d.log.Warn("cannot save the clock state; a restart may not continue the clock", "file", d.path, "err", err)
	case err == nil && d.saveFailing:
		d.log.Info("clock state saved again", "file", d.path)
	}
	d.saveFailing = err != nil
	return err
}

// StatePath returns the clock's state file ("" for none).
func (d *Disciplined) StatePath() string { return d.path }

// writeFileAtomic replaces the state file. It never creates the directory:
// a data directory that has gone away (moved, unmounted) makes the save
// fail, rather than be recreated empty behind the operator's back.
func writeFileAtomic(path string, data []byte) error {
	if err := atomicfile.Write(path, data, 0o644); err != nil {
		return fmt.Errorf("save clock state: %w", err)
	}
	return nil
}
