package server

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/shards"
)

// The memory limit (maxmemory) and what happens at it (maxmemory-policy).
//
// Used memory is what the process holds for the server's data: the
// keyspace tables' accounted bytes (shards/memory.go: slot arrays, arenas
// without their garbage, values outside the arena), the clients' buffers,
// what the process held at start-up before any data (like Redis's
// used_memory_startup: mostly the binary's resident code), and the growth
// since then of the Go runtime's own memory (metadata, stacks; read hz
// times a second). Every term is a counter, so reading it costs a few
// atomic loads and a command can check it before it runs. What it leaves
// out is garbage: the keyspace arenas' (at most an eighth of them under a
// limit) and the Go heap's between collections, which the Go limit below
// bounds.
//
// Before a command that may grow memory (Redis's deny-oom commands, every
// command that may create a key, every script, and an EXEC that queued
// one) runs while used memory is above maxmemory, the server first evicts
// by the policy (evict.go). With noeviction, or when nothing is left to
// evict, deny-oom commands and anything queued in MULTI get Redis's OOM
// error, and a command that may only create keys (CL.THROTTLE) runs but may
// not create one (refuseForMemory). Commands that do not grow memory
// (reads, DEL, EXPIRE) always run, without evicting. A script's deny-oom
// calls are refused until the script has written something (a script is
// not stopped half way). A cluster follower never evicts: the leader's
// evictions reach it as deletes.
//
// The Go runtime is told of the limit (debug.SetMemoryLimit) so that its
// collector runs before garbage pushes the process far past it, and the
// keyspace compacts its arenas sooner (shards.Map.SetTightArena).

// errOOM is Redis's reply to a command refused at the memory limit.
const errOOM = "OOM command not allowed when used memory > 'maxmemory'."

// evictionPolicy is a row of maxmemory-policy's values.
type evictionPolicy struct {
	name     string
	evicts   bool
	kind     shards.PolicyKind
	volatile bool
	track    shards.Tracking
}

// evictionPolicies lists maxmemory-policy's values in Redis's order (its
// error text lists them so); noeviction is the default.
var evictionPolicies = []evictionPolicy{
	{"volatile-lru", true, shards.EvictLRU, true, shards.TrackLRU},
	{"volatile-lfu", true, shards.EvictLFU, true, shards.TrackLFU},
	{"volatile-random", true, shards.EvictRandom, true, shards.TrackNone},
	{"volatile-ttl", true, shards.EvictTTL, true, shards.TrackNone},
	{"allkeys-lru", true, shards.EvictLRU, false, shards.TrackLRU},
	{"allkeys-lfu", true, shards.EvictLFU, false, shards.TrackLFU},
	{"allkeys-random", true, shards.EvictRandom, false, shards.TrackNone},
	{"noeviction", false, 0, false, shards.TrackNone},
}

func policyByName(name string) *evictionPolicy {
	for i := range evictionPolicies {
		if evictionPolicies[i].name == name {
			return &evictionPolicies[i]
		}
	}
	return nil
}

var policyCodec = codec[string]{
	parse: func(v string) (string, error) {
		v = strings.ToLower(v)
		if policyByName(v) == nil {
			names := make([]string, len(evictionPolicies))
			for i, p := range evictionPolicies {
				names[i] = p.name
			}
			return "", oneOfError(names...)
		}
		return v, nil
	},
	format: func(v string) string { return v },
}

// memLimit is the running server's memory limit state.
type memLimit struct {
	max     atomic.Int64 // maxmemory in bytes; 0: no limit
	policy  atomic.Pointer[evictionPolicy]
	samples atomic.Int32
	startup int64         // used memory at start-up, before any data
	cursor  atomic.Uint64 // the next (database, shard) eviction visits
	barren  atomic.Int64  // Unix ns until which eviction is known fruitless (evict.go)
	// goLimit is the limit last given to the Go runtime (0: none), and
	// baseGoLimit the one in effect before (--gomemlimit, GOMEMLIMIT, or
	// none), which it never exceeds and which shutdown restores.
	goLimit     atomic.Int64
	baseGoLimit int64
	// outsideGo is the resident memory at start-up that the Go runtime
	// does not count (the binary's code and data): RSS is it, plus what
	// the runtime holds (less the untouched ballast), plus mapped slots.
	outsideGo int64
	peak      atomic.Int64 // highest used memory seen (used_memory_peak)
	// overhead is the growth of the Go runtime's own memory since
	// start-up (overhead0 then): see runtimeOverheadClasses.
	overhead  atomic.Int64
	overhead0 int64

	mu  sync.Mutex // serializes changes of the settings below
	cfg Config     // the memory settings in effect (its other fields unused)
}

// goBallast is Config.GoBallast's figure now (0 without one).
func (s *Server) goBallast() int64 {
	if s.cfg.GoBallast == nil {
		return 0
	}
	return s.cfg.GoBallast()
}

