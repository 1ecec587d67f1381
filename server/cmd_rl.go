package server

import (
	"strconv"

	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/policy"
	"github.com/turnstile/turnstile/ratelimit"
	"github.com/turnstile/turnstile/resp"
	"github.com/turnstile/turnstile/shards"
)

// The RL.* commands run the seed lessons' algorithms natively (package
// ratelimit): every call is one read-decide-write under the key's shard
// lock, with the server's one now, and a key always carries a TTL (the
// time its state has an effect), so the INCR-without-EXPIRE leak cannot
// happen. The value is the encoded ratelimit.State (algorithm, rule, and
// state); it is a string to every other command, and persistence and
// replication carry it as such, so replay reproduces every decision.
//
// Changing a key's parameters: a call with a different limit, period or
// burst applies the new rule to the state as it is (a fixed window's count
// so far counts against the new limit; a GCRA bucket keeps its TAT, as
// CL.THROTTLE does). A call with a different algorithm starts the key
// over: states of two algorithms do not convert.
func rlCommands() []*Command {
	return []*Command{
		{Name: "rl.limit", Docs: "key:key algorithm=(GCRA|FIXED|SLIDING|LOG) limit:integer period:string [BURST burst:integer] [COST cost:integer] [PEEK] [MAP]", Arity: -5, Flags: command.Write | command.Fast | command.AddsKeys, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "module", Since: "0.1.0", Summary: "Checks and spends a rate limit: GCRA, FIXED, SLIDING or LOG.",
			Handler: cmdRLLimit},
		{Name: "rl.queue", Docs: "key:key rate:integer period:string [BURST burst:integer] [COST cost:integer] [PEEK] [MAP]", Arity: -4, Flags: command.Write | command.Fast | command.AddsKeys, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "module", Since: "0.1.0", Summary: "Reserves a place in a leaky bucket queue and returns the delay to wait.",
			Handler: cmdRLQueue},
		{Name: "rl.reset", Docs: "key:key", Arity: 2, Flags: command.Write | command.Fast, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "module", Since: "0.1.0", Summary: "Forgets a rate-limit key's state.",
			Handler: cmdRLReset},
		{Name: "rl.info", Docs: "key:key", Arity: 2, Flags: command.Readonly | command.Fast, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "module", Since: "0.1.0", Summary: "Shows a rate-limit key's algorithm, rule and state in human units.",
			Handler: cmdRLInfo},
	}
}

// rlRequest is a parsed RL.LIMIT or RL.QUEUE call.
type rlRequest struct {
	algo  ratelimit.Algo
	rule  ratelimit.Rule
	cost  int64
	peek  bool
	asMap bool
}

// parseRLOptions reads [BURST b] [COST n] [PEEK] [MAP] from args, with the
// limit and period already read; it replies the error itself.
func parseRLOptions(x *Ctx, req *rlRequest, limit, period int64, args [][]byte) bool {
	burst := int64(-1)
	req.cost = 1
	for i := 0; i < len(args); i++ {
		switch {
		case isKeyword(args[i], "burst") && i+1 < len(args):
			n, ok := resp.ParseInt(args[i+1])
			if !ok || n < 0 {
				x.w.Error("ERR BURST must be a non-negative integer")
				return false
			}
			burst, i = n, i+1
		case isKeyword(args[i], "cost") && i+1 < len(args):
			n, ok := resp.ParseInt(args[i+1])
			if !ok || n < 1 || n > ratelimit.MaxLimit {
				x.w.Error("ERR COST must be a positive integer")
				return false
			}
			req.cost, i = n, i+1
		case isKeyword(args[i], "peek"):
			req.peek = true
		case isKeyword(args[i], "map"):
			req.asMap = true
		default:
			x.w.Error(errSyntax)
			return false
		}
	}
	switch req.algo {
	case ratelimit.AlgoGCRA:
		if burst == 0 {
			x.w.Error("ERR BURST of GCRA must be at least 1 (the bucket's size)")
			return false
		}
		burst = max(burst, 0) // 0: the capacity is the limit
	case ratelimit.AlgoQueue:
		burst = max(burst, 0) // no queue unless asked for: nginx's default
	default:
		if burst >= 0 {
			x.w.Error("ERR BURST applies to GCRA and RL.QUEUE only")
			return false
		}
		burst = 0
	}
	if req.algo == ratelimit.AlgoLog && limit > policy.MaxLogLimit {
		x.w.Error("ERR the limit of LOG may be at most " + strconv.Itoa(policy.MaxLogLimit) + " (it keeps every request of its period)")
		return false
	}
	rule, err := ratelimit.NewRule(limit, period, burst)
	if err != nil {
		x.w.Error("ERR " + err.Error())
		return false
	}
	req.rule = rule
	return true
}

