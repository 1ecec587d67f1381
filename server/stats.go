package server

import "sync/atomic"

// timingSample: one command in this many is timed for INFO commandstats.
const timingSample = 16

// stats are the server counters INFO reports and CONFIG RESETSTAT resets.
// All fields are atomics. Counters that another package keeps (expired
// keys, in shards) are reported relative to a baseline taken at reset.
type stats struct {
	totalConns    atomic.Int64
	rejectedConns atomic.Int64
	// clients closed for client-output-buffer-limit and for
	// client-query-buffer-limit (Redis 7.4's INFO stats fields)
	outputLimitDisconns atomic.Int64
	queryLimitDisconns  atomic.Int64
	unknown             atomic.Int64 // unknown commands (Redis counts them in errorstats)
	errorReplies        atomic.Int64 // error replies sent, as errorstats counts them (countError)
	expiredBase         atomic.Int64 // expired keys counted by shards at the last reset
	evictedBase         atomic.Int64 // evicted keys counted by shards at the last reset
	cmds                []cmdStat    // indexed by Command.ID()
	limits              []limitStat  // limiter decisions, indexed by Command.ID()
}

// limitStat counts the decisions of a limiter command (CL.THROTTLE,
// RL.*), for the metrics: allowed and denied requests.
type limitStat struct {
	allowed, denied atomic.Int64
	_               [48]byte // keep different commands' counters apart
}

// decided counts a limiter decision of cmd.
func (st *stats) decided(cmd *Command, allowed bool) {
	ls := &st.limits[cmd.ID()]
	if allowed {
		ls.allowed.Add(1)
	} else {
		ls.denied.Add(1)
	}
}

// cmdStat counts one command (subcommands have their own). As Redis 7:
// calls and usec cover calls that ran; rejected calls failed before running
// (arity, authentication, loading, MISCONF, EXEC abort); failed calls ran
// and answered an error.
type cmdStat struct {
	calls    atomic.Int64
	usec     atomic.Int64
	rejected atomic.Int64
	failed   atomic.Int64
	hist     atomic.Pointer[latHist] // call durations (latency.go); nil until the first timed call
	_        [24]byte                // keep hot counters of different commands apart
}

func (st *stats) init(t *Table) {
	st.cmds = make([]cmdStat, len(t.All()))
	st.limits = make([]limitStat, len(t.All()))
}

// record counts a call of cmd that ran, and whether its reply was an error.
func (st *stats) record(cmd *Command, usec int64, failed bool) {
	cs := &st.cmds[cmd.ID()]
	cs.calls.Add(1)
	if usec > 0 {
		cs.usec.Add(usec)
	}
	if failed {
		cs.failed.Add(1) // its error reply was counted where it was made (errorstats.go)
	}
}

// reject counts a call of cmd refused before it ran (cmd nil: unknown).
// Its error reply is counted by countError.
func (st *stats) reject(cmd *Command) {
	if cmd == nil {
		st.unknown.Add(1)
		return
	}
	st.cmds[cmd.ID()].rejected.Add(1)
}

func (st *stats) totalCommands() int64 {
	var n int64
	for i := range st.cmds {
		n += st.cmds[i].calls.Load()
	}
	return n
}

// expiredKeys returns the keys expired since the last reset.
func (s *Server) expiredKeys() int64 {
	var n int64
	for _, db := range s.dbs {
		n += db.ExpiredKeys()
	}
	return n - s.stats.expiredBase.Load()
}

// resetStats is CONFIG RESETSTAT: every counter INFO stats and INFO
// commandstats report starts again from zero. (Counts of what exists now,
// such as connected clients or keys, are not statistics and stay.)
func (s *Server) resetStats() {
	st := &s.stats
	st.expiredBase.Add(s.expiredKeys())
	st.evictedBase.Add(s.evictedKeys())
	s.mem.peak.Store(s.usedMemory()) // as Redis: the peak starts again from now
	st.totalConns.Store(0)
	st.rejectedConns.Store(0)
	st.outputLimitDisconns.Store(0)
	st.queryLimitDisconns.Store(0)
	st.unknown.Store(0)
	st.errorReplies.Store(0)
	for i := range st.cmds {
		c := &st.cmds[i]
		c.calls.Store(0)
		c.usec.Store(0)
		c.rejected.Store(0)
		c.failed.Store(0)
	}
	s.resetOpsStats() // errorstats, latency histograms (ops.go)
}
