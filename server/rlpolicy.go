package server

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/turnstile/turnstile/internal/atomicfile"
	"github.com/turnstile/turnstile/persistence"
	"github.com/turnstile/turnstile/policy"
	"github.com/turnstile/turnstile/ratelimit"
	"github.com/turnstile/turnstile/resp"
	"github.com/turnstile/turnstile/shards"
)

// rlPolicies are the named rate-limit rules RL.CHECK applies (seed §8:
// rules in configuration, not code).
//
// The rule set is immutable: a change (the file reloaded by RL.POLICY LOAD
// or SIGHUP, RL.POLICY SET or DEL) builds a new set and swaps the pointer,
// so RL.CHECK reads a consistent set with one atomic load and no lock.
//
// # Durability and replication
//
// Every change is an effect: an OpSet record in persistence.MetaDB named
// rlPoliciesMeta whose value is the whole new set (policy.Set.Encode), so
// replaying it is idempotent and the last record wins. It goes to the
// append-only log, and through Raft to a cluster's other nodes, which
// apply it in ApplyEffect; a dump (snapshot, log rewrite, Raft snapshot)
// carries the set while the dataset holds one (inData). Changes run under
// every shard lock (the RL.POLICY rows are Write|Keyspace; SIGHUP takes
// them in changeRules), so their effects reach the log in the order of the
// swaps, and a dump's frozen instant sees either a change and its effect
// or neither.
//
// Which rules are in force at start-up: on a standalone server the policy
// file, when one is configured, is read at every start and replaces a rule
// set the dataset holds (as redis.conf does CONFIG SET; RL.POLICY SAVE
// writes the rules in force back to the file); without a file the
// dataset's rules are restored. On a cluster node the replicated rule set
// wins once there is one: the file is the node's rules until the log or a
// snapshot brings a change, and a change of the file reaches the cluster
// through RL.POLICY LOAD (run by the leader, on the leader's file) or
// SIGHUP sent to the leader.
//
// # Locking
//
// mu serializes changes and guards file and inData; it is taken under the
// shard locks (never the other way round). Each rule's counters
// (admitted, denied, denied in shadow mode) live in stats, by rule id, and
// survive reloads.
type rlPolicies struct {
	set    atomic.Pointer[rlRuleSet] // swapped by put
	path   string                    // the --rl-policies file ("": none); fixed at start-up
	mu     sync.Mutex                // serializes changes of set; guards file and inData
	file   *policy.Set               // the rules last read from the file (nil: none read)
	inData bool                      // the dataset holds a rule set: dumps carry it
	stats  sync.Map                  // rule id -> *ruleStats
}

// rlRuleSet is a rule set in force, with what RL.CHECK needs of each rule
// worked out once when the set is put in force: checks[i] is Rules[i]'s.
type rlRuleSet struct {
	*policy.Set
	checks []rlRuleCheck
}

// rlRuleCheck is a rule's algorithm, its ratelimit rule, its counters, and
// the start of its part of RL.CHECK's reply: the header of its 7-element
// array and its id as a bulk string (the same in RESP2 and RESP3).
type rlRuleCheck struct {
	algo      ratelimit.Algo
	rule      ratelimit.Rule
	stats     *ruleStats
	replyHead []byte
}

// put puts set in force.
func (p *rlPolicies) put(set *policy.Set) {
	rs := &rlRuleSet{Set: set, checks: make([]rlRuleCheck, len(set.Rules))}
	for i := range set.Rules {
		r := &set.Rules[i]
		algo, rule := rlRuleOf(r)
		var head resp.Writer // an array header and a bulk string: alike in RESP2 and RESP3
		head.Array(rlCheckRuleFields)
		head.BulkString(r.ID)
		rs.checks[i] = rlRuleCheck{algo: algo, rule: rule, stats: p.statsOf(r.ID), replyHead: head.Bytes()}
	}
	p.set.Store(rs)
}

// rules returns the rule set in force.
func (p *rlPolicies) rules() *policy.Set { return p.set.Load().Set }

// rlPoliciesMeta names the rule set's records in persistence.MetaDB.
const rlPoliciesMeta = "rl-policies"

// ruleStats counts one rule's decisions.
type ruleStats struct {
	allowed, denied, shadowDenied atomic.Int64
}

// init loads the policy file, if any.
func (p *rlPolicies) init(path string) error {
	p.path = path
	p.put(policy.Empty())
	if path == "" {
		return nil
	}
	set, err := p.readFile()
	if err != nil {
		return err
	}
	p.file = set
	p.put(set)
	return nil
}

// readFile reads and checks the policy file.
func (p *rlPolicies) readFile() (*policy.Set, error) {
	if p.path == "" {
		return nil, fmt.Errorf("no policy file configured (rl-policies)")
	}
	data, err := os.ReadFile(p.path)
	if err != nil {
		return nil, fmt.Errorf("read policies: %w", err)
	}
	return policy.Parse(p.path, data)
}

// change applies fn to the rules in force and swaps the result in,
// returning it; on error nothing changes. The caller holds every shard
// lock and records the new set's effect.
func (p *rlPolicies) change(fn func(*policy.Set) (*policy.Set, error)) (*policy.Set, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	set, err := fn(p.rules())
	if err != nil {
		return nil, err
	}
	p.put(set)
	p.inData = true
	return set, nil
}

