package server

import (
	"strings"

	"github.com/turnstile/turnstile/clock"
)

// disciplined returns the server's disciplined clock, looking through a
// cluster node's Floor, or nil for another clock (a test's manual clock).
func (s *Server) disciplined() *clock.Disciplined {
	c := s.clock
	for {
		switch v := c.(type) {
		case *clock.Disciplined:
			return v
		case *clock.Floor:
			c = v.Base()
		default:
			return nil
		}
	}
}

// saveClock writes the clock's state file, if it keeps one (clock.Restore),
// so that a restart continues the clock instead of starting it from the
// wall clock. It runs once a second and at shutdown (backgroundLoop); the
// clock logs failures. The file is not part of the dataset: snapshots and
// the log hold absolute times only, and the clock state says which time it
// is on this host.
func (s *Server) saveClock() {
	if d := s.disciplined(); d != nil {
		d.Save()
	}
}

// infoClock writes the clock's fields of INFO server: its offset from the
// wall clock (positive ahead, negative behind), whether it is slewing, the
// slew rate, and the steps of the wall clock seen since start.
func infoClock(s *Server, b *strings.Builder) {
	var st clock.Status
	if d := s.disciplined(); d != nil {
		st = d.Status()
	}
	field(b, "clock_offset_ms", st.Offset/1e6)
	field(b, "clock_slewing", boolInt(st.Slewing()))
	field(b, "clock_slew_rate_perc", clock.SlewPercent)
	field(b, "clock_wall_steps", st.Steps)
	field(b, "clock_last_wall_step_ms", st.LastStep/1e6)
}
