package server

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/turnstile/turnstile/policy"
)

// rlPolicies are the named rate-limit rules RL.CHECK applies (seed §8:
// rules in configuration, not code).
//
// The rule set is immutable: a change (the file reloaded by RL.POLICY LOAD
// or SIGHUP, RL.POLICY SET or DEL) builds a new set and swaps the pointer,
// so RL.CHECK reads a consistent set with one atomic load and no lock; mu
// serializes the changes. Changes made with RL.POLICY SET and DEL live in
// memory until the next LOAD (which reads the file again); they are not
// yet written back or replicated to a cluster's other nodes.
//
// Each rule's counters (admitted, denied, denied in shadow mode) live in
// stats, by rule id, and survive reloads.
type rlPolicies struct {
	set   atomic.Pointer[policy.Set]
	path  string     // the --rl-policies file ("": none); fixed at start-up
	mu    sync.Mutex // serializes changes of set
	stats sync.Map   // rule id -> *ruleStats
}

// ruleStats counts one rule's decisions.
type ruleStats struct {
	allowed, denied, shadowDenied atomic.Int64
}

// init loads the policy file, if any.
func (p *rlPolicies) init(path string) error {
	p.path = path
	p.set.Store(policy.Empty())
	if path == "" {
		return nil
	}
	_, err := p.load()
	return err
}

// load reads the file and swaps its rules in, returning how many there are.
// On error the rules in force stay.
func (p *rlPolicies) load() (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.path == "" {
		return 0, fmt.Errorf("no policy file configured (rl-policies)")
	}
	data, err := os.ReadFile(p.path)
	if err != nil {
		return 0, fmt.Errorf("read policies: %w", err)
	}
	set, err := policy.Parse(p.path, data)
	if err != nil {
		return 0, err
	}
	p.set.Store(set)
	return len(set.Rules), nil
}

// update applies fn to the rules in force and swaps the result in.
func (p *rlPolicies) update(fn func(*policy.Set) *policy.Set) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.set.Store(fn(p.set.Load()))
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
// rules replace the old ones at once; on error the old ones stay.
func (s *Server) ReloadPolicies() (int, error) { return s.rl.load() }