// load is a change to the rules of the file, read again.
func (p *rlPolicies) load(*policy.Set) (*policy.Set, error) {
	set, err := p.readFile()
	if err != nil {
		return nil, err
	}
	p.file = set // under mu (change)
	return set, nil
}

// applyData puts in force a rule set read from the dataset (a log, a dump,
// a cluster's replication), in the encoding of policy.Set.Encode.
func (p *rlPolicies) applyData(value []byte) error {
	set, err := policy.Parse(rlPoliciesMeta+".json", value)
	if err != nil {
		return fmt.Errorf("the dataset's rate-limit rules: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.put(set)
	p.inData = true
	return nil
}

// dumped returns the rule set a dump carries, if the dataset holds one.
// The caller holds every shard lock (a dump's frozen instant).
func (p *rlPolicies) dumped() ([]byte, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.inData {
		return nil, false
	}
	return p.rules().Encode(), true
}

// reset forgets the dataset's rule set (a replicated node rebuilding from
// committed state): the node's file, if any, is in force again.
func (p *rlPolicies) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inData = false
	if p.file != nil {
		p.put(p.file)
	} else {
		p.put(policy.Empty())
	}
}

// metaEffect is the effect that records state named name in MetaDB.
func metaEffect(name string, value []byte) persistence.Effect {
	return persistence.Effect{Op: persistence.OpSet, DB: persistence.MetaDB, Key: []byte(name),
		Entry: shards.Entry{Kind: shards.KindBytes, Str: value}}
}

// applyMeta applies an effect of MetaDB (ApplyEffect).
func (s *Server) applyMeta(e persistence.Effect) error {
	switch {
	case e.Op != persistence.OpSet || e.Entry.Kind != shards.KindBytes:
		return fmt.Errorf("server state effect %d of kind %d: not a string set", e.Op, e.Entry.Kind)
	case string(e.Key) == rlPoliciesMeta:
		return s.rl.applyData(e.Entry.Str)
	}
	return fmt.Errorf("unknown server state %q in the dataset (written by a newer Turnstile?)", e.Key)
}

// changeRules changes the rules outside a command (SIGHUP, start-up):
// under every shard lock, as the RL.POLICY rows run, it swaps the rules
// and appends the change's effect, then waits until it is durable.
func (s *Server) changeRules(fn func(*policy.Set) (*policy.Set, error)) (*policy.Set, error) {
	all := lockSet{all: true}
	all.lock(s)
	set, err := s.rl.change(fn)
	var pos int64
	d := s.durability()
	if err == nil {
		s.dirty.Add(1)
		if d != nil {
			pos = d.Append([]persistence.Effect{metaEffect(rlPoliciesMeta, set.Encode())})
		}
	}
	all.unlock(s)
	if err != nil {
		return nil, err
	}
	if d != nil {
		if err := d.Wait(pos); err != nil {
			return set, fmt.Errorf("the new rules are in force but not durable: %w", err)
		}
	}
	return set, nil
}

// statsOf returns the counters of rule id, creating them.
func (p *rlPolicies) statsOf(id string) *ruleStats {
	if st, ok := p.stats.Load(id); ok {
		return st.(*ruleStats)
	}
	st, _ := p.stats.LoadOrStore(id, &ruleStats{})
	return st.(*ruleStats)
}

// ReloadPolicies reads the policy file again (SIGHUP): on success the new
// rules replace the old ones at once, as a recorded change; on error the
// old ones stay. A cluster node that does not lead refuses: the leader's
// rules are the cluster's (send the signal to the leader, or run RL.POLICY
// LOAD, which any node forwards to it).
func (s *Server) ReloadPolicies() (int, error) {
	if s.repl != nil && !s.leading.Load() {
		return 0, fmt.Errorf("this cluster node does not lead: send SIGHUP to the leader, or run RL.POLICY LOAD on any node")
	}
	set, err := s.changeRules(s.rl.load)
	if set == nil {
		return 0, err
	}
	return len(set.Rules), err
}

// policiesAfterLoad puts the policy file's rules back in force after a
// standalone server loaded its dataset, when the dataset held other rules
// (the file is read at every start), recording the change.
func (s *Server) policiesAfterLoad() error {
	p := &s.rl
	p.mu.Lock()
	file, cur, inData := p.file, p.rules(), p.inData
	p.mu.Unlock()
	if file == nil || !inData || cur.Equal(file) {
		return nil
	}
	s.log.Info("the policy file's rules replace the rules saved in the dataset (RL.POLICY SAVE keeps run-time changes in the file)",
		"file", p.path, "file_rules", len(file.Rules), "dataset_rules", len(cur.Rules))
	_, err := s.changeRules(func(*policy.Set) (*policy.Set, error) { return file, nil })
	return err
}

// savePolicies writes the rules in force to the policy file, atomically
// (RL.POLICY SAVE), in the file format's JSON (which YAML reads too).
func (s *Server) savePolicies() error {
	if s.rl.path == "" {
		return fmt.Errorf("no policy file configured (rl-policies)")
	}
	s.rl.mu.Lock()
	defer s.rl.mu.Unlock()
	set := s.rl.rules()
	if err := atomicfile.Write(s.rl.path, append(set.Encode(), '\n'), 0o644); err != nil {
		return fmt.Errorf("save policies: %w", err)
	}
	s.rl.file = set
	return nil
}
