package server

import (
	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/policy"
	"github.com/turnstile/turnstile/ratelimit"
	"github.com/turnstile/turnstile/resp"
	"github.com/turnstile/turnstile/shards"
)

// RL.CHECK applies named rules (rlpolicy.go) to values atomically: every
// key is locked for the whole check (the row's Locks), all rules decide
// on the state as it is, and only if none of the enforced rules denies is
// anything spent. A rule's key is "rl:{<value>}:<rule>", the seed's
// layout (§8: rl:{u42}:user-default): the hash tag keeps every rule's key
// of one value in one slot, for a future cluster.
func rlCheckCommands() []*Command {
	return []*Command{
		{Name: "rl.check", Docs: "[COST cost:integer] pair=(rule:string value:string)...", Arity: -3, Flags: command.Write | command.AddsKeys, Locks: rlCheckLocks, DeriveKeys: rlCheckKeys,
			Args: "[COST <n>] <rule> <value> [<rule> <value> ...]", Group: "module", Since: "0.1.0",
			Summary: "Checks named rules atomically; spends on all of them only if none denies.", Handler: cmdRLCheck},
		{Name: "rl.policy", Arity: -2, Group: "module", Since: "0.1.0",
			Summary: "A container for the named rate-limit rules.", Subs: []*Command{
				{Name: "load", Arity: 2, Flags: command.Admin | command.Write | command.Keyspace, Since: "0.1.0",
					Summary: "Reads the policy file again, replacing every rule.", Handler: cmdRLPolicyLoad},
				{Name: "set", Docs: "id:string algorithm=(GCRA|FIXED|SLIDING|LOG) limit:integer period:string [BURST burst:integer] [SHADOW]", Arity: -6, Flags: command.Admin | command.Write | command.Keyspace, Args: "<id> <algorithm> <limit> <period> [BURST <b>] [SHADOW]", Since: "0.1.0",
					Summary: "Adds or replaces a rule.", Handler: cmdRLPolicySet},
				{Name: "del", Docs: "id:string", Arity: 3, Flags: command.Admin | command.Write | command.Keyspace, Args: "<id>", Since: "0.1.0",
					Summary: "Removes a rule.", Handler: cmdRLPolicyDel},
				{Name: "save", Arity: 2, Flags: command.Admin, Since: "0.1.0",
					Summary: "Writes the rules in force to the policy file.", Handler: cmdRLPolicySave},
				{Name: "get", Docs: "id:string", Arity: 3, Args: "<id>", Since: "0.1.0",
					Summary: "Shows a rule and its counters.", Handler: cmdRLPolicyGet},
				{Name: "list", Arity: 2, Since: "0.1.0",
					Summary: "Lists the rules' ids.", Handler: cmdRLPolicyList},
				{Name: "help", Arity: 2, Since: "0.1.0",
					Summary: "Returns helpful text about the different subcommands.", Handler: subcommandHelp},
			}},
	}
}

// rlCheckArgs splits RL.CHECK's arguments into the cost and the rule-value
// pairs; ok is false when they are malformed (the handler replies why).
func rlCheckArgs(args [][]byte) (cost int64, costOK bool, pairs [][]byte, ok bool) {
	cost, costOK, pairs = 1, true, args[1:]
	if len(pairs) >= 2 && isKeyword(pairs[0], "cost") {
		n, isInt := resp.ParseInt(pairs[1])
		cost, costOK, pairs = n, isInt && n >= 1 && n <= ratelimit.MaxLimit, pairs[2:]
	}
	return cost, costOK, pairs, costOK && len(pairs) >= 2 && len(pairs)%2 == 0
}

// rlCheckKeys derives RL.CHECK's keys (the row's DeriveKeys): for each
// rule-value pair, in order, rl:{value}:rule appended to buf; none when
// the arguments are malformed (the handler replies why).
func rlCheckKeys(args [][]byte, buf []byte, keys [][]byte) ([]byte, [][]byte) {
	_, _, pairs, ok := rlCheckArgs(args)
	if !ok {
		return buf, keys
	}
	for i := 0; i < len(pairs); i += 2 {
		start := len(buf)
		buf = appendRLCheckKey(buf, pairs[i], pairs[i+1])
		keys = append(keys, buf[start:len(buf):len(buf)])
	}
	return buf, keys
}

