package faulttest

import (
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

const ms = int64(time.Millisecond)

// Hand-made operations: times in milliseconds.
func set(c int, key, v string, call, ret int64) Op {
	return Op{Client: c, Kind: Set, Key: key, Arg: v, Call: call * ms, Return: ret * ms}
}

func get(c int, key, v string, call, ret int64) Op {
	return Op{Client: c, Kind: Get, Key: key, Value: v, Exists: v != "<nil>", Call: call * ms, Return: ret * ms}
}

func incr(c int, key, v string, call, ret int64) Op {
	return Op{Client: c, Kind: Incr, Key: key, Value: v, Exists: true, Call: call * ms, Return: ret * ms}
}

func unknown(op Op) Op {
	op.Outcome, op.Err, op.Value, op.Exists = Unknown, "i/o timeout", "", false
	return op
}

func final(op Op) Op {
	op.Final = true
	return op
}

func fixNil(h History) History {
	for i := range h {
		if h[i].Value == "<nil>" {
			h[i].Value = ""
		}
	}
	return h
}

func TestLinearizabilityChecker(t *testing.T) {
	cases := []struct {
		name string
		ok   bool
		h    History
	}{
		{"sequential", true, History{
			get(0, "k", "<nil>", 0, 1), set(0, "k", "a", 2, 3), get(1, "k", "a", 4, 5),
			incr(0, "n", "1", 0, 1), incr(1, "n", "2", 2, 3), get(0, "n", "2", 4, 5),
		}},
		{"concurrent read sees either", true, History{
			set(0, "k", "a", 0, 1), set(0, "k", "b", 2, 10), get(1, "k", "a", 3, 4), get(2, "k", "b", 5, 6),
		}},
		{"stale read", false, History{
			set(0, "k", "a", 0, 1), set(0, "k", "b", 2, 3), get(1, "k", "a", 4, 5),
		}},
		{"read goes back in time", false, History{
			set(0, "k", "a", 0, 1), set(0, "k", "b", 2, 10), get(1, "k", "b", 3, 4), get(2, "k", "a", 5, 6),
		}},
		{"lost increment", false, History{
			incr(0, "n", "1", 0, 1), incr(0, "n", "2", 2, 3), incr(1, "n", "3", 4, 5), final(get(9, "n", "2", 6, 7)),
		}},
		{"duplicated increment", false, History{
			incr(0, "n", "1", 0, 1), incr(1, "n", "1", 2, 3),
		}},
		{"unknown write applied late", true, History{
			unknown(set(0, "k", "x", 0, 1)), set(1, "k", "y", 2, 3), get(2, "k", "x", 4, 5),
		}},
		{"unknown write never applied", true, History{
			set(1, "k", "y", 0, 1), unknown(set(0, "k", "x", 2, 3)), get(2, "k", "y", 4, 5), get(2, "k", "y", 6, 7),
		}},
		{"unknown write applied then undone", false, History{
			set(1, "k", "y", 0, 1), unknown(set(0, "k", "x", 2, 3)), get(2, "k", "x", 4, 5), get(2, "k", "y", 6, 7),
		}},
		{"unknown increments", true, History{
			incr(0, "n", "1", 0, 1), unknown(incr(1, "n", "", 2, 3)), unknown(incr(1, "n", "", 4, 5)), incr(0, "n", "3", 6, 7),
		}},
		{"keys are independent", true, History{
			set(0, "a", "1", 0, 10), set(1, "b", "2", 0, 10), get(2, "a", "1", 11, 12), get(2, "b", "2", 11, 12),
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := CheckLinearizable(fixNil(c.h), 5*time.Second)
			if got := r.Result == porcupine.Ok; got != c.ok {
				t.Fatalf("linearizable = %v (%s), want %v", got, r.Result, c.ok)
			}
			if !c.ok && len(r.BadKeys) == 0 {
				t.Fatal("illegal history names no bad key")
			}
		})
	}
}

func TestLostWritesChecker(t *testing.T) {
	cases := []struct {
		name string
		want string // "" = no violation, else a substring of the violation
		h    History
	}{
		{"counter intact", "", History{
			incr(0, "n", "1", 0, 1), incr(1, "n", "2", 2, 3), final(get(9, "n", "2", 4, 5)),
		}},
		{"counter lost an acknowledged increment", "lost", History{
			incr(0, "n", "1", 0, 1), incr(1, "n", "2", 2, 3), final(get(9, "n", "1", 4, 5)),
		}},
		{"counter absent at the end", "lost", History{
			incr(0, "n", "1", 0, 1), final(get(9, "n", "<nil>", 4, 5)),
		}},
		{"counter with unknown increments", "", History{
			incr(0, "n", "1", 0, 1), unknown(incr(1, "n", "", 2, 3)), final(get(9, "n", "2", 4, 5)),
		}},
		{"counter with a phantom increment", "exceeds", History{
			incr(0, "n", "1", 0, 1), unknown(incr(1, "n", "", 2, 3)), final(get(9, "n", "3", 4, 5)),
		}},
		{"register intact", "", History{
			set(0, "k", "a", 0, 1), set(1, "k", "b", 2, 3), final(get(9, "k", "b", 4, 5)),
		}},
		{"register concurrent writes, either wins", "", History{
			set(0, "k", "a", 0, 3), set(1, "k", "b", 1, 2), final(get(9, "k", "a", 4, 5)),
		}},
		{"register lost the later write", "overwritten|older", History{
			set(0, "k", "a", 0, 1), set(1, "k", "b", 2, 3), final(get(9, "k", "a", 4, 5)),
		}},
		{"register absent at the end", "absent", History{
			set(0, "k", "a", 0, 1), final(get(9, "k", "<nil>", 4, 5)),
		}},
		{"register holds a value nobody wrote", "never written", History{
			set(0, "k", "a", 0, 1), final(get(9, "k", "z", 4, 5)),
		}},
		{"register holds an unknown write", "", History{
			set(0, "k", "a", 2, 3), unknown(set(1, "k", "u", 0, 1)), final(get(9, "k", "u", 4, 5)),
		}},
		{"written but no final read", "never read", History{
			set(0, "k", "a", 0, 1),
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := CheckLostWrites(fixNil(c.h))
			if c.want == "" {
				if len(bad) > 0 {
					t.Fatalf("violations on a good history: %q", bad)
				}
				return
			}
			if len(bad) == 0 {
				t.Fatal("no violation found")
			}
			matched := false
			for _, w := range strings.Split(c.want, "|") {
				matched = matched || strings.Contains(bad[0], w)
			}
			if !matched {
				t.Fatalf("violation %q does not mention %q", bad[0], c.want)
			}
		})
	}
}

// throttleOps makes CL.THROTTLE replies on key "L": allowed ones at each
// of the given milliseconds (each taking 1 ms), limited ones elsewhere.
func throttleOps(allowedAt []int64, limitedAt []int64, unknownAt []int64) History {
	var h History
	for _, at := range allowedAt {
		h = append(h, Op{Kind: Throttle, Key: "L", Call: at * ms, Return: (at + 1) * ms, Allowed: true})
	}
	for _, at := range limitedAt {
		h = append(h, Op{Kind: Throttle, Key: "L", Call: at * ms, Return: (at + 1) * ms})
	}
	for _, at := range unknownAt {
		h = append(h, Op{Kind: Throttle, Key: "L", Call: at * ms, Return: (at + 1) * ms, Outcome: Unknown})
	}
	return h
}

func TestThrottleChecker(t *testing.T) {
	const burst, period = 2, 100 * time.Millisecond // 3 at once, then one per 100 ms
	cases := []struct {
		name         string
		strict, loos bool // violations expected of the strict and the loose bound
		h            History
	}{
		{"burst then steady rate", false, false, throttleOps(
			[]int64{0, 1, 2, 100, 200, 300, 400}, []int64{3, 4, 50, 150}, nil)},
		{"burst after a quiet spell", false, false, throttleOps(
			[]int64{0, 1, 2, 1000, 1001, 1002}, nil, nil)},
		{"four at once", true, true, throttleOps(
			[]int64{0, 1, 2, 3}, nil, nil)},
		{"too fast after the burst", true, true, throttleOps(
			[]int64{0, 1, 2, 100, 150, 200}, nil, nil)},
		{"a forgotten burst after failover", true, true, throttleOps(
			[]int64{0, 1, 2, 500, 501, 502, 503, 504, 505}, nil, nil)},
		{"unknown calls before excuse extra only in the loose bound", true, false, throttleOps(
			[]int64{0, 1, 2, 3, 4}, nil, []int64{0, 0})},
		{"unknown calls after the window excuse nothing", true, true, throttleOps(
			[]int64{0, 1, 2, 3, 4}, nil, []int64{900, 901})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := CheckThrottle(c.h, "L", burst, period)
			if (r.Violations > 0) != c.strict || (r.LooseViolations > 0) != c.loos {
				t.Fatalf("violations %d strict, %d loose (worst: %s); want strict %v, loose %v",
					r.Violations, r.LooseViolations, r.Worst, c.strict, c.loos)
			}
			if r.Windows == 0 {
				t.Fatal("no window checked")
			}
		})
	}
}
