package clock

import (
	"sync/atomic"
	"time"
)

// Clock returns the current time in nanoseconds since the Unix epoch.
// Implementations are safe for concurrent use.
type Clock interface {
	Now() int64
}

// Monotonic is the wall clock read once at construction, advanced by the
// monotonic clock afterwards: it never follows a later step of the wall
// clock. The server uses Disciplined instead; Monotonic remains for tests
// that want a real clock without the wall clock's steps.
type Monotonic struct {
	start   time.Time // carries a monotonic reading
	startNs int64     // start as Unix nanoseconds
}

// NewMonotonic anchors a monotonic clock to the current wall-clock time.
func NewMonotonic() *Monotonic {
	t := time.Now()
	return &Monotonic{start: t, startNs: t.UnixNano()}
}

// Now returns the anchored Unix time in nanoseconds. It never decreases.
func (c *Monotonic) Now() int64 {
	return c.startNs + int64(time.Since(c.start))
}

// Manual is a clock for tests: it only moves when told to.
type Manual struct {
	ns atomic.Int64
}

// NewManual returns a manual clock set to ns.
func NewManual(ns int64) *Manual {
	m := &Manual{}
	m.ns.Store(ns)
	return m
}

// Now returns the clock's current value.
func (m *Manual) Now() int64 { return m.ns.Load() }

// Set moves the clock to ns (backwards too, for tests of clock jumps).
func (m *Manual) Set(ns int64) { m.ns.Store(ns) }

// Advance moves the clock forward by d.
func (m *Manual) Advance(d time.Duration) { m.ns.Add(int64(d)) }

var (
	_ Clock = (*Monotonic)(nil)
	_ Clock = (*Manual)(nil)
	_ Clock = (*Floor)(nil)
)

// Floor is a clock that never reads below a floor that can only rise: a
// replicated node raises it to the timestamp of every entry it applies, so
// that when it becomes the leader its time continues from the last leader's
// and a node whose own clock lags cannot hand out fresh limits.
type Floor struct {
	base  Clock
	floor atomic.Int64
}

// NewFloor returns base floored at 0 until Raise is called.
func NewFloor(base Clock) *Floor { return &Floor{base: base} }

// Now returns the later of the base clock and the floor.
func (f *Floor) Now() int64 { return max(f.base.Now(), f.floor.Load()) }

// Raise lifts the floor to ns if it is below.
func (f *Floor) Raise(ns int64) {
	for {
		cur := f.floor.Load()
		if ns <= cur || f.floor.CompareAndSwap(cur, ns) {
			return
		}
	}
}

// Level returns the floor.
func (f *Floor) Level() int64 { return f.floor.Load() }

// Base returns the clock the floor wraps.
func (f *Floor) Base() Clock { return f.base }
