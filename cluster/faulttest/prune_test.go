package faulttest

import (
	"fmt"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// The pruning of unknown writes must keep porcupine's verdict: these
// histories are checked as they are (through porcupineOps, which prunes)
// and must give the verdict they have unpruned.
func TestPruneKeepsVerdicts(t *testing.T) {
	cases := []struct {
		name string
		ok   bool
		h    History
	}{
		{"counter: one of two unknown increments applied", true, History{
			incr(0, "n", "1", 0, 1), unknown(incr(1, "n", "", 2, 3)), unknown(incr(2, "n", "", 2, 3)), final(get(9, "n", "2", 10, 11)),
		}},
		{"counter: the earliest unknown increment explains a read", true, History{
			unknown(incr(1, "n", "", 0, 1)), get(2, "n", "1", 5, 6), unknown(incr(1, "n", "", 10, 11)), final(get(9, "n", "1", 20, 21)),
		}},
		{"counter: no unknown increment was called before the read", false, History{
			incr(0, "n", "1", 0, 1), get(2, "n", "2", 2, 3), unknown(incr(1, "n", "", 5, 6)), final(get(9, "n", "2", 20, 21)),
		}},
		{"counter: final read below the acknowledged count", false, History{
			incr(0, "n", "1", 0, 1), incr(0, "n", "2", 2, 3), unknown(incr(1, "n", "", 2, 3)), final(get(9, "n", "1", 20, 21)),
		}},
		{"register: unobserved unknown writes", true, History{
			set(0, "k", "a", 0, 1), unknown(set(1, "k", "u1", 2, 3)), unknown(set(2, "k", "u2", 2, 3)), get(3, "k", "a", 4, 5), final(get(9, "k", "a", 10, 11)),
		}},
		{"register: an observed unknown write stays", false, History{
			set(0, "k", "a", 0, 1), unknown(set(1, "k", "u1", 2, 3)), get(3, "k", "u1", 4, 5), get(3, "k", "a", 6, 7),
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := fixNil(c.h)
			unpruned := porcupine.CheckOperations(kvModel, toPorcupine(h))
			if unpruned != c.ok {
				t.Fatalf("the case is wrong: unpruned verdict %v, want %v", unpruned, c.ok)
			}
			if r := CheckLinearizable(h, 5*time.Second); (r.Result == porcupine.Ok) != c.ok {
				t.Fatalf("pruned verdict %s, want linearizable %v", r.Result, c.ok)
			}
		})
	}
}

// Many unknown writes (what a cluster's elections leave behind) must not
// make the check blow up.
func TestManyUnknownWritesCheckQuickly(t *testing.T) {
	var h History
	at := int64(0)
	for i := 0; i < 60; i++ {
		h = append(h, unknown(set(i%6, "k", fmt.Sprint("u", i), at, at+1)))
		h = append(h, set(6, "k", fmt.Sprint("v", i), at+2, at+3), get(7, "k", fmt.Sprint("v", i), at+4, at+5))
		h = append(h, unknown(incr(i%6, "n", "", at, at+1)))
		at += 10
	}
	h = append(h, final(get(9, "k", "v59", at, at+1)), final(get(9, "n", "2", at, at+1)))
	start := time.Now()
	r := CheckLinearizable(h, 20*time.Second)
	if r.Result != porcupine.Ok {
		t.Fatalf("verdict %s", r.Result)
	}
	d := time.Since(start)
	if d > 5*time.Second {
		t.Fatalf("check took %v", d)
	}
	if testing.Verbose() { // what the pruning saves
		res := porcupine.CheckOperationsTimeout(kvModel, toPorcupine(h), 3*time.Second)
		t.Logf("pruned: %s in %v; unpruned: %s within 3 s", r.Result, d, res)
	}
}
