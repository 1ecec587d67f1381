package ratelimit

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"
)

// applyLogBoth runs one request on enc (nil: no state) both ways: decoded
// and Rule.Log, then encoded (slow), and Rule.ApplyLog (fast). It fails
// when the fast path answers differently from the slow one, or declines
// an admitted request for any reason but a clock at or before the last
// entry (or a state in the older layout). It returns the slow path's decision and new encoding (enc when
// denied), and whether the fast path served the request.
func applyLogBoth(t testing.TB, r Rule, enc []byte, now, cost int64) (Decision, []byte, bool) {
	t.Helper()
	st := State{Algo: AlgoLog}
	if enc != nil {
		if err := st.Decode(enc, nil); err != nil {
			t.Fatalf("state %x: %v", enc, err)
		}
	}
	st.Rule = r
	last := int64(-1)
	if n := len(st.Log.Entries); n > 0 {
		last = st.Log.Entries[n-1].At
	}
	d := st.Apply(now, cost)
	next := enc
	if d.Allowed {
		next = AppendState(nil, &st)
	}
	out, fd, ok := r.ApplyLog([]byte("prefix"), enc, now, cost)
	switch {
	case ok && (fd != d || !bytes.Equal(out[len("prefix"):], next) || string(out[:len("prefix")]) != "prefix"):
		t.Fatalf("now %d cost %d on %x: ApplyLog %+v %x; Log %+v %x", now, cost, enc, fd, out, d, next)
	case !ok && string(out) != "prefix":
		t.Fatalf("ApplyLog declined but wrote %x", out)
	case !ok && d.Allowed && enc != nil && enc[len(magic)] == logSummed && last < now:
		t.Fatalf("ApplyLog declined an admitted request (now %d, last %d) on %x", now, last, enc)
	}
	return d, next, ok
}

// TestApplyLogMatchesLog: on random rules, clocks and costs, with rules
// changed mid-way, requests at one instant and entries leaving exactly
// at the cut, every request ApplyLog
// serves gets Rule.Log's decision and AppendState's bytes, and it serves
// every admitted request but those at the last entry's instant.
func TestApplyLogMatchesLog(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	periods := []int64{int64(10 * time.Millisecond), int64(time.Second), int64(time.Minute)}
	for round := range 60 {
		r, err := NewRule(1+rng.Int64N(20), periods[rng.IntN(len(periods))], 0)
		if err != nil {
			t.Fatal(err)
		}
		var enc []byte
		now := int64(1_700_000_000_000_000_000)
		fast, allowed := 0, 0
		for range 400 {
			if rng.IntN(50) == 0 { // the rule changes mid-way
				r, _ = NewRule(1+rng.Int64N(20), r.Period, 0)
			}
			switch rng.IntN(10) {
			case 0: // the same instant
			case 1:
				now += r.Period + rng.Int64N(r.Period) // everything leaves
			case 2, 3: // on a grid: entries leave exactly at the cut
				now += r.Period / 10 * (1 + rng.Int64N(3))
			default:
				now += 1 + rng.Int64N(2*r.Period/r.Limit+1)
			}
			d, next, ok := applyLogBoth(t, r, enc, now, 1+rng.Int64N(3))
			if d.Allowed {
				allowed++
			}
			if ok {
				fast++
			}
			enc = next
		}
		if allowed > 20 && fast < allowed/2 {
			t.Fatalf("round %d: the fast path served %d of %d admitted requests", round, fast, allowed)
		}
	}
}

// TestLogOlderLayout: a LOG state in the layout earlier builds wrote
// (algorithm byte AlgoLog, AppendLog's entries) still decodes; ApplyLog
// leaves it to the slow path, which writes the summed layout.
func TestLogOlderLayout(t *testing.T) {
	r, err := NewRule(10, int64(time.Second), 0)
	if err != nil {
		t.Fatal(err)
	}
	entries := []Entry{{1_700_000_000_000_000_000, 2}, {1_700_000_000_300_000_000, 1}}
	old := append([]byte(magic), byte(AlgoLog))
	old = binary.AppendUvarint(old, 10)
	old = binary.AppendUvarint(old, 1000)
	old = binary.AppendUvarint(old, 0)
	old = AppendLog(old, LogState{Entries: entries})
	for len(old)%logPad != 0 {
		old = append(old, 0)
	}
	st, err := DecodeState(old, nil)
	if err != nil || st.Algo != AlgoLog || st.Rule != r || len(st.Log.Entries) != 2 || st.Log.Entries[1] != entries[1] {
		t.Fatalf("older layout: %+v, %v", st, err)
	}
	now := entries[1].At + int64(100*time.Millisecond)
	if _, _, ok := r.ApplyLog(nil, old, now, 1); ok {
		t.Fatal("ApplyLog served a state in the older layout")
	}
	d, next, _ := applyLogBoth(t, r, old, now, 1)
	if !d.Allowed || d.Remaining != 6 || next[len(magic)] != logSummed {
		t.Fatalf("after the older layout: %+v, %x", d, next)
	}
	if _, _, ok := applyLogBoth(t, r, next, now+1, 1); !ok {
		t.Fatal("the rewritten state is not served by ApplyLog")
	}
}

// TestLogSummedHeaderChecked: a summed state whose count or total
// disagrees with its entries, or whose first entry's distance back does
// not lead to the last instant, does not decode. (The last instant itself
// places every entry: changed, it makes another valid state.)
func TestLogSummedHeaderChecked(t *testing.T) {
	st := State{Algo: AlgoLog, Rule: Rule{Limit: 5, Period: 60e9}, Log: LogState{Entries: []Entry{{1e18, 1}, {1e18 + 5, 2}}}}
	good := AppendState(nil, &st)
	if _, err := DecodeState(good, nil); err != nil {
		t.Fatal(err)
	}
	for _, field := range []int{0, 1, 3} { // count, total, (last), the first distance
		bad := bytes.Clone(good)
		p := len(magic) + 1
		for range 3 + field { // after the rule's three
			_, k := binary.Uvarint(bad[p:])
			p += k
		}
		bad[p]++
		if _, err := DecodeState(bad, nil); err == nil {
			t.Errorf("field %d changed: %x decoded", field, bad)
		}
	}
}

// FuzzApplyLog: ApplyLog never panics on any bytes, and on bytes that
// decode it agrees with the slow path.
func FuzzApplyLog(f *testing.F) {
	st := State{Algo: AlgoLog, Rule: Rule{Limit: 5, Period: 60e9}, Log: LogState{Entries: []Entry{{1e18, 1}, {1e18 + 5, 2}}}}
	f.Add(AppendState(nil, &st), int64(1e18+10), int64(1))
	f.Add(AppendState(nil, &st), int64(1e18+70e9), int64(2))
	f.Fuzz(func(t *testing.T, b []byte, now, cost int64) {
		r := Rule{Limit: 5, Period: 60e9}
		if now < 0 || cost < 1 || cost > MaxLimit {
			return
		}
		if _, err := DecodeState(b, nil); err != nil || b[len(magic)] != logSummed {
			r.ApplyLog(nil, b, now, cost)
			return
		}
		applyLogBoth(t, r, b, now, cost)
	})
}
