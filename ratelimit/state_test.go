package ratelimit

import (
	"strings"
	"testing"
)

// TestParseAlgo: the ASCII fast path and the folding fallback agree with
// strings.EqualFold on every name: any case, Unicode folds included (the
// long s folds to s), and nothing else.
func TestParseAlgo(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Algo
		ok   bool
	}{
		{"GCRA", AlgoGCRA, true}, {"gcra", AlgoGCRA, true}, {"GcRa", AlgoGCRA, true},
		{"FIXED", AlgoFixed, true}, {"Sliding", AlgoSliding, true}, {"LOG", AlgoLog, true},
		{"queue", AlgoQueue, true}, {"LEASE", AlgoLease, true},
		{"\u017fliding", AlgoSliding, true}, // ſ folds to s, as EqualFold says
		{"gcrb", 0, false}, {"gcr", 0, false}, {"", 0, false}, {"G\x00RA", 0, false}, {"gcra ", 0, false},
	} {
		got, ok := ParseAlgo(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseAlgo(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	for a, name := range algoNames {
		for _, s := range []string{name, strings.ToUpper(name)} {
			if got, ok := ParseAlgo(s); name != "" && (!ok || got != Algo(a)) {
				t.Errorf("ParseAlgo(%q) = %v, %v", s, got, ok)
			}
		}
	}
}

// TestApplyIsDecide: Apply changes the state in place exactly as Decide
// returns it, for every algorithm Decide serves.
func TestApplyIsDecide(t *testing.T) {
	rule := Rule{Limit: 3, Period: 1e9, Burst: 2}
	for _, algo := range []Algo{AlgoGCRA, AlgoFixed, AlgoSliding, AlgoLog, AlgoQueue} {
		st := State{Algo: algo, Rule: rule}
		for i := int64(0); i < 6; i++ {
			now := 5e9 + i*1e8
			d1, next := Decide(st, now, 1+i%2)
			cp := st
			cp.Log.Entries = append([]Entry(nil), st.Log.Entries...)
			d2 := cp.Apply(now, 1+i%2)
			if d1 != d2 || string(AppendState(nil, next)) != string(AppendState(nil, cp)) {
				t.Fatalf("%v call %d: Decide %+v %+v, Apply %+v %+v", algo, i, d1, next, d2, cp)
			}
			st = next
		}
	}
}
