package server

import (
	"errors"

	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/hll"
	"github.com/turnstile/turnstile/shards"
)

// HyperLogLog: PFADD, PFCOUNT, PFMERGE on string values in Redis's exact
// encoding (package hll), so GET shows Redis's bytes and PFCOUNT its
// numbers. hll-sparse-max-bytes is Redis's default, 3000, and fixed (like
// the other encoding thresholds). A change to a value of the same length
// (a dense one, PFCOUNT's cache) is logged as the range of bytes that
// changed; any other as the whole value.
func hllCommands() []*Command {
	const hl = "hyperloglog"
	keys := func(c *Command, last int) *Command {
		c.FirstKey, c.LastKey, c.Step, c.Group = 1, last, 1, hl
		return c
	}
	return []*Command{
		keys(&Command{Name: "pfadd", Docs: "key:key [element:string...]", Arity: -2, Flags: command.Write | command.DenyOOM | command.Fast, Since: "2.8.9",
			Summary: "Adds elements to a HyperLogLog key. Creates the key if it doesn't exist.", Handler: cmdPFAdd}, 1),
		keys(&Command{Name: "pfcount", Docs: "key:key...", Access: []command.KeyAccess{command.KeyRead}, Arity: -2, Flags: command.Readonly | command.MayReplicate, Since: "2.8.9",
			Summary: "Returns the approximated cardinality of the set(s) observed by the HyperLogLog key(s).", Handler: cmdPFCount}, -1),
		keys(&Command{Name: "pfmerge", Docs: "destkey:key [sourcekey:key...]", Access: []command.KeyAccess{command.KeyReadWrite, command.KeyRead}, Arity: -2, Flags: command.Write | command.DenyOOM, Since: "2.8.9",
			Summary: "Merges one or more HyperLogLog values into a single key.", Handler: cmdPFMerge}, -1),
	}
}

const (
	errNotHLL     = "WRONGTYPE Key is not a valid HyperLogLog string value."
	errHLLCorrupt = "INVALIDOBJ Corrupted HLL object detected"
)

// hllError replies the error of a failed hll call.
func hllError(x *Ctx, err error) {
	if errors.Is(err, hll.ErrNotHLL) {
		x.w.Error(errNotHLL)
	} else {
		x.w.Error(errHLLCorrupt)
	}
}

// readHLL reads key's value for the HyperLogLog commands: found false for
// no key; ok false after a WRONGTYPE reply (another type, or a string
// that is not a HyperLogLog).
func readHLL(x *Ctx, key []byte) (e shards.Entry, v []byte, found, ok bool) {
	e, v, found, ok = readBits(x, key, nil)
	if ok && found {
		if err := hll.Check(v); err != nil {
			hllError(x, err)
			return e, nil, false, false
		}
	}
	return e, v, found, ok
}

// storeHLL stores v, the new value of key (old its value before, when
// found), logging the bytes between the first and the last that differ.
func storeHLL(x *Ctx, key []byte, e shards.Entry, found bool, old, v []byte) {
	lo, hi := 0, len(v) // a new key, or a new length: the whole value
	if found && len(old) == len(v) {
		for lo < hi && old[lo] == v[lo] {
			lo++
		}
		for hi > lo && old[hi-1] == v[hi-1] {
			hi--
		}
	}
	x.storeRange(key, e, found, v, int64(lo), v[lo:hi])
}

// cmdPFAdd is PFADD key [element ...]: 1 when a register rose (or the key
// was created), else 0.
func cmdPFAdd(x *Ctx) {
	key := x.args[1]
	e, old, found, ok := readHLL(x, key)
	if !ok {
		return
	}
	v, changed, err := hll.Add(old, x.args[2:], hll.DefaultSparseMaxBytes)
	if changed { // (also when a corrupt value failed: what came before stays, as in Redis)
		storeHLL(x, key, e, found, old, v)
	}
	switch {
	case err != nil:
		hllError(x, err)
	case changed:
		x.w.Int(1)
	default:
		x.w.Int(0)
	}
}

// cmdPFCount is PFCOUNT key [key ...]. One key answers its cached
// cardinality, computing and caching it (a write, as in Redis) when the
// cache is stale; several keys are merged, and nothing is cached.
func cmdPFCount(x *Ctx) {
	if len(x.args) > 2 {
		var regs hll.Registers
		for _, key := range x.args[1:] {
			_, v, found, ok := readHLL(x, key)
			if !ok {
				return
			}
			if found {
				if err := regs.Merge(v); err != nil {
					hllError(x, err)
					return
				}
			}
		}
		x.w.Int(int64(regs.Count()))
		return
	}
	key := x.args[1]
	e, v, found, ok := readHLL(x, key)
	if !ok {
		return
	}
	if !found {
		x.w.Int(0)
		return
	}
	if card, ok := hll.Cached(v); ok {
		x.w.Int(int64(card))
		return
	}
	card, err := hll.Count(v)
	if err != nil {
		hllError(x, err)
		return
	}
	storeHLL(x, key, e, true, v, hll.WithCache(v, card))
	x.w.Int(int64(card))
}

// cmdPFMerge is PFMERGE destkey [sourcekey ...]: the registers of every
// key (destkey's too) merged into destkey, dense if any of them was.
func cmdPFMerge(x *Ctx) {
	var regs hll.Registers
	dense := false
	for _, key := range x.args[1:] {
		_, v, found, ok := readHLL(x, key)
		if !ok {
			return
		}
		if found {
			dense = dense || hll.IsDense(v)
			if err := regs.Merge(v); err != nil {
				hllError(x, err)
				return
			}
		}
	}
	key := x.args[1]
	e, old, found, _ := readHLL(x, key) // checked above
	v, err := regs.Store(old, dense, hll.DefaultSparseMaxBytes)
	if err != nil {
		hllError(x, err)
		return
	}
	storeHLL(x, key, e, found, old, v)
	x.w.OK()
}
