package faulttest

import (
	"fmt"
	"sort"
	"time"
)

// ThrottleReport is the verdict of CheckThrottle on one key.
type ThrottleReport struct {
	Allowed, Limited, Unknown int
	Windows                   int // windows checked
	Violations                int
	// Worst describes the window with the most allowed replies above its
	// bound (or the closest to it when there is no violation).
	Worst       string
	WorstExcess int64
}

// CheckThrottle checks the CL.THROTTLE calls on key (max_burst burst,
// emission interval t = period/count, quantity 1) against GCRA's bound:
// in any interval of length D, at most (burst+1) + ⌊D/t⌋ calls are
// allowed, whatever the state at its start.
//
// A window runs from the call of an allowed operation to the return of
// another; it counts the allowed operations whose call and return both lie
// inside it (those were decided inside it), and its bound is raised by the
// operations of unknown outcome invoked before it ended (any of them may
// have taken a token inside it). Every such window is checked: those are
// the tightest ones.
func CheckThrottle(h History, key string, burst int64, t time.Duration) ThrottleReport {
	var r ThrottleReport
	var allowed []Op
	var unknownCalls []int64
	for _, op := range h {
		if op.Kind != Throttle || op.Key != key {
			continue
		}
		switch {
		case op.Outcome == Unknown:
			r.Unknown++
			unknownCalls = append(unknownCalls, op.Call)
		case op.Outcome == OK && op.Allowed:
			r.Allowed++
			allowed = append(allowed, op)
		case op.Outcome == OK:
			r.Limited++
		}
	}
	sort.Slice(allowed, func(i, j int) bool { return allowed[i].Call < allowed[j].Call })
	sort.Slice(unknownCalls, func(i, j int) bool { return unknownCalls[i] < unknownCalls[j] })
	r.WorstExcess = -1 << 62
	returns := make([]int64, 0, len(allowed))
	for i := range allowed {
		start := allowed[i].Call
		returns = returns[:0]
		for _, op := range allowed[i:] { // calls at or after start (sorted)
			returns = append(returns, op.Return)
		}
		sort.Slice(returns, func(a, b int) bool { return returns[a] < returns[b] })
		for j, end := range returns {
			if j+1 < len(returns) && returns[j+1] == end {
				continue // the widest count for this end comes last
			}
			r.Windows++
			d := end - start
			unknown := int64(sort.Search(len(unknownCalls), func(u int) bool { return unknownCalls[u] > end }))
			bound := burst + 1 + d/int64(t) + unknown
			excess := int64(j+1) - bound
			if excess > r.WorstExcess {
				r.WorstExcess = excess
				r.Worst = fmt.Sprintf("%d allowed in [%.3fs, %.3fs] (D=%v), bound %d = %d+%d+%d unknown",
					j+1, float64(start)/1e9, float64(end)/1e9, time.Duration(d), bound, burst+1, d/int64(t), unknown)
			}
			if excess > 0 {
				r.Violations++
			}
		}
	}
	return r
}
