package server

import (
	"strconv"
	"time"

	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/ratelimit"
	"github.com/turnstile/turnstile/resp"
	"github.com/turnstile/turnstile/shards"
)

// Concurrency leases (seed §8: limit what is in flight) and token
// borrowing (seed §6: a gateway takes a batch of tokens to spend locally).
// Both keep their state in the key like RL.LIMIT (rl.go), with a TTL.
func rlLeaseCommands() []*Command {
	w := command.Write | command.Fast
	return []*Command{
		{Name: "rl.acquire", Docs: "key:key limit:integer lease_ms:integer [COST cost:integer]", Arity: -4, Flags: w | command.AddsKeys, FirstKey: 1, LastKey: 1, Step: 1,
			Args: "<key> <limit> <lease_ms> [COST <n>]", Group: "module", Since: "0.1.0",
			Summary: "Takes a concurrency lease if fewer than limit are alive; leases expire on their own.", Handler: cmdRLAcquire},
		{Name: "rl.release", Docs: "key:key id:string", Arity: 3, Flags: w, FirstKey: 1, LastKey: 1, Step: 1,
			Args: "<key> <id>", Group: "module", Since: "0.1.0", Summary: "Ends a concurrency lease.", Handler: cmdRLRelease},
		{Name: "rl.renew", Docs: "key:key id:string lease_ms:integer", Arity: 4, Flags: w, FirstKey: 1, LastKey: 1, Step: 1,
			Args: "<key> <id> <lease_ms>", Group: "module", Since: "0.1.0", Summary: "Extends a concurrency lease.", Handler: cmdRLRenew},
		{Name: "rl.borrow", Docs: "key:key limit:integer period:string n:integer [BURST burst:integer]", Arity: -5, Flags: w | command.AddsKeys, FirstKey: 1, LastKey: 1, Step: 1,
			Args: "<key> <limit> <period> <n> [BURST <b>]", Group: "module", Since: "0.1.0",
			Summary: "Takes up to n tokens from a GCRA bucket at once, to spend locally.", Handler: cmdRLBorrow},
		{Name: "rl.return", Docs: "key:key n:integer", Arity: 3, Flags: w, FirstKey: 1, LastKey: 1, Step: 1,
			Args: "<key> <n>", Group: "module", Since: "0.1.0", Summary: "Gives unused borrowed tokens back.", Handler: cmdRLReturn},
	}
}

// leasePeriod is the period stored with a lease key's rule: leases have
// none (their TTLs are their own), but a rule needs a valid one.
const leasePeriod = int64(time.Second)

// parseLeaseMs reads a lease's duration in ms (1 ms to 100 years).
func parseLeaseMs(x *Ctx, b []byte) (int64, bool) {
	ms, ok := resp.ParseInt(b)
	if !ok || ms < 1 || ms > ratelimit.MaxPeriod/int64(time.Millisecond) {
		x.w.Error("ERR lease_ms must be a positive integer of milliseconds")
		return 0, false
	}
	return ms * int64(time.Millisecond), true
}

// storeRL writes *st to key with the lifetime ttl (ns), or deletes the key
// when ttl is 0. It does not keep st: a LOG's entries may be reused once
// it returns.
func storeRL(x *Ctx, ref shards.Ref, key []byte, found bool, st *ratelimit.State, ttl int64) {
	if ttl <= 0 {
		if found {
			x.del(key)
		} else {
			x.discard(ref) // an expired key left in place (rlApply's lookupForSetInto)
		}
		return
	}
	val := x.opAppend(func(b []byte) []byte { return ratelimit.AppendState(b, st) })
	x.set(ref, key, shards.Entry{Kind: shards.KindBytes, Str: val, Exp: x.now + ttl})
}

