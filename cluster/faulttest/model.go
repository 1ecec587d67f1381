package faulttest

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/anishathalye/porcupine"
)

// kvState is one key's value in the model: absent, or a string.
type kvState struct {
	exists bool
	val    string
}

type kvInput struct {
	kind Kind
	arg  string
}

type kvOutput struct {
	unknown bool // the client never learned the outcome: any is fine
	exists  bool
	val     string
}

// kvModel is the sequential specification of SET, GET and INCR on one key
// (histories are partitioned by key, so the state is one value). An
// operation of unknown outcome steps to the state it would have produced,
// and porcupine may instead leave it out: its return is at infinity, so
// it can linearize after everything.
var kvModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		keys := map[string]int{}
		var parts [][]porcupine.Operation
		for _, op := range h {
			k := op.Metadata.(Op).Key
			i, ok := keys[k]
			if !ok {
				i = len(parts)
				keys[k] = i
				parts = append(parts, nil)
			}
			parts[i] = append(parts[i], op)
		}
		return parts
	},
	Init: func() any { return kvState{} },
	Step: func(state, input, output any) (bool, any) {
		st, in, out := state.(kvState), input.(kvInput), output.(kvOutput)
		switch in.kind {
		case Get:
			return out.unknown || (out.exists == st.exists && out.val == st.val), st
		case Set:
			return true, kvState{exists: true, val: in.arg}
		case Incr:
			n := int64(0)
			if st.exists {
				v, err := strconv.ParseInt(st.val, 10, 64)
				if err != nil || v == math.MaxInt64 {
					return out.unknown, st // INCR fails and changes nothing
				}
				n = v
			}
			next := strconv.FormatInt(n+1, 10)
			return out.unknown || out.val == next, kvState{exists: true, val: next}
		}
		return false, st
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(kvInput), output.(kvOutput)
		res := fmt.Sprintf("%q", out.val)
		switch {
		case out.unknown:
			res = "?"
		case in.kind == Set:
			res = "OK"
		case !out.exists:
			res = "nil"
		}
		if in.kind == Set {
			return fmt.Sprintf("SET %q -> %s", in.arg, res)
		}
		return fmt.Sprintf("%s -> %s", in.kind, res)
	},
	DescribeState: func(state any) string {
		st := state.(kvState)
		if !st.exists {
			return "nil"
		}
		return fmt.Sprintf("%q", st.val)
	},
}

// porcupineOps converts the SET, GET and INCR operations of h after
// pruning the unknown writes that cannot change the verdict
// (pruneUnknown), key by key.
func porcupineOps(h History) []porcupine.Operation {
	byKey := h.byKey()
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var pruned History
	for _, k := range keys {
		pruned = append(pruned, pruneUnknown(byKey[k])...)
	}
	return toPorcupine(pruned)
}

// toPorcupine converts the SET, GET and INCR operations of h: failed ones
// and reads of unknown outcome are left out (they had no effect), writes of
// unknown outcome get an infinite return.
func toPorcupine(h History) []porcupine.Operation {
	var ops []porcupine.Operation
	for _, op := range h {
		if op.Kind == Throttle || op.Outcome == Failed || (op.Kind == Get && op.Outcome == Unknown) {
			continue
		}
		out := kvOutput{unknown: op.Outcome == Unknown, exists: op.Exists || op.Kind == Incr, val: op.Value}
		ret := op.Return
		if op.Outcome == Unknown {
			ret = math.MaxInt64
		}
		ops = append(ops, porcupine.Operation{
			ClientId: op.Client, Input: kvInput{kind: op.Kind, arg: op.Arg}, Output: out,
			Call: op.Call, Return: ret, Metadata: op,
		})
	}
	return ops
}

// LinearizabilityResult is porcupine's verdict on a history.
type LinearizabilityResult struct {
	Result porcupine.CheckResult // Ok, Illegal, or Unknown (timed out)
	Ops    int                   // operations checked
	Keys   int
	Info   porcupine.LinearizationInfo
	// BadKeys lists the keys whose history could not be linearized.
	BadKeys []string
}

// CheckLinearizable checks the SET/GET/INCR operations of h with
// porcupine, per key, within timeout (0: none).
func CheckLinearizable(h History, timeout time.Duration) LinearizabilityResult {
	ops := porcupineOps(h)
	res, info := porcupine.CheckOperationsVerbose(kvModel, ops, timeout)
	r := LinearizabilityResult{Result: res, Ops: len(ops), Info: info}
	for k, kops := range History(h).byKey() {
		if kops[0].Kind == Throttle {
			continue
		}
		r.Keys++
		if res == porcupine.Illegal && porcupine.CheckOperationsTimeout(kvModel, porcupineOps(kops), timeout) == porcupine.Illegal {
			r.BadKeys = append(r.BadKeys, k)
		}
	}
	sort.Strings(r.BadKeys)
	return r
}