// initMemory measures the start-up footprint and applies the configuration.
func (s *Server) initMemory() {
	goHeld := max(0, runtimeHeld()-s.goBallast())
	s.mem.startup = int64(residentBytes())
	if s.mem.startup == 0 { // not Linux: what the runtime holds
		s.mem.startup = goHeld
	}
	s.mem.outsideGo = max(0, s.mem.startup-goHeld)
	s.mem.overhead0 = runtimeOverhead()
	s.mem.baseGoLimit = debug.SetMemoryLimit(-1)
	s.setMemoryConfig(func(c *Config) { *c = s.cfg })
}

// memConfig returns the memory settings in effect.
func (s *Server) memConfig() Config {
	s.mem.mu.Lock()
	defer s.mem.mu.Unlock()
	return s.mem.cfg
}

// setMemoryConfig changes the memory settings with f and applies them
// (start-up and CONFIG SET). Requires that the caller holds no shard.
func (s *Server) setMemoryConfig(f func(*Config)) {
	s.mem.mu.Lock()
	defer s.mem.mu.Unlock()
	f(&s.mem.cfg)
	s.applyMemoryConfig(&s.mem.cfg)
}

// runtimeHeld is what the Go runtime holds from the OS now: everything it
// mapped less what it returned.
func runtimeHeld() int64 {
	sample := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(sample)
	return int64(sample[0].Value.Uint64() - sample[1].Value.Uint64())
}

// runtimeOverheadClasses are the Go runtime's memory that holds no object:
// its own metadata and goroutine stacks. They grow with the heap and the
// connections, so used memory counts their growth since start-up
// (runtimeOverhead). Free space inside the heap's spans (heap/unused) is
// left out: it is mostly the garbage of the last collection, and counting
// it made eviction follow the collector's cycles (a 2 MB limit lost every
// key to a few MB of freed space); the Go limit bounds it instead.
var runtimeOverheadClasses = []string{
	"/memory/classes/heap/stacks:bytes",
	"/memory/classes/os-stacks:bytes",
	"/memory/classes/metadata/other:bytes",
	"/memory/classes/metadata/mspan/inuse:bytes",
	"/memory/classes/metadata/mcache/inuse:bytes",
	"/memory/classes/other:bytes",
	"/memory/classes/profiling/buckets:bytes",
}

// runtimeOverhead reads the sum of runtimeOverheadClasses.
func runtimeOverhead() int64 {
	sample := make([]metrics.Sample, len(runtimeOverheadClasses))
	for i, name := range runtimeOverheadClasses {
		sample[i].Name = name
	}
	metrics.Read(sample)
	var n int64
	for _, x := range sample {
		if x.Value.Kind() == metrics.KindUint64 {
			n += int64(x.Value.Uint64())
		}
	}
	return n
}

// noteOverhead refreshes the runtime overhead that used memory counts: its
// growth since start-up (what it was then is in startup). Called hz times a
// second with the access clocks.
func (s *Server) noteOverhead() {
	s.mem.overhead.Store(max(0, runtimeOverhead()-s.mem.overhead0))
}

// applyMemoryConfig makes c's memory settings effective. Requires mem.mu.
func (s *Server) applyMemoryConfig(c *Config) {
	p := policyByName(c.MaxMemoryPolicy)
	if p == nil {
		p = policyByName("noeviction")
	}
	s.mem.policy.Store(p)
	s.mem.samples.Store(int32(c.MaxMemorySamples))
	s.mem.max.Store(c.MaxMemory)
	s.setAccessClocks()
	for _, db := range s.dbs {
		db.SetTracking(p.track)
		db.SetLFUParams(c.LFULogFactor, c.LFUDecayTime)
		db.SetTightArena(c.MaxMemory > 0)
	}
	s.tuneGoLimit()
	if c.MaxMemory > 0 {
		if used := s.usedMemory(); used > c.MaxMemory {
			s.log.Warn("maxmemory is below the memory in use: keys will be evicted or writes refused, by maxmemory-policy",
				"maxmemory", c.MaxMemory, "used_memory", used, "policy", p.name)
		}
	}
}

// setAccessClocks gives the keyspace's access stamps (LRU, LFU) the
// current time and refreshes the runtime overhead; the active expiry loop
// calls it hz times a second.
func (s *Server) setAccessClocks() {
	s.noteOverhead()
	now := s.clock.Now()
	for _, db := range s.dbs {
		db.SetAccessClock(now)
	}
}

// goLimitPercent is where the Go runtime's soft limit puts the process's
// resident memory, in percent of maxmemory: the bound is 110%, and
// the collector needs the room between used memory and it for garbage.
const goLimitPercent = 108

