package server

import "sync/atomic"

// timingSample: one command in this many is timed for INFO commandstats.
const timingSample = 16

// stats are the server counters INFO reports. All fields are atomics.
type stats struct {
	totalConns    atomic.Int64
	rejectedConns atomic.Int64
	unknown       atomic.Int64
	cmds          []cmdStat // indexed by Command.id
}

type cmdStat struct {
	calls atomic.Int64
	usec  atomic.Int64
	_     [48]byte // keep hot counters of different commands apart
}

func (st *stats) init(t *Table) { st.cmds = make([]cmdStat, len(t.sorted)) }

func (st *stats) record(cmd *Command, usec int64) {
	cs := &st.cmds[cmd.id]
	cs.calls.Add(1)
	if usec > 0 {
		cs.usec.Add(usec)
	}
}

func (st *stats) totalCommands() int64 {
	var n int64
	for i := range st.cmds {
		n += st.cmds[i].calls.Load()
	}
	return n
}