func appendRLCheckKey(k, rule, value []byte) []byte {
	k = append(k, "rl:{"...)
	k = append(k, value...)
	k = append(k, "}:"...)
	return append(k, rule...)
}

// rlCheckLocks names RL.CHECK's keys for the callers of the row's Locks
// (EXEC's locks, scripts, ACL key checks, COMMAND GETKEYS): the keys are
// derived into new memory, which those callers may keep.
func rlCheckLocks(args [][]byte, db, _ int, add func(int, []byte)) {
	_, keys := rlCheckKeys(args, nil, nil)
	for _, k := range keys {
		add(db, k)
	}
}

// rlChecked is one rule's part of a check.
type rlChecked struct {
	rule  *policy.Rule // in the policy set the check loaded, which never changes
	chk   *rlRuleCheck // the rule's algorithm, ratelimit rule and counters
	key   []byte
	ref   shards.Ref
	found bool
	d     ratelimit.Decision
	next  ratelimit.State // read, then the state after the request
}

// cmdRLCheck implements RL.CHECK [COST n] rule value [rule value ...]. The
// reply: allowed (1/0); the enforced rule that denied with the longest
// retry (nil when allowed); its retry_after_ms (-1 when allowed, or when
// it can never admit the cost); and per rule, in order, [rule, allowed,
// limit, remaining, retry_after_ms, reset_after_ms, shadow].
//
// The keys are those the locks were taken for (Ctx.derivedKeys): built
// once per call, in the execution's reused buffers; with the per-rule
// working space (execution.rlChecks, where a LOG rule's entries are
// decoded too) a check allocates nothing once its execution has seen as
// many rules.
func cmdRLCheck(x *Ctx) {
	cost, costOK, pairs, ok := rlCheckArgs(x.args)
	switch {
	case !costOK:
		x.w.Error("ERR COST must be a positive integer")
		return
	case !ok:
		x.w.Error("ERR wrong number of arguments for 'rl.check' command")
		return
	}
	keys, hashes := x.derivedKeys()
	set := x.s.rl.set.Load() // one load: the rules and their checks agree
	// The execution's buffer, reused from call to call (each call is done
	// with it before it returns): every field of a check is set below
	// before it is read, so nothing needs clearing.
	checks := x.ex.rlChecks
	if n := len(pairs) / 2; cap(checks) < n {
		checks = make([]rlChecked, n)
	} else {
		checks = checks[:n]
	}
	x.ex.rlChecks = checks
	for i := range checks {
		id := pairs[2*i]
		r, ri, found := set.Find(id)
		if !found {
			x.w.Error("ERR unknown rule '" + string(id) + "'")
			return
		}
		checks[i].rule, checks[i].chk, checks[i].key = r, &set.checks[ri], keys[i]
		for j := range checks[:i] { // by index: a check is a large struct
			if string(checks[j].key) == string(keys[i]) {
				x.w.Error("ERR rule '" + r.ID + "' is given the same value twice")
				return
			}
		}
	}
	denier, longest := -1, int64(0)
	for i := range checks {
		c := &checks[i]
		// lookupForSetInto: an expired key stays in its slot until its state is
		// stored there or it is discarded below, so no lookup changes a
		// shard and every Ref stays valid until the stores begin.
		x.noteHot(c.key)
		var e shards.Entry
		found := x.lookupForSetIntoHash(c.key, hashes[i], &e, &c.ref)
		if !rlStart(x, e, found, c.chk.algo, &c.next, c.next.Log.Entries[:0]) {
			// A live key's error: this key is not expired; the keys before
			// it may be.
			for j := range checks[:i] {
				if checks[j].ref.Expired() {
					x.discard(rlCheckRef(checks[:i], j))
				}
			}
			return
		}
		c.next.Rule = c.chk.rule
		c.found = found
		c.d = c.next.Apply(x.now, cost)
		if c.d.Allowed || c.rule.Shadow {
			continue
		}
		retry := c.d.RetryAfter
		if retry < 0 { // never: the longest of all
			retry = 1<<63 - 1
		}
		if denier < 0 || retry > longest {
			denier, longest = i, retry
		}
	}
	for i := range checks {
		c := &checks[i]
		stats := c.chk.stats
		switch {
		case !c.d.Allowed && c.rule.Shadow:
			stats.shadowDenied.Add(1)
		case !c.d.Allowed:
			stats.denied.Add(1)
		case denier < 0:
			stats.allowed.Add(1)
			storeRL(x, rlCheckRef(checks, i), c.key, c.found, &c.next, c.d.ResetAfter)
			continue
		}
		if c.ref.Expired() { // not stored: an expired key left in place goes
			x.discard(rlCheckRef(checks, i))
		}
	}
	x.s.stats.decided(x.cmd, denier < 0)
	x.w.Array(4)
	if denier < 0 {
		x.w.Int(1)
		x.w.Null()
		x.w.Int(-1)
	} else {
		x.w.Int(0)
		x.w.BulkString(checks[denier].rule.ID)
		x.w.Int(rlRetryMs(checks[denier].d))
	}
	x.w.Array(len(checks))
	for i := range checks {
		c := &checks[i]
		x.w.Append(c.chk.replyHead) // *7, then the rule's id
		x.w.Int(int64(boolInt(c.d.Allowed)))
		x.w.Int(c.d.Limit)
		x.w.Int(c.d.Remaining)
		x.w.Int(rlRetryMs(c.d))
		x.w.Int(ceilMs(c.d.ResetAfter))
		x.w.Int(int64(boolInt(c.rule.Shadow)))
	}
}

