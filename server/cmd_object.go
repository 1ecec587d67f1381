package server

import (
	"encoding/binary"
	"math"
	"runtime/debug"

	"github.com/turnstile/turnstile/coll"
	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
	"github.com/turnstile/turnstile/shards"
)

// OBJECT and MEMORY: what a key's value looks like inside.

func objectCommands() []*Command {
	const g = "generic"
	ro := command.Readonly
	return []*Command{
		{Name: "object", Arity: -2, Flags: 0, Group: g, Since: "2.2.3",
			Summary: "A container for object introspection commands.", Subs: []*Command{
				{Name: "encoding", Access: []command.KeyAccess{command.KeyAny}, Docs: "key:key", Arity: 3, Flags: ro, FirstKey: 2, LastKey: 2, Step: 1, Args: "<key>", Since: "2.2.3",
					Summary: "Returns the internal encoding of a key's value.", Handler: objectEncoding},
				{Name: "freq", Access: []command.KeyAccess{command.KeyAny}, Docs: "key:key", Arity: 3, Flags: ro, FirstKey: 2, LastKey: 2, Step: 1, Args: "<key>", Since: "4.0.0",
					Summary: "Returns the logarithmic access frequency counter of a key's value.", Handler: objectFreq},
				{Name: "idletime", Access: []command.KeyAccess{command.KeyAny}, Docs: "key:key", Arity: 3, Flags: ro, FirstKey: 2, LastKey: 2, Step: 1, Args: "<key>", Since: "2.2.3",
					Summary: "Returns the time since the last access to a key's value (tracked under the LRU policies; 0 otherwise).", Handler: objectIdleTime},
				{Name: "refcount", Access: []command.KeyAccess{command.KeyAny}, Docs: "key:key", Arity: 3, Flags: ro, FirstKey: 2, LastKey: 2, Step: 1, Args: "<key>", Since: "2.2.3",
					Summary: "Returns the reference count of a value of a key.", Handler: objectRefCount},
				{Name: "help", Arity: 2, Flags: command.Loading | command.Stale, Since: "6.2.0",
					Summary: "Returns helpful text about the different subcommands.", Handler: subcommandHelp},
			}},
		{Name: "memory", Arity: -2, Flags: 0, Group: "server", Since: "4.0.0",
			Summary: "A container for memory diagnostics commands.", Subs: []*Command{
				{Name: "usage", Access: []command.KeyAccess{command.KeyAny}, Docs: "key:key [SAMPLES count:integer]", Arity: -3, Flags: ro, FirstKey: 2, LastKey: 2, Step: 1, Args: "<key> [SAMPLES <count>]", Since: "4.0.0",
					Summary: "Estimates the memory usage of a key.", Handler: memoryUsage},
				{Name: "stats", Arity: 2, Flags: command.Loading | command.Stale, Since: "4.0.0",
					Summary: "Returns details about memory usage.", Handler: memoryStats},
				{Name: "purge", Arity: 2, Flags: 0, Since: "4.0.0",
					Summary: "Returns freed memory to the operating system.", Handler: memoryPurge},
				{Name: "help", Arity: 2, Flags: command.Loading | command.Stale, Since: "4.0.0",
					Summary: "Returns helpful text about the different subcommands.", Handler: subcommandHelp},
			}},
	}
}

// objectEntry returns the live entry of OBJECT's key, or replies nil.
func objectEntry(x *Ctx) (shards.Entry, bool) {
	e, ok := x.get(x.args[2])
	if !ok {
		x.w.Null()
	}
	return e, ok
}

// embstrMax is the longest string Redis keeps in the "embstr" encoding.
const embstrMax = 44

func objectEncoding(x *Ctx) {
	e, ok := objectEntry(x)
	if !ok {
		return
	}
	x.w.BulkString(encodingName(e))
}

// encodingName is the name OBJECT ENCODING reports for an entry.
func encodingName(e shards.Entry) string {
	switch e.Kind {
	case shards.KindInt:
		return "int"
	case shards.KindBytes:
		// Redis also turns a short string "raw" once APPEND or SETRANGE
		// changed it; Turnstile does not keep that history.
		if len(e.Str) <= embstrMax {
			return "embstr"
		}
		return "raw"
	}
	return e.Obj.(coll.Value).Encoding()
}

// sharedIntegers: Redis shares one object for each integer below this, and
// reports its reference count as the maximum.
const sharedIntegers = 10000

func objectRefCount(x *Ctx) {
	e, ok := objectEntry(x)
	if !ok {
		return
	}
	if e.Kind == shards.KindInt && e.Int >= 0 && e.Int < sharedIntegers {
		x.w.Int(math.MaxInt32)
		return
	}
	x.w.Int(1)
}

