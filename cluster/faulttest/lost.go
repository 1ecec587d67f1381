package faulttest

import (
	"fmt"
	"sort"
	"strconv"
)

// CheckLostWrites returns a violation for every key whose final read (the
// op marked Final) does not reflect an acknowledged write:
//
//   - a key written only by INCR: the final count must be at least the
//     highest value an INCR returned and at least the number of
//     acknowledged INCRs, and at most acknowledged + unknown INCRs (more
//     would be a write nobody made);
//   - a key written only by SET (every SET of a run writes a distinct
//     value): the final value must be one a SET wrote, and no acknowledged
//     SET may have started after the SET of the final value had returned
//     (it would have overwritten it); an absent final value loses every
//     acknowledged SET.
//
// Keys written by both, or never written, are left to the linearizability
// check. A written key without a final read is a violation.
func CheckLostWrites(h History) []string {
	var bad []string
	byKey := h.byKey()
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		bad = append(bad, lostOnKey(k, byKey[k])...)
	}
	return bad
}

func lostOnKey(key string, ops []Op) []string {
	var final *Op
	var sets, incrs []Op
	for i, op := range ops {
		switch {
		case op.Final && op.Outcome == OK:
			final = &ops[i]
		case op.Kind == Set && op.Outcome != Failed:
			sets = append(sets, op)
		case op.Kind == Incr && op.Outcome != Failed:
			incrs = append(incrs, op)
		}
	}
	if len(sets) == 0 && len(incrs) == 0 || len(sets) > 0 && len(incrs) > 0 {
		return nil
	}
	if final == nil {
		return []string{fmt.Sprintf("%s: written but never read at the end", key)}
	}
	if len(incrs) > 0 {
		return lostIncrs(key, incrs, *final)
	}
	return lostSets(key, sets, *final)
}

func lostIncrs(key string, incrs []Op, final Op) []string {
	var acked, unknown, maxAcked int64
	var maxOp Op
	for _, op := range incrs {
		if op.Outcome == Unknown {
			unknown++
			continue
		}
		acked++
		if v, err := strconv.ParseInt(op.Value, 10, 64); err == nil && v > maxAcked {
			maxAcked, maxOp = v, op
		}
	}
	var got int64
	if final.Exists {
		v, err := strconv.ParseInt(final.Value, 10, 64)
		if err != nil {
			return []string{fmt.Sprintf("%s: final value %q of a counter is not an integer", key, final.Value)}
		}
		got = v
	}
	var bad []string
	if got < maxAcked {
		bad = append(bad, fmt.Sprintf("%s: acknowledged INCR returned %d (%v) but the final value is %d: %d acknowledged increments lost",
			key, maxAcked, maxOp, got, maxAcked-got))
	} else if got < acked {
		bad = append(bad, fmt.Sprintf("%s: %d INCRs acknowledged but the final value is %d", key, acked, got))
	}
	if got > acked+unknown {
		bad = append(bad, fmt.Sprintf("%s: final value %d exceeds the %d acknowledged + %d unknown INCRs", key, got, acked, unknown))
	}
	return bad
}

func lostSets(key string, sets []Op, final Op) []string {
	var acked []Op
	for _, op := range sets {
		if op.Outcome == OK {
			acked = append(acked, op)
		}
	}
	if !final.Exists {
		if len(acked) > 0 {
			return []string{fmt.Sprintf("%s: %d acknowledged SETs but the key is absent at the end (last: %v)",
				key, len(acked), acked[len(acked)-1])}
		}
		return nil
	}
	var src *Op
	for i, op := range sets {
		if op.Arg == final.Value {
			src = &sets[i]
			break
		}
	}
	if src == nil {
		return []string{fmt.Sprintf("%s: final value %q was never written", key, final.Value)}
	}
	if src.Outcome == Unknown {
		return nil // it may have taken effect at any time after its call
	}
	for _, op := range acked {
		if op.Call > src.Return {
			return []string{fmt.Sprintf("%s: acknowledged %v started after %v returned, yet the final value is the older %q",
				key, op, *src, final.Value)}
		}
	}
	return nil
}