// rlCheckRef is where check i stores its state (or discards the expired
// key its lookup left in place): the Ref its lookup made, unless another
// rule's key is in the same shard. That rule's store (a new key may grow
// the table) or discard (removing a key moves the keys after it) may have
// moved check i's key since, so it is located again.
func rlCheckRef(checks []rlChecked, i int) shards.Ref {
	for j := range checks {
		if j != i && checks[j].ref.SameShard(checks[i].ref) {
			return checks[i].ref.Refind()
		}
	}
	return checks[i].ref
}

// rlCheckRuleFields is how many fields each rule has in RL.CHECK's reply.
const rlCheckRuleFields = 7

// rlRetryMs is a decision's retry_after_ms: -1 when allowed or never.
func rlRetryMs(d ratelimit.Decision) int64 {
	if d.RetryAfter < 0 {
		return -1
	}
	return ceilMs(d.RetryAfter)
}

// rlRuleOf is the algorithm and ratelimit rule of a policy rule (validated
// when the policy was read: its algorithm is one of policy's lower-case
// names, and NewRule cannot fail).
func rlRuleOf(r *policy.Rule) (ratelimit.Algo, ratelimit.Rule) {
	var algo ratelimit.Algo
	switch r.Algorithm {
	case policy.GCRA:
		algo = ratelimit.AlgoGCRA
	case policy.Fixed:
		algo = ratelimit.AlgoFixed
	case policy.Sliding:
		algo = ratelimit.AlgoSliding
	case policy.Log:
		algo = ratelimit.AlgoLog
	}
	return algo, ratelimit.Rule{Limit: r.Limit, Period: r.Period, Burst: r.Burst}
}

// RL.POLICY LOAD, SET and DEL change the rules under every shard lock
// (their rows are Write|Keyspace) and record the new set (rlpolicy.go), so
// the change is logged and replicated; a cluster's followers forward them
// to the leader.

func cmdRLPolicyLoad(x *Ctx) {
	if x.changeRules(x.s.rl.load) {
		x.w.OK()
	}
}