// parseRLRate reads "limit period" at args[0:2], replying the error itself.
func parseRLRate(x *Ctx, args [][]byte) (limit, period int64, ok bool) {
	limit, ok = resp.ParseInt(args[0])
	if !ok || limit < 1 {
		x.w.Error("ERR limit must be a positive integer")
		return 0, 0, false
	}
	period, err := policy.ParsePeriodBytes(args[1])
	if err != nil {
		x.w.Error("ERR " + err.Error())
		return 0, 0, false
	}
	return limit, period, true
}

// cmdRLLimit implements RL.LIMIT key ALGO limit period [BURST b] [COST n]
// [PEEK] [MAP], replying allowed (1/0), limit, remaining, retry_after_ms
// (-1 when allowed, or when the cost can never be admitted) and
// reset_after_ms.
func cmdRLLimit(x *Ctx) {
	algo, ok := ratelimit.ParseAlgo(string(x.args[2]))
	if !ok || algo == ratelimit.AlgoQueue {
		x.w.Error("ERR unknown algorithm '" + string(x.args[2]) + "': use GCRA, FIXED, SLIDING or LOG")
		return
	}
	req := rlRequest{algo: algo}
	limit, period, ok := parseRLRate(x, x.args[3:5])
	if !ok || !parseRLOptions(x, &req, limit, period, x.args[5:]) {
		return
	}
	d, ok := rlApply(x, x.args[1], req)
	if ok {
		rlReply(x, d, req.asMap, false)
	}
}

// cmdRLQueue implements RL.QUEUE key rate period [BURST b] [COST n] [PEEK]
// [MAP]: the reply of RL.LIMIT (limit: the queue size, remaining: its
// free places) and delay_ms, how long the admitted request must wait.
func cmdRLQueue(x *Ctx) {
	req := rlRequest{algo: ratelimit.AlgoQueue}
	limit, period, ok := parseRLRate(x, x.args[2:4])
	if !ok || !parseRLOptions(x, &req, limit, period, x.args[4:]) {
		return
	}
	d, ok := rlApply(x, x.args[1], req)
	if ok {
		rlReply(x, d, req.asMap, true)
	}
}

// rlLoad reads key's state into *st (the zero state for no key: found is
// false); a LOG state's entries go into entries' backing array (nil: a
// new one). A value that is not a rate-limit state is a WRONGTYPE error,
// replied here.
//
// The states go by pointer on the RL.* paths: a State is a union of
// every algorithm's fields, and copies of it showed in their profiles.
func rlLoad(x *Ctx, e shards.Entry, found bool, st *ratelimit.State, entries []ratelimit.Entry) (ok bool) {
	if !found {
		*st = ratelimit.State{}
		return true
	}
	if e.Kind != shards.KindBytes || !ratelimit.IsState(e.Bytes()) {
		x.w.Error(errWrongType)
		return false
	}
	if err := st.Decode(e.Bytes(), entries); err != nil {
		x.w.Error("ERR the key's rate-limit state is corrupt")
		return false
	}
	return true
}

// rlFind reads key's state as algo's into *st: has is false when there is
// no key or it holds another algorithm's state; ok is false after a
// WRONGTYPE or corrupt-state error reply.
func rlFind(x *Ctx, key []byte, algo ratelimit.Algo, st *ratelimit.State) (ref shards.Ref, has, ok bool) {
	e, ref, found := x.lookup(key)
	if !rlLoad(x, e, found, st, nil) {
		return ref, false, false
	}
	return ref, found && st.Algo == algo, true
}

