package server

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/hotkeys"
)

// Hot limiter keys (seed §6: find the heavy hitters with a count-min
// sketch): every CL.THROTTLE and RL.* call counts its key in a sketch of
// the key's shard, updated under that shard's lock, which the command holds
// anyway, so no other lock or atomic is taken. RL.HOTKEYS merges the
// shards' top lists (keys live in one shard each, so nothing is counted
// twice), locking one shard at a time.
//
// Only every hotSample-th limiter call of a connection is counted, with
// weight hotSample: counting every call cost ~60 ns on the CL.THROTTLE path
// (a second hash of the key and four cache misses in the sketch), sampling
// ~1/hotSample of that, and the heavy hitters, which are what RL.HOTKEYS
// is for, are found all the same (their estimates are within hotSample of
// the truth per connection).
//
// Counts halve every hotDecay of server time, applied lazily by the next
// count in a shard (no timer): the list shows what is hot now. Memory:
// hotDepth x hotWidth x 4 bytes and hotTop keys per shard of a database,
// allocated when the database's first limiter key is counted.
const (
	hotDepth  = 4
	hotWidth  = 256
	hotTop    = 8
	hotDecay  = 10 * time.Second
	hotSample = 8
)

// hotSketches are one database's sketches, one per shard, each with the
// decay epoch it was last brought to.
type hotSketches struct {
	sk    []*hotkeys.Sketch
	epoch []int64
}

// hotState is the server's hot-key tracking.
type hotState struct {
	on    atomic.Bool
	perDB []atomic.Pointer[hotSketches] // by database
}

func (h *hotState) init(ndb int, on bool) {
	h.perDB = make([]atomic.Pointer[hotSketches], ndb)
	h.on.Store(on)
}

// noteHot counts a limiter call on key; the execution holds key's shard.
func (x *Ctx) noteHot(key []byte) {
	h := &x.s.hot
	if x.c.hotTick++; x.c.hotTick%hotSample != 0 || !h.on.Load() {
		return
	}
	hash, i, n := x.keyHash(key)
	set := h.perDB[x.c.db].Load()
	if set == nil {
		set = h.alloc(x.c.db, n)
	}
	sk := set.sk[i]
	if e := x.now / int64(hotDecay); e != set.epoch[i] {
		for n := e - set.epoch[i]; n > 0 && n <= 32; n-- {
			sk.Decay()
		}
		if e-set.epoch[i] > 32 || e < set.epoch[i] {
			sk.Reset()
		}
		set.epoch[i] = e
	}
	sk.Add(hash, key, hotSample)
}

// alloc makes database db's sketches once.
func (h *hotState) alloc(db, nShards int) *hotSketches {
	set := &hotSketches{sk: make([]*hotkeys.Sketch, nShards), epoch: make([]int64, nShards)}
	for i := range set.sk {
		set.sk[i] = hotkeys.New(hotDepth, hotWidth, hotTop)
	}
	if h.perDB[db].CompareAndSwap(nil, set) {
		return set
	}
	return h.perDB[db].Load()
}

func hotkeysCommands() []*Command {
	return []*Command{
		{Name: "rl.hotkeys", Docs: "[count:integer]", Arity: -1, Flags: command.Readonly | command.Random, Args: "[<count>]",
			Group: "module", Since: "0.1.0",
			Summary: "Lists the busiest rate-limit keys of the selected database, with estimated recent calls.",
			Handler: cmdRLHotkeys},
	}
}

// cmdRLHotkeys implements RL.HOTKEYS [count] (default 10): an array of
// [key, estimated calls] pairs, busiest first. The estimates never
// undercount and fade by half every 10 s.
func cmdRLHotkeys(x *Ctx) {
	n := 10
	switch len(x.args) {
	case 1:
	case 2:
		v, err := strconv.Atoi(string(x.args[1]))
		if err != nil || v < 1 {
			x.w.Error("ERR count must be a positive integer")
			return
		}
		n = v
	default:
		x.w.Error(errSyntax)
		return
	}
	var items []hotkeys.Item
	if set := x.s.hot.perDB[x.c.db].Load(); set != nil {
		for i, sk := range set.sk {
			x.withShard(i, func() { items = sk.AppendTop(items) })
		}
	}
	items = hotkeys.Merge(items, n)
	x.w.Array(len(items))
	for _, it := range items {
		x.w.Array(2)
		x.w.BulkString(it.Key)
		x.w.Int(int64(it.Count))
	}
}