// lfuSwitchNote ends Redis's OBJECT IDLETIME and FREQ refusals.
const lfuSwitchNote = " Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."

// accessInfo reads the access stamp of OBJECT's key without touching it,
// or replies nil for a missing key.
func accessInfo(x *Ctx) (idle int64, freq int, ok bool) {
	idle, freq, ok = x.accessInfo(x.args[2])
	if !ok {
		x.w.Null()
	}
	return idle, freq, ok
}

// objectIdleTime replies the seconds since the key was last read or
// written, which only the LRU policies track (0 under the others, whose
// eviction needs no access times).
func objectIdleTime(x *Ctx) {
	idle, _, ok := accessInfo(x)
	switch {
	case !ok:
	case x.s.mem.policy.Load().track == shards.TrackLFU:
		x.w.Error("ERR An LFU maxmemory policy is selected, idle time not tracked." + lfuSwitchNote)
	default:
		x.w.Int(idle)
	}
}

func objectFreq(x *Ctx) {
	_, freq, ok := accessInfo(x)
	switch {
	case !ok:
	case x.s.mem.policy.Load().track != shards.TrackLFU:
		x.w.Error("ERR An LFU maxmemory policy is not selected, access frequency not tracked." + lfuSwitchNote)
	default:
		x.w.Int(int64(freq))
	}
}

// memoryUsage is MEMORY USAGE key [SAMPLES count]. The figure is what the
// key costs in its shard: its slot, its record (key bytes, expiry, string
// value) and, for a collection, the value's own estimate. SAMPLES is
// accepted and ignored: collections keep a running count, nothing is
// sampled.
func memoryUsage(x *Ctx) {
	for i := 3; i < len(x.args); i += 2 {
		if !isKeyword(x.args[i], "samples") || i+1 >= len(x.args) {
			x.w.Error(errSyntax)
			return
		}
		if _, ok := resp.ParseInt(x.args[i+1]); !ok {
			x.w.Error(errNotInt)
			return
		}
	}
	key := x.args[2]
	e, ok := x.get(key)
	if !ok {
		x.w.Null()
		return
	}
	x.w.Int(int64(entryMemory(key, e)))
}

// entryMemory estimates the bytes key and its entry e take.
func entryMemory(key []byte, e shards.Entry) int {
	const slot = 16
	var lenBuf [binary.MaxVarintLen64]byte
	n := slot + binary.PutUvarint(lenBuf[:], uint64(len(key))) + len(key)
	if e.Exp != 0 && !(e.Kind == shards.KindInt && e.Exp == e.Int) {
		n += 8
	}
	switch e.Kind {
	case shards.KindInt:
	case shards.KindBytes:
		n += len(e.Str)
	default:
		n += 16 + e.Obj.(coll.Value).MemoryUsage() // the table's reference, then the value
	}
	return n
}

// memoryStats is MEMORY STATS: Redis's names for the figures Turnstile
// has (INFO memory explains them), as a map (a flat array in RESP2).
func memoryStats(x *Ctx) {
	s := x.s
	used := s.usedMemory()
	peak := s.mem.notePeak(used)
	dataset := s.datasetBytes()
	rss := int64(residentBytes())
	keys := s.keyCount()
	perKey := int64(0)
	if keys > 0 {
		perKey = dataset / keys
	}
	pct := func(a, b int64) float64 {
		if b == 0 {
			return 0
		}
		return 100 * float64(a) / float64(b)
	}
	ints := []struct {
		name string
		v    int64
	}{
		{"peak.allocated", peak},
		{"total.allocated", used},
		{"startup.allocated", s.mem.startup},
		{"clients.normal", s.clientBufferBytes()},
		{"overhead.total", used - dataset},
		{"keys.count", keys},
		{"keys.bytes-per-key", perKey},
		{"dataset.bytes", dataset},
		{"maxmemory", s.mem.max.Load()},
		{"evicted.keys", s.evictedKeys()},
		{"rss.bytes", rss},
		{"fragmentation.bytes", rss - used},
	}
	floats := []struct {
		name string
		v    float64
	}{
		{"dataset.percentage", pct(dataset, used)},
		{"peak.percentage", pct(used, peak)},
		{"fragmentation", float64(rss) / float64(max(used, 1))},
	}
	x.w.Map(len(ints) + len(floats))
	for _, f := range ints {
		x.w.BulkString(f.name)
		x.w.Int(f.v)
	}
	for _, f := range floats {
		x.w.BulkString(f.name)
		x.w.Double(f.v)
	}
}

// memoryPurge is MEMORY PURGE: a collection, and freed memory back to the
// operating system.
func memoryPurge(x *Ctx) {
	debug.FreeOSMemory()
	x.w.OK()
}