// rlOpen is the call's view of a limiter key: counted for RL.HOTKEYS,
// looked up, and its state decoded as algo's into *st (a LOG's entries
// into entries' backing array, as rlLoad); a new key, or one of another
// algorithm, starts over (an empty state). found tells whether the key
// existed (storeRL deletes it when its state has no effect left).
func rlOpen(x *Ctx, key []byte, algo ratelimit.Algo, st *ratelimit.State, entries []ratelimit.Entry) (ref shards.Ref, found, ok bool) {
	x.noteHot(key)
	e, ref, found := x.lookup(key)
	return ref, found, rlStart(x, e, found, algo, st, entries)
}

// rlStart is rlOpen's reading of the looked-up entry e into *st (rlApply
// looks its key up with lookupForSetInto, then calls it).
func rlStart(x *Ctx, e shards.Entry, found bool, algo ratelimit.Algo, st *ratelimit.State, entries []ratelimit.Entry) bool {
	if !rlLoad(x, e, found, st, entries) { // a live key's error: nothing to discard
		return false
	}
	if !found || st.Algo != algo {
		*st = ratelimit.State{Algo: algo}
	}
	return true
}

// rlApplyLog applies an admitted LOG request to the key's encoded state
// enc without decoding it (ratelimit.Rule.ApplyLog) and stores the
// result, as rlApply would; ok is false, with nothing done, when that
// does not apply (a denial, a state in the older layout, ...).
func rlApplyLog(x *Ctx, ref shards.Ref, key, enc []byte, req rlRequest) (d ratelimit.Decision, ok bool) {
	val := x.opAppend(func(b []byte) []byte {
		b, d, ok = req.rule.ApplyLog(b, enc, x.now, req.cost)
		return b
	})
	if !ok {
		return d, false
	}
	x.s.stats.decided(x.cmd, true)
	x.set(ref, key, shards.Entry{Kind: shards.KindBytes, Str: val, Exp: x.now + d.ResetAfter})
	return d, true
}

// rlApply runs the request on key: read, decide, and store the new state
// when admitted (not for PEEK), with the key's lifetime. An admitted LOG
// request on a state in the summed layout is applied to its bytes
// (rlApplyLog); otherwise a LOG's entries are decoded into the
// execution's reused buffer (execution.rlEntries): the state is encoded,
// and done with, before the call returns.
func rlApply(x *Ctx, key []byte, req rlRequest) (ratelimit.Decision, bool) {
	x.noteHot(key)
	var e shards.Entry
	var ref shards.Ref
	found := x.lookupForSetInto(key, &e, &ref)
	if found && req.algo == ratelimit.AlgoLog && !req.peek && e.Kind == shards.KindBytes {
		if d, ok := rlApplyLog(x, ref, key, e.Bytes(), req); ok {
			return d, true
		}
	}
	var st ratelimit.State
	if !rlStart(x, e, found, req.algo, &st, x.ex.rlEntries[:0]) {
		return ratelimit.Decision{}, false
	}
	st.Rule = req.rule
	d := st.Apply(x.now, req.cost)
	if cap(st.Log.Entries) > cap(x.ex.rlEntries) { // the log grew: keep the larger buffer
		x.ex.rlEntries = st.Log.Entries[:0]
	}
	if !req.peek {
		x.s.stats.decided(x.cmd, d.Allowed)
	}
	if !d.Allowed || req.peek {
		x.discard(ref)
		return d, true
	}
	storeRL(x, ref, key, found, &st, d.ResetAfter)
	return d, true
}

// ceilMs converts ns to whole ms, rounding up: a client told to wait 0 ms
// would come back too early.
func ceilMs(ns int64) int64 { return (max(ns, 0) + 999_999) / 1_000_000 }

