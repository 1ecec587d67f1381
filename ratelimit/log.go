package ratelimit

import (
	"encoding/binary"
	"errors"
)

// Entry is one admitted request of the sliding log: its instant and cost
// (requests at the same instant share an entry).
type Entry struct {
	At   int64
	Cost int64
}

// LogState is an exact sliding log: the admitted requests of the last
// Period, oldest first. The zero value is empty.
type LogState struct {
	Entries []Entry
}

// Log admits a request of cost (>= 1) at now when the cost admitted in the
// last Period, (now-Period, now], plus cost is at most Limit. Entries
// older than that are dropped. The returned state shares st's backing
// array (it drops from the front and appends); the caller encodes it at
// once.
//
// The state holds up to Limit entries (fewer when requests share an
// instant or cost more than 1), 4-6 bytes each once encoded: a caller
// that lets users pick Limit must bound it for this algorithm.
//
// The new state is meaningful only when the decision is allowed.
func (r Rule) Log(st LogState, now, cost int64) (Decision, LogState) {
	cut := now - r.Period
	i := 0
	for i < len(st.Entries) && st.Entries[i].At <= cut {
		i++
	}
	st.Entries = st.Entries[i:]
	var used int64
	for _, e := range st.Entries {
		used += e.Cost
	}
	reset := int64(0)
	if n := len(st.Entries); n > 0 {
		reset = st.Entries[n-1].At + r.Period - now
	}
	remaining := max(r.Limit-used, 0)
	switch {
	case cost > r.Limit:
		return denyNever(r.Limit, remaining, reset), st
	case used+cost > r.Limit:
		// Wait until enough of the oldest entries have left the window.
		need := used + cost - r.Limit
		at := int64(0)
		for _, e := range st.Entries {
			need -= e.Cost
			if need <= 0 {
				at = e.At + r.Period
				break
			}
		}
		return Decision{Limit: r.Limit, Remaining: remaining, RetryAfter: at - now, ResetAfter: reset}, st
	}
	if n := len(st.Entries); n > 0 && st.Entries[n-1].At >= now {
		st.Entries[n-1].Cost += cost // same instant (or a clock held back): one entry
	} else {
		st.Entries = append(st.Entries, Entry{At: now, Cost: cost})
	}
	return Decision{Allowed: true, Limit: r.Limit, Remaining: r.Limit - used - cost, RetryAfter: -1,
		ResetAfter: st.Entries[len(st.Entries)-1].At + r.Period - now}, st
}

// ErrCorrupt is returned by DecodeLog for bytes AppendLog did not write.
var ErrCorrupt = errors.New("corrupt rate-limit state")

// AppendLog appends st's encoding to dst: the number of entries, then per
// entry the distance from the previous instant (the first: from 0) and the
// cost, all as unsigned varints. Requests a millisecond or more apart take
// 4-6 bytes each.
func AppendLog(dst []byte, st LogState) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(st.Entries)))
	prev := int64(0)
	for _, e := range st.Entries {
		dst = binary.AppendUvarint(dst, uint64(e.At-prev))
		dst = binary.AppendUvarint(dst, uint64(e.Cost))
		prev = e.At
	}
	return dst
}

// DecodeLog parses AppendLog's encoding, appending the entries to buf's
// backing array (pass buf[:0] to reuse it). It checks that instants are
// ascending and non-negative and costs positive.
func DecodeLog(b []byte, buf []Entry) (LogState, error) {
	st, rest, err := decodeLog(b, buf)
	if err == nil && len(rest) != 0 {
		return LogState{}, ErrCorrupt
	}
	return st, err
}

// decodeLog is DecodeLog that returns the bytes after the entries.
func decodeLog(b []byte, buf []Entry) (LogState, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) { // every entry takes at least 2 bytes
		return LogState{}, nil, ErrCorrupt
	}
	return decodeEntries(b[k:], n, buf)
}

// decodeEntries parses n entries as AppendLog writes them, appending them
// to buf's backing array, and returns the bytes after them.
func decodeEntries(b []byte, n uint64, buf []Entry) (LogState, []byte, error) {
	out := buf[:0]
	prev := int64(0)
	for range n {
		d, k1 := binary.Uvarint(b)
		if k1 <= 0 {
			return LogState{}, nil, ErrCorrupt
		}
		c, k2 := binary.Uvarint(b[k1:])
		if k2 <= 0 {
			return LogState{}, nil, ErrCorrupt
		}
		b = b[k1+k2:]
		at := prev + int64(d)
		if d > 1<<62 || at < prev || c == 0 || c > uint64(MaxLimit) {
			return LogState{}, nil, ErrCorrupt
		}
		out = append(out, Entry{At: at, Cost: int64(c)})
		prev = at
	}
	return LogState{Entries: out}, b, nil
}
