package faulttest

import (
	"sort"
	"strconv"
)

// pruneUnknown removes from one key's operations the writes of unknown
// outcome that cannot change porcupine's verdict, which keeps the search
// small: every such write is pending until the end, and a register with k
// of them has 2^k states to explore.
//
//   - A key written only by SET (each SET writes a distinct value): an
//     unknown SET whose value no read returned is dropped. With it, a
//     linearization can put it last (its return is at infinity); without
//     it, a linearization that had it somewhere stays valid, since no
//     read saw its value and no INCR read it.
//   - A key written only by INCR, with a final read F after every other
//     operation returned: exactly F - A unknown INCRs (A acknowledged)
//     come before the final read in any linearization, and the rest can
//     move after it. Unknown INCRs are interchangeable except for their
//     calls, and an earlier call fits wherever a later one does, so the
//     F - A earliest-called are kept and the others dropped.
//
// Keys written both ways, and counters without a final read, are left as
// they are.
func pruneUnknown(ops []Op) []Op {
	var sets, incrs int
	var final *Op
	observed := map[string]bool{}
	var acked int64
	for i, op := range ops {
		switch {
		case op.Kind == Set:
			sets++
		case op.Kind == Incr:
			incrs++
			if op.Outcome == OK {
				acked++
			}
		case op.Kind == Get && op.Outcome == OK && op.Exists:
			observed[op.Value] = true
		}
		if op.Final && op.Outcome == OK {
			final = &ops[i]
		}
	}
	switch {
	case sets > 0 && incrs == 0:
		return dropOps(ops, func(op Op) bool { return op.Kind == Set && op.Outcome == Unknown && !observed[op.Arg] })
	case incrs > 0 && sets == 0 && final != nil:
		var f int64
		if final.Exists {
			v, err := strconv.ParseInt(final.Value, 10, 64)
			if err != nil {
				return ops
			}
			f = v
		}
		var calls []int64
		for _, op := range ops {
			if op.Kind == Incr && op.Outcome == Unknown {
				calls = append(calls, op.Call)
			}
		}
		sort.Slice(calls, func(i, j int) bool { return calls[i] < calls[j] })
		keep := f - acked
		if keep >= int64(len(calls)) {
			return ops
		}
		if keep <= 0 {
			return dropOps(ops, func(op Op) bool { return op.Kind == Incr && op.Outcome == Unknown })
		}
		// Keep those called before the keep-th earliest call, and enough
		// of those called at it.
		cut := calls[keep-1]
		atCut := keep - int64(sort.Search(len(calls), func(i int) bool { return calls[i] >= cut }))
		return dropOps(ops, func(op Op) bool {
			if op.Kind != Incr || op.Outcome != Unknown || op.Call < cut {
				return false
			}
			if op.Call == cut && atCut > 0 {
				atCut--
				return false
			}
			return true
		})
	}
	return ops
}

func dropOps(ops []Op, drop func(Op) bool) []Op {
	out := make([]Op, 0, len(ops))
	for _, op := range ops {
		if !drop(op) {
			out = append(out, op)
		}
	}
	return out
}
