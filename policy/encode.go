package policy

import "encoding/json"

// Encode writes s in the file format, as JSON, so that Parse of a name
// ending in .json reads back the same rules in the same order. The server
// keeps a rule set changed at run time in this form (its dataset and its
// replication log), and RL.POLICY SAVE writes it to the policy file. The
// output is deterministic: one rule set, one encoding.
func (s *Set) Encode() []byte {
	type rule struct {
		ID        string   `json:"id"`
		Key       []string `json:"key,omitempty"`
		Algorithm string   `json:"algorithm"`
		Limit     int64    `json:"limit"`
		Per       string   `json:"per"`
		Burst     int64    `json:"burst,omitempty"`
		Shadow    bool     `json:"shadow,omitempty"`
		FailMode  string   `json:"failMode,omitempty"`
	}
	out := struct {
		Rules []rule `json:"rules"`
	}{Rules: make([]rule, 0, len(s.rulesOrNil()))}
	for _, r := range s.rulesOrNil() {
		out.Rules = append(out.Rules, rule{ID: r.ID, Key: r.Key, Algorithm: r.Algorithm, Limit: r.Limit,
			Per: FormatPeriod(r.Period), Burst: r.Burst, Shadow: r.Shadow, FailMode: r.FailMode})
	}
	b, err := json.Marshal(out)
	if err != nil { // strings, integers and booleans always marshal
		panic("policy: encode a rule set: " + err.Error())
	}
	return b
}

// Equal reports whether s and t hold the same rules in the same order.
func (s *Set) Equal(t *Set) bool {
	a, b := s.rulesOrNil(), t.rulesOrNil()
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].equal(b[i]) {
			return false
		}
	}
	return true
}

func (r Rule) equal(o Rule) bool {
	if len(r.Key) != len(o.Key) {
		return false
	}
	for i := range r.Key {
		if r.Key[i] != o.Key[i] {
			return false
		}
	}
	return r.ID == o.ID && r.Algorithm == o.Algorithm && r.Limit == o.Limit && r.Period == o.Period &&
		r.Burst == o.Burst && r.Shadow == o.Shadow && r.FailMode == o.FailMode
}