// cmdRLAcquire implements RL.ACQUIRE key limit lease_ms [COST n]: the reply
// of RL.LIMIT and the lease's id (nil when denied).
func cmdRLAcquire(x *Ctx) {
	a := x.args
	limit, ok := resp.ParseInt(a[2])
	if !ok || limit < 1 || limit > ratelimit.MaxLimit {
		x.w.Error("ERR limit must be a positive integer")
		return
	}
	ttl, ok := parseLeaseMs(x, a[3])
	if !ok {
		return
	}
	cost := int64(1)
	switch {
	case len(a) == 4:
	case len(a) == 6 && isKeyword(a[4], "cost"):
		if cost, ok = resp.ParseInt(a[5]); !ok || cost < 1 || cost > ratelimit.MaxLimit {
			x.w.Error("ERR COST must be a positive integer")
			return
		}
	default:
		x.w.Error(errSyntax)
		return
	}
	key := a[1]
	var st ratelimit.State
	ref, found, ok := rlOpen(x, key, ratelimit.AlgoLease, &st, nil)
	if !ok {
		return
	}
	st.Rule = ratelimit.Rule{Limit: limit, Period: leasePeriod}
	d, next, id := st.Rule.Acquire(st.Lease, x.now, ttl, cost)
	x.s.stats.decided(x.cmd, d.Allowed)
	if d.Allowed {
		st.Lease = next
		storeRL(x, ref, key, found, &st, d.ResetAfter)
	}
	rlHead(x, d, 6)
	if d.Allowed {
		x.w.BulkString(strconv.FormatUint(id, 10))
	} else {
		x.w.Null()
	}
}

// leaseOp runs RELEASE or RENEW on key's lease id: 1 when the lease was
// alive, 0 when not (or no key).
func leaseOp(x *Ctx, op func(ratelimit.LeaseState, uint64) (ratelimit.LeaseState, bool)) {
	key := x.args[1]
	id, err := strconv.ParseUint(string(x.args[2]), 10, 64)
	if err != nil {
		x.w.Error("ERR invalid lease id")
		return
	}
	var st ratelimit.State
	ref, has, ok := rlFind(x, key, ratelimit.AlgoLease, &st)
	if !ok {
		return
	}
	if !has {
		x.w.Int(0)
		return
	}
	next, alive := op(st.Lease, id)
	if alive {
		st.Lease = next
		storeRL(x, ref, key, true, &st, next.Lifetime(x.now))
	}
	x.w.Int(int64(boolInt(alive)))
}

func cmdRLRelease(x *Ctx) {
	leaseOp(x, func(l ratelimit.LeaseState, id uint64) (ratelimit.LeaseState, bool) { return l.Release(x.now, id) })
}

func cmdRLRenew(x *Ctx) {
	ttl, ok := parseLeaseMs(x, x.args[3])
	if !ok {
		return
	}
	leaseOp(x, func(l ratelimit.LeaseState, id uint64) (ratelimit.LeaseState, bool) { return l.Renew(x.now, id, ttl) })
}

// cmdRLBorrow implements RL.BORROW key limit period n [BURST b]: takes up
// to n tokens of the GCRA bucket (the one RL.LIMIT key GCRA uses) and
// replies RL.LIMIT's five fields and the tokens granted.
func cmdRLBorrow(x *Ctx) {
	a := x.args
	limit, period, ok := parseRLRate(x, a[2:4])
	if !ok {
		return
	}
	n, ok := resp.ParseInt(a[4])
	if !ok || n < 1 || n > ratelimit.MaxLimit {
		x.w.Error("ERR n must be a positive integer")
		return
	}
	req := rlRequest{algo: ratelimit.AlgoGCRA}
	if !parseRLOptions(x, &req, limit, period, a[5:]) {
		return
	}
	if req.cost != 1 || req.peek || req.asMap {
		x.w.Error(errSyntax)
		return
	}
	key := a[1]
	var st ratelimit.State
	ref, found, ok := rlOpen(x, key, ratelimit.AlgoGCRA, &st, nil)
	if !ok {
		return
	}
	st.Rule = req.rule
	d, next, granted := st.Rule.Borrow(st.GCRA, x.now, n)
	x.s.stats.decided(x.cmd, granted > 0)
	if granted > 0 {
		st.GCRA = next
		storeRL(x, ref, key, found, &st, d.ResetAfter)
	}
	rlHead(x, d, 6)
	x.w.Int(granted)
}

// cmdRLReturn implements RL.RETURN key n: gives back up to n unused
// borrowed tokens, replying how many were taken back.
func cmdRLReturn(x *Ctx) {
	m, ok := resp.ParseInt(x.args[2])
	if !ok || m < 0 {
		x.w.Error("ERR n must be a non-negative integer")
		return
	}
	key := x.args[1]
	var st ratelimit.State
	ref, has, ok := rlFind(x, key, ratelimit.AlgoGCRA, &st)
	if !ok {
		return
	}
	if !has {
		x.w.Int(0)
		return
	}
	next, back := st.Rule.Return(st.GCRA, x.now, m)
	if back > 0 {
		st.GCRA = next
		storeRL(x, ref, key, true, &st, max(next.TAT-x.now, 0))
	}
	x.w.Int(back)
}
