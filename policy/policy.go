// Package policy reads rate-limit rules kept in configuration (seed §8:
// rules in configuration, not code): a file of named rules, each an
// algorithm with its limit and period, that RL.CHECK applies by name.
//
// # Format
//
// JSON or YAML (a file whose name ends in .json is JSON; anything else is
// read as YAML, of which JSON is a subset), in the seed's shape:
//
//	{ "rules": [ { "id": "login-ip", "key": ["ip"], "algorithm": "sliding",
//	               "limit": 5, "per": "1m", "burst": 0, "shadow": false } ] }
//
// The lesson's own example (§8) is read as written too: "rate" for
// "limit", no "algorithm" (gcra, its recommendation), and "failMode"
// ("open" or "closed": what a client does when the server cannot be
// reached; the server only keeps and reports it).
//
// Every field is checked: unknown fields, a missing id, limit or period, a
// duplicate id, an unknown algorithm and out-of-range numbers are errors
// naming the file and the field (rules[2].per: …). A Set is immutable
// once parsed; the server swaps whole Sets on reload, so a reader never
// sees half of one.
package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/turnstile/turnstile/ratelimit"
)

// Algorithms a rule may name.
const (
	GCRA    = "gcra"
	Fixed   = "fixed"
	Sliding = "sliding"
	Log     = "log"
)

// MaxLogLimit bounds the limit of a LOG rule: its state keeps one entry per
// admitted request of the last period.
const MaxLogLimit = 100_000

// Rule is one validated rule.
type Rule struct {
	ID        string
	Key       []string // the names of the key's parts, documentation for callers
	Algorithm string   // GCRA, Fixed, Sliding or Log
	Limit     int64
	Period    int64  // ns
	Burst     int64  // GCRA: the bucket's capacity (0: Limit)
	Shadow    bool   // count would-be denials, never deny
	FailMode  string // "open" (default) or "closed": for clients when the server is unreachable
}

// Set is a parsed policy file: its rules in file order, by id.
type Set struct {
	Rules []Rule
	byID  map[string]int
}

// Get returns the rule with the id.
func (s *Set) Get(id string) (Rule, bool) {
	if s == nil {
		return Rule{}, false
	}
	i, ok := s.byID[id]
	if !ok {
		return Rule{}, false
	}
	return s.Rules[i], true
}

// Find returns the rule with the id, given as bytes, and its index in
// Rules, without copying the id or the rule. The rule belongs to s: a Set
// is never changed once made (With and Without make new ones), so the
// pointer stays valid and the rule the same for as long as the caller
// holds s.
func (s *Set) Find(id []byte) (*Rule, int, bool) {
	if s == nil {
		return nil, -1, false
	}
	i, ok := s.byID[string(id)]
	if !ok {
		return nil, -1, false
	}
	return &s.Rules[i], i, true
}

// fileRule is a rule as written: pointers tell a missing field from a zero.
type fileRule struct {
	ID        *string  `json:"id" yaml:"id"`
	Key       []string `json:"key" yaml:"key"`
	Algorithm *string  `json:"algorithm" yaml:"algorithm"`
	Limit     *int64   `json:"limit" yaml:"limit"`
	Rate      *int64   `json:"rate" yaml:"rate"` // the seed's name for limit
	Per       *string  `json:"per" yaml:"per"`
	Burst     *int64   `json:"burst" yaml:"burst"`
	Shadow    *bool    `json:"shadow" yaml:"shadow"`
	FailMode  *string  `json:"failMode" yaml:"failMode"`
}

type file struct {
	Rules []fileRule `json:"rules" yaml:"rules"`
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)

// Parse reads a policy file's bytes; name is used in error messages and
// chooses the format (.json: JSON, else YAML).
func Parse(name string, data []byte) (*Set, error) {
	var f file
	if strings.HasSuffix(strings.ToLower(name), ".json") {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("%s: more than one JSON value", name)
		}
	} else {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	set := &Set{byID: make(map[string]int, len(f.Rules))}
	for i, fr := range f.Rules {
		r, err := fr.validate()
		if err != nil {
			return nil, fmt.Errorf("%s: rules[%d]%w", name, i, err)
		}
		if j, dup := set.byID[r.ID]; dup {
			return nil, fmt.Errorf("%s: rules[%d].id: %q is already the id of rules[%d]", name, i, r.ID, j)
		}
		set.byID[r.ID] = len(set.Rules)
		set.Rules = append(set.Rules, r)
	}
	return set, nil
}