// changeRules applies fn to the rules in force and records the new set
// (an effect of persistence.MetaDB, which the execution holds every shard
// lock for); on error it replies the error and returns false.
func (x *Ctx) changeRules(fn func(*policy.Set) (*policy.Set, error)) bool {
	set, err := x.s.rl.change(fn)
	if err != nil {
		x.w.Error("ERR " + err.Error())
		return false
	}
	e := metaEffect(rlPoliciesMeta, set.Encode())
	x.record(&e)
	return true
}

// cmdRLPolicySave implements RL.POLICY SAVE: the rules in force, run-time
// changes included, replace the policy file's contents (read at start-up).
func cmdRLPolicySave(x *Ctx) {
	if err := x.s.savePolicies(); err != nil {
		x.w.Error("ERR " + err.Error())
		return
	}
	x.w.OK()
}

// cmdRLPolicySet implements RL.POLICY SET id algorithm limit period
// [BURST b] [SHADOW].
func cmdRLPolicySet(x *Ctx) {
	a := x.args
	limit, ok := resp.ParseInt(a[4])
	if !ok {
		x.w.Error(errNotInt)
		return
	}
	var burst int64
	shadow := false
	for i := 6; i < len(a); i++ {
		switch {
		case isKeyword(a[i], "burst") && i+1 < len(a):
			if burst, ok = resp.ParseInt(a[i+1]); !ok {
				x.w.Error(errNotInt)
				return
			}
			i++
		case isKeyword(a[i], "shadow"):
			shadow = true
		default:
			x.w.Error(errSyntax)
			return
		}
	}
	r, err := policy.NewRule(string(a[2]), string(a[3]), limit, string(a[5]), burst, shadow, nil)
	if err != nil {
		x.w.Error("ERR " + err.Error())
		return
	}
	if x.changeRules(func(s *policy.Set) (*policy.Set, error) { return s.With(r), nil }) {
		x.w.OK()
	}
}

func cmdRLPolicyDel(x *Ctx) {
	set, found := x.s.rl.rules().Without(string(x.args[2]))
	if !found { // nothing changes: nothing to record
		x.w.Int(0)
		return
	}
	if x.changeRules(func(*policy.Set) (*policy.Set, error) { return set, nil }) {
		x.w.Int(1)
	}
}

// cmdRLPolicyGet implements RL.POLICY GET id: the rule and its counters
// as a map (RESP2: name-value pairs), nil for an unknown id.
func cmdRLPolicyGet(x *Ctx) {
	r, ok := x.s.rl.rules().Get(string(x.args[2]))
	if !ok {
		x.w.Null()
		return
	}
	st := x.s.rl.statsOf(r.ID)
	x.w.Map(11)
	x.w.BulkString("id")
	x.w.BulkString(r.ID)
	x.w.BulkString("algorithm")
	x.w.BulkString(r.Algorithm)
	x.w.BulkString("limit")
	x.w.Int(r.Limit)
	x.w.BulkString("per")
	x.w.BulkString(policy.FormatPeriod(r.Period))
	x.w.BulkString("burst")
	x.w.Int(r.Burst)
	x.w.BulkString("shadow")
	x.w.BulkString(yesNo(r.Shadow))
	x.w.BulkString("fail_mode")
	x.w.BulkString(r.FailMode)
	x.w.BulkString("key")
	x.w.Array(len(r.Key))
	for _, k := range r.Key {
		x.w.BulkString(k)
	}
	x.w.BulkString("allowed")
	x.w.Int(st.allowed.Load())
	x.w.BulkString("denied")
	x.w.Int(st.denied.Load())
	x.w.BulkString("shadow_denied")
	x.w.Int(st.shadowDenied.Load())
}

func cmdRLPolicyList(x *Ctx) {
	rules := x.s.rl.rules().Rules
	x.w.Array(len(rules))
	for _, r := range rules {
		x.w.BulkString(r.ID)
	}
}
