package ratelimit

import (
	"bytes"
	"strings"
	"testing"
	"time"
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
			if d1 != d2 || string(AppendState(nil, &next)) != string(AppendState(nil, &cp)) {
				t.Fatalf("%v call %d: Decide %+v %+v, Apply %+v %+v", algo, i, d1, next, d2, cp)
			}
			st = next
		}
	}
}

// TestLogStatePadding: a LOG state is padded with zeros to a multiple of
// logPad bytes, so that most requests leave its length unchanged (an
// in-place rewrite in the keyspace); an unpadded state (earlier builds)
// still decodes, and padding AppendState would not write is corrupt.
func TestLogStatePadding(t *testing.T) {
	r, err := NewRule(100, int64(time.Second), 0)
	if err != nil {
		t.Fatal(err)
	}
	st := State{Algo: AlgoLog, Rule: r}
	now := int64(1_700_000_000_000_000_000)
	same := 0
	prev := len(AppendState(nil, &st))
	for i := range 50 {
		st.Apply(now+int64(i)*int64(7*time.Millisecond), 1)
		enc := AppendState(nil, &st)
		if len(enc)%logPad != 0 {
			t.Fatalf("LOG state of %d bytes, not a multiple of %d", len(enc), logPad)
		}
		if len(enc) == prev {
			same++
		}
		prev = len(enc)
		back, err := DecodeState(enc, nil)
		if err != nil || len(back.Log.Entries) != len(st.Log.Entries) {
			t.Fatalf("padded state does not decode: %v", err)
		}
	}
	if same < 40 {
		t.Fatalf("only %d of 50 requests kept the state's length", same)
	}
	enc := AppendState(nil, &st)
	unpadded := bytes.TrimRight(enc, "\x00")
	if back, err := DecodeState(unpadded, nil); err != nil || len(back.Log.Entries) != len(st.Log.Entries) {
		t.Fatalf("unpadded state: %v", err)
	}
	if enc[len(enc)-1] != 0 {
		t.Fatalf("test state needs padding: %x", enc)
	}
	short := append(bytes.Clone(unpadded), 0) // padding to no multiple
	if len(short)%logPad == 0 {
		short = append(short, 0)
	}
	for _, bad := range [][]byte{
		append(bytes.Clone(enc), make([]byte, logPad)...), // a whole block too many
		short,
		append(bytes.Clone(enc[:len(enc)-1]), 1), // padding that is not zero
	} {
		if _, err := DecodeState(bad, nil); err == nil {
			t.Fatalf("%x decoded", bad)
		}
	}
}
