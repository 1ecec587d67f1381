package clock

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// SlewPercent is how much faster or slower than real time the disciplined
// clock runs while its offset from the wall clock is not zero (see the
// package doc for the choice).
const SlewPercent = 10

// StepThreshold is the smallest change of the wall clock against the
// monotonic clock, between two readings, that is reported as a step.
const StepThreshold = 100 * time.Millisecond

// NoiseBand is the largest change of the offset, between two readings of
// the wall clock, taken as noise and not followed. On Linux the wall clock
// and the monotonic clock are disciplined together, so their difference
// moves only when the wall clock steps; a smaller apparent change is the
// reading itself (a thread descheduled between the two clocks' reads).
// Slewing it away would run the clock up to SlewPercent fast for ten
// times its size, a burst that a limit with a short period would feel.
const NoiseBand = time.Millisecond

// resyncEvery is how long a segment serves readings before the wall clock is
// read again: the delay before a step is noticed while the clock is read.
const resyncEvery = 100 * time.Millisecond

// Sources are what a Disciplined clock reads. Both must be safe for
// concurrent use.
type Sources struct {
	// Read returns the system's wall clock, Unix nanoseconds, and the
	// monotonic clock (as Mono) read at one instant, so that their
	// difference is exact. The wall clock may step either way at any
	// time.
	Read func() (wall, mono int64)
	// Mono is a monotonic clock in nanoseconds from any origin: it never
	// decreases and advances at the real rate. It measures all elapsed
	// time.
	Mono func() int64
}

// System returns the process's clocks: time.Now's wall and monotonic
// readings (one time.Now serves both in Read).
func System() Sources {
	start := time.Now()
	return Sources{
		Read: func() (int64, int64) {
			now := time.Now()
			return now.UnixNano(), int64(now.Sub(start))
		},
		Mono: func() int64 { return int64(time.Since(start)) },
	}
}

// segment is the clock between two readings of the wall clock: at
// monotonic time m (m0 <= m < horizon) the time is t0 + (m - m0) minus the
// part of off0 slewed away by then. A segment is immutable once published.
type segment struct {
	m0      int64 // monotonic time of the start
	t0      int64 // server time at m0
	off0    int64 // offset at m0: server time minus wall clock
	horizon int64 // monotonic time from which the segment no longer serves
}

// slewed is the part of off absorbed after dm of real time: off's sign,
// at most SlewPercent of dm, never more than off.
func slewed(off, dm int64) int64 {
	if dm <= 0 || off == 0 {
		return 0
	}
	most := dm/100*SlewPercent + dm%100*SlewPercent/100 // no overflow for any dm
	if off > 0 {
		return min(off, most)
	}
	return max(off, -most)
}

func (g *segment) at(m int64) int64 {
	dm := max(m-g.m0, 0)
	return g.t0 + dm - slewed(g.off0, dm)
}

// offsetAt is the offset at m, supposing the wall clock kept pace with the
// monotonic clock since m0.
func (g *segment) offsetAt(m int64) int64 {
	return g.off0 - slewed(g.off0, max(m-g.m0, 0))
}

// Disciplined is the server clock: the wall clock plus an offset that
// absorbs the wall clock's steps and slews toward zero at SlewPercent (see
// the package doc). Now is lock-free; mu serializes publishing the next
// segment. Safe for concurrent use.
type Disciplined struct {
	src Sources
	log *slog.Logger

	seg atomic.Pointer[segment]
	mu  sync.Mutex // held while the next segment is made

	steps    atomic.Int64 // steps of the wall clock seen since start
	lastStep atomic.Int64 // size of the last one: positive forward, negative backward

	path        string     // state file ("": none)
	saveMu      sync.Mutex // serializes Save; guards saveFailing
	saveFailing bool
}

// NewDisciplined returns a clock that starts at the wall clock and keeps no
// state file. log receives the step warnings (nil: slog.Default()).
func NewDisciplined(src Sources, log *slog.Logger) *Disciplined {
	w, m := src.Read()
	return newDisciplined(src, log, w, 0, m)
}

// newDisciplined starts the clock at time t with offset off at monotonic
// time m (read with the wall clock that t and off derive from: any delay
// between that reading and this call is still counted).
func newDisciplined(src Sources, log *slog.Logger, t, off, m int64) *Disciplined {
	if log == nil {
		log = slog.Default()
	}
	d := &Disciplined{src: src, log: log}
	d.seg.Store(&segment{m0: m, t0: t, off0: off, horizon: m + int64(resyncEvery)})
	return d
}

// Now returns the server time in Unix nanoseconds. It never decreases.
func (d *Disciplined) Now() int64 {
	g, m := d.read()
	return g.at(m)
}

// read returns the segment that serves the monotonic time m it returns.
func (d *Disciplined) read() (*segment, int64) {
	g := d.seg.Load()
	if m := d.src.Mono(); m < g.horizon {
		return g, m
	}
	return d.resync()
}

// resync reads the wall clock and publishes the segment that continues the
// current one from its horizon, unless another goroutine already did.
func (d *Disciplined) resync() (*segment, int64) {
	d.mu.Lock()
	g := d.seg.Load()
	m1 := d.src.Mono()
	if m1 < g.horizon {
		d.mu.Unlock()
		return g, m1
	}
	w, m2 := d.src.Read()
	c := g.horizon // no reading was served at or after c yet
	tc := g.at(c)
	off := tc - (w - (m2 - c)) // the wall clock at c, supposing it kept pace since w
	step := g.offsetAt(c) - off
	if step < int64(NoiseBand) && step > -int64(NoiseBand) {
		off, step = g.offsetAt(c), 0 // noise: keep the course
	}
	next := &segment{m0: c, t0: tc, off0: off, horizon: m2 + int64(resyncEvery)}
	d.seg.Store(next)
	big := step >= int64(StepThreshold) || step <= -int64(StepThreshold)
	if big {
		d.steps.Add(1)
		d.lastStep.Store(step)
	}
	d.mu.Unlock()
	if big {
		d.log.Warn("the wall clock stepped; the server clock keeps its pace and slews toward it",
			"step_ms", step/1e6, "direction", direction(step),
			"offset_ms", off/1e6, "slew_seconds", slewSeconds(off))
	}
	return next, m2
}

func direction(step int64) string {
	if step > 0 {
		return "forward"
	}
	return "backward"
}

// slewSeconds is how long absorbing off takes, in whole seconds.
func slewSeconds(off int64) int64 {
	if off < 0 {
		off = -off
	}
	return off / 1e9 * 100 / SlewPercent
}

// Status is the clock's state as INFO shows it.
type Status struct {
	Now      int64 // server time, Unix ns
	Offset   int64 // server time minus the wall clock, ns: positive ahead, negative behind
	Steps    int64 // steps of the wall clock seen since start
	LastStep int64 // the last step, ns: positive forward, negative backward
}

// Slewing tells whether the clock is still converging on the wall clock:
// whether it is a millisecond or more away from it. (Each reading of the
// wall clock leaves an offset of the time the reading took, nanoseconds,
// slewed away within microseconds.)
func (s Status) Slewing() bool { return s.Offset >= 1e6 || s.Offset <= -1e6 }

// Status returns the clock's current state.
func (d *Disciplined) Status() Status {
	g, m := d.read()
	return Status{Now: g.at(m), Offset: g.offsetAt(m), Steps: d.steps.Load(), LastStep: d.lastStep.Load()}
}