// fieldError is an error about one field; it formats as ".field: text" so
// that Parse can prefix the rule's index.
func fieldError(field, format string, args ...any) error {
	return fmt.Errorf("."+field+": "+format, args...)
}

func (fr fileRule) validate() (Rule, error) {
	var r Rule
	switch {
	case fr.ID == nil:
		return r, fieldError("id", "missing")
	case !idPattern.MatchString(*fr.ID):
		return r, fieldError("id", "%q must be 1 to 64 letters, digits or _ . : -", *fr.ID)
	}
	r.ID = *fr.ID
	for j, k := range fr.Key {
		if k == "" {
			return r, fieldError(fmt.Sprintf("key[%d]", j), "empty")
		}
	}
	r.Key = fr.Key
	algorithm := GCRA // the seed's recommendation, and its example's default
	if fr.Algorithm != nil {
		algorithm = *fr.Algorithm
	}
	switch a := strings.ToLower(algorithm); a {
	case GCRA, Fixed, Sliding, Log:
		r.Algorithm = a
	default:
		return r, fieldError("algorithm", "%q is not one of gcra, fixed, sliding, log", algorithm)
	}
	switch {
	case fr.Limit != nil && fr.Rate != nil:
		return r, fieldError("rate", "give limit or rate (the same thing), not both")
	case fr.Limit != nil:
		r.Limit = *fr.Limit
	case fr.Rate != nil:
		r.Limit = *fr.Rate
	default:
		return r, fieldError("limit", "missing")
	}
	if fr.Per == nil {
		return r, fieldError("per", "missing (e.g. \"1m\")")
	}
	p, err := ParsePeriod(*fr.Per)
	if err != nil {
		return r, fieldError("per", "%v", err)
	}
	r.Period = p
	if fr.Burst != nil {
		r.Burst = *fr.Burst
	}
	if _, err := ratelimit.NewRule(r.Limit, r.Period, r.Burst); err != nil {
		field := "limit"
		if errors.Is(err, ratelimit.ErrBurst) {
			field = "burst"
		}
		return r, fieldError(field, "%v", err)
	}
	if r.Algorithm == Log && r.Limit > MaxLogLimit {
		return r, fieldError("limit", "a log rule keeps every request of its period: at most %d", MaxLogLimit)
	}
	if r.Algorithm != GCRA && fr.Burst != nil && r.Burst != 0 {
		return r, fieldError("burst", "only a gcra rule has a burst")
	}
	if fr.Shadow != nil {
		r.Shadow = *fr.Shadow
	}
	r.FailMode = "open"
	if fr.FailMode != nil {
		switch m := strings.ToLower(*fr.FailMode); m {
		case "open", "closed":
			r.FailMode = m
		default:
			return r, fieldError("failMode", "%q is not open or closed", *fr.FailMode)
		}
	}
	return r, nil
}

// NewRule validates one rule given field by field (RL.POLICY SET), with
// the same checks as a file's rules.
func NewRule(id, algorithm string, limit int64, per string, burst int64, shadow bool, key []string) (Rule, error) {
	fr := fileRule{ID: &id, Key: key, Algorithm: &algorithm, Limit: &limit, Per: &per, Shadow: &shadow}
	if burst != 0 {
		fr.Burst = &burst
	}
	r, err := fr.validate()
	if err != nil {
		return Rule{}, fmt.Errorf("rule%w", err)
	}
	return r, nil
}

// With returns a copy of s in which r replaces the rule of the same id, or
// is added last. s is not changed.
func (s *Set) With(r Rule) *Set {
	out := &Set{byID: make(map[string]int, len(s.rulesOrNil())+1)}
	replaced := false
	for _, old := range s.rulesOrNil() {
		if old.ID == r.ID {
			old, replaced = r, true
		}
		out.byID[old.ID] = len(out.Rules)
		out.Rules = append(out.Rules, old)
	}
	if !replaced {
		out.byID[r.ID] = len(out.Rules)
		out.Rules = append(out.Rules, r)
	}
	return out
}

// Without returns a copy of s without the rule id, and whether it was
// there. s is not changed.
func (s *Set) Without(id string) (*Set, bool) {
	out := &Set{byID: make(map[string]int, len(s.rulesOrNil()))}
	found := false
	for _, r := range s.rulesOrNil() {
		if r.ID == id {
			found = true
			continue
		}
		out.byID[r.ID] = len(out.Rules)
		out.Rules = append(out.Rules, r)
	}
	return out, found
}

func (s *Set) rulesOrNil() []Rule {
	if s == nil {
		return nil
	}
	return s.Rules
}

// Empty is a set without rules.
func Empty() *Set { return &Set{byID: map[string]int{}} }