// tuneGoLimit gives the Go runtime a soft memory limit that keeps the
// process's resident memory near goLimitPercent of maxmemory: that, less
// the resident memory the runtime does not count (the binary, the slot
// arrays mapped outside its heap), plus the untouched ballast it does
// count; or it restores the limit it found when maxmemory is 0. Called when
// the settings change and once a second.
func (s *Server) tuneGoLimit() {
	s.mem.notePeak(s.usedMemory())
	maxmem := s.mem.max.Load()
	if maxmem == 0 || maxmem > math.MaxInt64/goLimitPercent {
		s.releaseGoLimit() // no limit, or one no process could reach
		return
	}
	var mapped int64
	for _, db := range s.dbs {
		mapped += db.MappedBytes()
	}
	rss := maxmem * goLimitPercent / 100
	limit := min(max(rss-s.mem.outsideGo-mapped, 16<<20)+s.goBallast(), s.mem.baseGoLimit)
	if old := s.mem.goLimit.Load(); old == 0 || abs(limit-old) > 1<<20 {
		s.mem.goLimit.Store(limit)
		debug.SetMemoryLimit(limit)
	}
}

// releaseGoLimit restores the Go runtime's memory limit if this server
// changed it (at shutdown: the limit is the process's, not the server's).
func (s *Server) releaseGoLimit() {
	if s.mem.goLimit.Swap(0) != 0 {
		debug.SetMemoryLimit(s.mem.baseGoLimit)
	}
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// notePeak raises the peak to used and returns the peak.
func (m *memLimit) notePeak(used int64) int64 {
	for {
		p := m.peak.Load()
		if used <= p || m.peak.CompareAndSwap(p, used) {
			return max(p, used)
		}
	}
}

// datasetBytes is the keyspace tables' accounted bytes over every database.
func (s *Server) datasetBytes() int64 {
	var n int64
	for _, db := range s.dbs {
		n += db.Bytes()
	}
	return n
}

// keyCount is the number of keys over every database (MEMORY STATS).
func (s *Server) keyCount() int64 {
	var n int64
	for _, db := range s.dbs {
		n += db.Len()
	}
	return n
}

// usedMemory is the figure maxmemory is compared with (used_memory).
func (s *Server) usedMemory() int64 {
	return s.mem.startup + s.mem.overhead.Load() + s.datasetBytes() + s.clientBufferBytes()
}

// overMemory reports whether a limit is set and used memory is above it.
func (s *Server) overMemory() bool {
	m := s.mem.max.Load()
	return m > 0 && s.usedMemory() > m
}

// growsMemory reports whether cmd is refused at the memory limit: a
// deny-oom command, any command a MULTI would queue (queueing takes memory
// too), or an EXEC that queued a deny-oom command.
func growsMemory(cmd *Command, c *client) bool {
	switch {
	case cmd.Has(command.DenyOOM):
		return true
	case c.multi != nil && !cmd.Has(command.NoQueue):
		return true
	}
	return c.execQueued(cmd, command.DenyOOM)
}

// mayAddKeys reports whether cmd may create keys (an EXEC: one it queued)
// or is a script, which may do anything.
func mayAddKeys(cmd *Command, c *client) bool {
	return cmd.Flags&(command.AddsKeys|command.Scripting) != 0 ||
		c.execQueued(cmd, command.AddsKeys) || c.execQueued(cmd, command.Scripting)
}

// execQueued reports whether cmd is an EXEC and the transaction it runs
// queued a command with flag f.
func (c *client) execQueued(cmd *Command, f command.Flag) bool {
	if cmd.Name != "exec" || c.multi == nil {
		return false
	}
	for _, q := range c.multi.cmds {
		if q.cmd.Has(f) {
			return true
		}
	}
	return false
}

// refuseForMemory runs before a command while a limit is set and used
// memory is above it. Before a command that may grow memory it evicts, if
// the policy allows, until memory is under the limit or its time budget
// is spent; reads, deletes and the like run without it. If the limit
// still cannot be kept (noeviction, or nothing left to evict):
//   - a deny-oom command (and anything inside MULTI) is refused: *errText
//     is set to the OOM error and it reports true;
//   - a command that may only create keys, like CL.THROTTLE (redis-cell
//     has no deny-oom flag), runs with c.memFull set: it updates existing
//     keys, and is refused with the OOM error only if it would create one
//     (roomError), so the limits already in memory keep working.
func (s *Server) refuseForMemory(c *client, cmd *Command, errText *string) bool {
	maxmem := s.mem.max.Load()
	if s.usedMemory() <= maxmem {
		return false
	}
	if s.repl != nil && !s.leading.Load() {
		return false // the leader decides (and its writes arrive regardless)
	}
	deny, adds := growsMemory(cmd, c), mayAddKeys(cmd, c)
	if !deny && !adds {
		return false
	}
	if p := s.mem.policy.Load(); p.evicts && s.evict(maxmem, p, time.Now().Add(evictBudget)) {
		return false
	}
	if deny {
		*errText = errOOM
		return true
	}
	c.memFull = true
	return false
}

// scriptOOM is the error a command called by a script gets at the memory
// limit: only deny-oom commands, and only before the script wrote
// anything (written). (A command that only creates keys is refused if it
// would create one: Server.noRoom.)
func (s *Server) scriptOOM(cmd *Command, written bool) string {
	if !written && cmd.Has(command.DenyOOM) && s.overMemory() {
		return errOOM
	}
	return ""
}
