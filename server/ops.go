package server

import (
	"sync/atomic"

	"github.com/turnstile/turnstile/command"
)

// What operators use to see inside a running server: MONITOR (monitor.go),
// the slow log (slowlog.go), the latency monitor and the per-command latency
// histograms (latency.go), error statistics (errorstats.go), and the client
// controls CLIENT PAUSE (pause.go) and CLIENT REPLY (clientreply.go).
//
// Cost when unused: the dispatcher reads ops.monitors (MONITOR feed) and
// ops.pause (CLIENT PAUSE) with one atomic load each per command; a command's
// end time is read only when the slow log or the latency monitor is on, or
// on the commandstats sample (one call in timingSample). Everything else
// runs only for commands that failed, were slow, or while a monitor is
// attached.
//
// Locking: each part has its own mutex (slowlog.mu, latencyEvents.mu,
// errorStats.mu, monitors.mu); none is held while another is taken, and
// none is taken while a shard lock is held except errorStats.mu, which is
// taken last and guards only a map.

// opsState is the server's part of the above; see each file for its fields'
// rules.
type opsState struct {
	// timeAll is 1 while every command's duration is needed: the slow log
	// or the latency monitor is on. Else only the commandstats sample is
	// timed.
	timeAll atomic.Bool

	monitors monitors
	slow     slowlog
	latency  latencyEvents
	errs     errorStats
	pause    atomic.Pointer[pauseState]
	paused   atomic.Int32 // clients whose command waits for a pause to end (INFO blocked_clients)

	// latencyTracking: the per-command latency histograms are fed
	// (latency-tracking).
	latencyTracking atomic.Bool
}

// OpsConfig holds the operability parameters (config_params.go rows).
type OpsConfig struct {
	SlowlogSlowerThan       int64 // µs; -1: off; 0: every command
	SlowlogMaxLen           int64 // entries kept
	LatencyMonitorThreshold int64 // ms; 0: off
	LatencyTracking         bool  // per-command latency histograms (INFO latencystats)
}

// DefaultOpsConfig returns Redis's defaults.
func DefaultOpsConfig() OpsConfig {
	return OpsConfig{SlowlogSlowerThan: 10000, SlowlogMaxLen: 128, LatencyTracking: true}
}

func (s *Server) initOps() {
	o := &s.ops
	o.slow.threshold.Store(s.cfg.Ops.SlowlogSlowerThan)
	o.slow.maxLen.Store(s.cfg.Ops.SlowlogMaxLen)
	o.latency.threshold.Store(s.cfg.Ops.LatencyMonitorThreshold)
	o.latencyTracking.Store(s.cfg.Ops.LatencyTracking)
	s.updateTimeAll()
}

// updateTimeAll recomputes timeAll after a configuration change.
func (s *Server) updateTimeAll() {
	o := &s.ops
	o.timeAll.Store(o.slow.threshold.Load() >= 0 || o.latency.threshold.Load() > 0)
}

// observe accounts the duration dur (ns) of a call of cmd with args by c
// that ran: the slow log and the latency monitor when every call is timed
// (all); the command's histogram and INFO commandstats when the call is
// the sample (one in timingSample of the connection's calls, which stands
// for that many: an atomic add on a counter shared by every connection
// costs more than reading the clock). It returns the microseconds INFO
// commandstats adds.
func (s *Server) observe(c *client, cmd *Command, args [][]byte, start, dur int64, all, sample bool) int64 {
	usec := dur / 1000
	o := &s.ops
	if all {
		if th := o.slow.threshold.Load(); th >= 0 && usec >= th && cmd.Name != "exec" {
			o.slow.add(c, args, start, usec)
		}
		if th := o.latency.threshold.Load(); th > 0 && dur/1e6 >= th {
			ev := "command"
			if cmd.Has(command.Fast) {
				ev = "fast-command"
			}
			o.latency.add(ev, start/1e9, dur/1e6)
		}
	}
	if !sample {
		return 0
	}
	if o.latencyTracking.Load() {
		s.stats.cmds[cmd.ID()].histogram().add(usec, timingSample)
	}
	return usec * timingSample
}

// resetOpsStats is CONFIG RESETSTAT's part here: error statistics and the
// latency histograms. (As Redis, the slow log and the latency monitor's
// events are not statistics: SLOWLOG RESET and LATENCY RESET clear them.)
func (s *Server) resetOpsStats() {
	s.ops.errs.reset()
	for i := range s.stats.cmds {
		if h := s.stats.cmds[i].hist.Load(); h != nil {
			h.reset()
		}
	}
}