// rlHead writes an array of n (>= 5) elements and its first five,
// RL.LIMIT's fields: allowed, limit, remaining, retry_after_ms,
// reset_after_ms.
func rlHead(x *Ctx, d ratelimit.Decision, n int) {
	x.w.Array(n)
	x.w.Int(int64(boolInt(d.Allowed)))
	x.w.Int(d.Limit)
	x.w.Int(d.Remaining)
	x.w.Int(rlRetryMs(d))
	x.w.Int(ceilMs(d.ResetAfter))
}

// rlReply writes a decision: an array of integers (RL.QUEUE adds
// delay_ms), or under MAP a map (RESP2: name-value pairs).
func rlReply(x *Ctx, d ratelimit.Decision, asMap, delay bool) {
	n := 5
	if delay {
		n = 6
	}
	if !asMap {
		rlHead(x, d, n)
		if delay {
			x.w.Int(ceilMs(d.Delay))
		}
		return
	}
	vals := [6]int64{int64(boolInt(d.Allowed)), d.Limit, d.Remaining, rlRetryMs(d), ceilMs(d.ResetAfter), ceilMs(d.Delay)}
	names := [6]string{"allowed", "limit", "remaining", "retry_after_ms", "reset_after_ms", "delay_ms"}
	x.w.Map(n)
	for i := range n {
		x.w.BulkString(names[i])
		x.w.Int(vals[i])
	}
}

// cmdRLReset implements RL.RESET key: 1 when a state was removed, 0 when
// there was none.
func cmdRLReset(x *Ctx) {
	key := x.args[1]
	e, _, found := x.lookup(key)
	var st ratelimit.State
	if !rlLoad(x, e, found, &st, nil) {
		return
	}
	if found && x.del(key) {
		x.w.Int(1)
		return
	}
	x.w.Int(0)
}

// cmdRLInfo implements RL.INFO key: nil for no key, else a map (RESP2:
// name-value pairs) of the algorithm, the rule, and the state in human
// units.
func cmdRLInfo(x *Ctx) {
	key := x.args[1]
	e, _, found := x.lookup(key)
	var st ratelimit.State
	if !rlLoad(x, e, found, &st, nil) {
		return
	}
	if !found {
		x.w.Null()
		return
	}
	var remaining int64
	if st.Algo == ratelimit.AlgoLease {
		d, _, _ := st.Rule.Acquire(st.Lease, x.now, 1, 1) // a peek at a copy's room
		remaining = d.Remaining + int64(boolInt(d.Allowed))
	} else {
		d, _ := ratelimit.Decide(st, x.now, 1)              // a peek: what one more request would find
		remaining = d.Remaining + int64(boolInt(d.Allowed)) // the peek's own request is not spent
	}
	type field struct {
		name string
		str  string
		num  int64
	}
	fields := []field{
		{name: "algorithm", str: st.Algo.String()},
		{name: "limit", num: st.Rule.Limit},
		{name: "period", str: policy.FormatPeriod(st.Rule.Period)},
	}
	switch st.Algo {
	case ratelimit.AlgoLease:
		fields = fields[:2] // leases have no period
	case ratelimit.AlgoGCRA:
		fields = append(fields, field{name: "burst", num: st.Rule.Capacity()}, field{name: "lent", num: st.GCRA.Lent})
	case ratelimit.AlgoQueue:
		fields = append(fields, field{name: "burst", num: st.Rule.Burst})
	}
	fields = append(fields, field{name: "remaining", num: remaining})
	if st.Algo == ratelimit.AlgoLog {
		live := int64(0)
		for _, en := range st.Log.Entries {
			if en.At > x.now-st.Rule.Period {
				live += en.Cost
			}
		}
		fields = append(fields, field{name: "requests_in_period", num: live})
	}
	ttl := max(e.Exp-x.now, 0)
	fields = append(fields, field{name: "ttl_ms", num: ceilMs(ttl)})
	x.w.Map(len(fields))
	for _, f := range fields {
		x.w.BulkString(f.name)
		if f.str != "" {
			x.w.BulkString(f.str)
		} else {
			x.w.Int(f.num)
		}
	}
}
