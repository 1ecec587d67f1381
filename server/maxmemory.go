package server

import (
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
// and what the process held at start-up before any data (like Redis's
// used_memory_startup). Every term is a counter, so reading it costs a few
// atomic loads and a command can check it before it runs.
//
// Before a command that may grow memory (Redis's deny-oom commands, every
// command that may create a key, and an EXEC that queued one) runs while
// used memory is above maxmemory, the server first evicts by the policy
// (evict.go); with noeviction, or when nothing is left to evict, the
// command gets Redis's OOM error. Commands that do not grow memory (reads,
// DEL, EXPIRE) always run. A script's commands are refused the same way
// until the script has written something (a script is not stopped half
// way). A cluster follower never evicts: the leader's evictions reach it as
// deletes.
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
	// goLimit is the limit last given to the Go runtime (0: none), and
	// baseGoLimit the one in effect before (--gomemlimit, GOMEMLIMIT, or
	// none), which it never exceeds and which shutdown restores.
	goLimit     atomic.Int64
	baseGoLimit int64
	peak    atomic.Int64 // highest used memory seen (used_memory_peak)

	mu  sync.Mutex // serializes changes of the settings below
	cfg Config     // the memory settings in effect (its other fields unused)
}

// initMemory measures the start-up footprint and applies the configuration.
func (s *Server) initMemory() {
	s.mem.startup = int64(residentBytes())
	if s.mem.startup == 0 { // not Linux: what the runtime holds
		s.mem.startup = max(0, runtimeHeld()-s.cfg.GoBallast)
	}
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
// current time; the active expiry loop calls it hz times a second.
func (s *Server) setAccessClocks() {
	now := s.clock.Now()
	for _, db := range s.dbs {
		db.SetAccessClock(now)
	}
}

// goLimitHeadroom is how far above maxmemory the Go runtime's own limit
// lies: room for garbage between collections.
const goLimitHeadroom = 20

// tuneGoLimit gives the Go runtime a soft memory limit a little above
// maxmemory, less the slot arrays mapped outside its heap (which it does
// not count) and plus the untouched ballast (which it counts), or restores
// the limit it found when maxmemory is 0. Called when the settings change
// and once a second.
func (s *Server) tuneGoLimit() {
	s.mem.notePeak(s.usedMemory())
	maxmem := s.mem.max.Load()
	if maxmem == 0 {
		s.releaseGoLimit()
		return
	}
	var mapped int64
	for _, db := range s.dbs {
		mapped += db.MappedBytes()
	}
	limit := min(max(maxmem+maxmem/goLimitHeadroom-mapped, 16<<20)+s.cfg.GoBallast, s.mem.baseGoLimit)
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

// usedMemory is the figure maxmemory is compared with (used_memory).
func (s *Server) usedMemory() int64 {
	return s.mem.startup + s.datasetBytes() + s.clientBufferBytes()
}

// overMemory reports whether a limit is set and used memory is above it.
func (s *Server) overMemory() bool {
	m := s.mem.max.Load()
	return m > 0 && s.usedMemory() > m
}

// growsMemory reports whether cmd is refused at the memory limit: a
// deny-oom command, one that may create keys, any command a MULTI would
// queue (queueing takes memory too), or an EXEC that queued one of the
// first kinds.
func growsMemory(cmd *Command, c *client) bool {
	if cmd.Flags&(command.DenyOOM|command.AddsKeys) != 0 {
		return true
	}
	if c.multi != nil && !cmd.Has(command.NoQueue) {
		return true
	}
	if cmd.Name == "exec" && c.multi != nil {
		for _, q := range c.multi.cmds {
			if q.cmd.Flags&(command.DenyOOM|command.AddsKeys) != 0 {
				return true
			}
		}
	}
	return false
}

// refuseForMemory runs before a command while a limit is set: it evicts
// if used memory is above the limit and the policy allows, and sets
// *errText to the OOM error and reports true if cmd grows memory and the
// limit still cannot be kept.
func (s *Server) refuseForMemory(c *client, cmd *Command, errText *string) bool {
	maxmem := s.mem.max.Load()
	if s.usedMemory() <= maxmem {
		return false
	}
	if s.repl != nil && !s.leading.Load() {
		return false // the leader decides (and its writes arrive regardless)
	}
	p := s.mem.policy.Load()
	running := p.evicts && s.evict(maxmem, p, time.Now().Add(evictBudget))
	if running || !growsMemory(cmd, c) {
		return false
	}
	*errText = errOOM
	return true
}

// scriptOOM is the error a command called by a script gets at the memory
// limit: only deny-oom commands, and only before the script wrote
// anything (written).
func (s *Server) scriptOOM(cmd *Command, written bool) string {
	if !written && cmd.Flags&(command.DenyOOM|command.AddsKeys) != 0 && s.overMemory() {
		return errOOM
	}
	return ""
}

// clientBufferBytes is a placeholder until client buffers are counted.
func (s *Server) clientBufferBytes() int64 { return 0 }
