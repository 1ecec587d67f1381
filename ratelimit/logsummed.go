package ratelimit

import (
	"encoding/binary"
	"math"
)

// The summed layout of a LOG state. A LOG state's algorithm byte says how
// its entries are laid out:
//
//   - AlgoLog (written by earlier builds, still read): AppendLog's count
//     and entries;
//   - logSummed (written now): the entries' count, their total cost and
//     the last entry's instant, then the entries: the first as its
//     distance back from the last instant and its cost, the others as
//     AppendLog writes them (distance from the one before, cost); all
//     unsigned varints.
//
// Both are padded with zeros to a multiple of logPad bytes. Where the
// entries end needs no field: each ends with its cost, whose varint's
// last byte is never zero, so the padding is the zeros after the last
// non-zero byte. The header lets an admitted request be applied to the
// encoded state (ApplyLog) reading only the entries that leave the
// window: the sum of the rest is the total minus theirs, the new entry
// goes after the last instant, and the entries in between are copied as
// bytes. The header costs the total's varint more than the older
// layout.
const logSummed = 0x80 | byte(AlgoLog)

// appendLogSummed appends st's summed layout (without padding).
func appendLogSummed(dst []byte, st LogState) []byte {
	var total, last int64
	for _, e := range st.Entries {
		total += e.Cost
		last = e.At
	}
	dst = binary.AppendUvarint(dst, uint64(len(st.Entries)))
	dst = binary.AppendUvarint(dst, uint64(total))
	dst = binary.AppendUvarint(dst, uint64(last))
	for i, e := range st.Entries {
		if i == 0 {
			dst = binary.AppendUvarint(dst, uint64(last-e.At))
		} else {
			dst = binary.AppendUvarint(dst, uint64(e.At-st.Entries[i-1].At))
		}
		dst = binary.AppendUvarint(dst, uint64(e.Cost))
	}
	return dst
}

// decodeLogSummed parses appendLogSummed's layout into buf's backing array
// and returns the bytes after the entries. The header must agree with the
// entries, whose instants must not decrease.
func decodeLogSummed(b []byte, buf []Entry) (LogState, []byte, error) {
	r := reader{b: b}
	count, total := r.next(), r.next()
	// Instants may reach MaxInt64 (the older layout allows them), past
	// what reader.next takes.
	last, k := binary.Uvarint(r.b)
	if r.bad || k <= 0 || last > math.MaxInt64 {
		return LogState{}, nil, ErrCorrupt
	}
	r.b = r.b[k:]
	if count > int64(len(r.b)) { // every entry takes at least 2 bytes
		return LogState{}, nil, ErrCorrupt
	}
	out := buf[:0]
	var at, sum int64
	for i := range count {
		var d int64
		if i == 0 { // the distance back from last: up to last itself
			span, k := binary.Uvarint(r.b)
			if k <= 0 || span > last {
				return LogState{}, nil, ErrCorrupt
			}
			r.b, at = r.b[k:], int64(last-span)
		} else {
			d = r.next()
		}
		c := r.next()
		switch {
		case r.bad || c < 1 || c > MaxLimit:
			return LogState{}, nil, ErrCorrupt
		case i == 0:
		case at+d < at:
			return LogState{}, nil, ErrCorrupt
		default:
			at += d
		}
		sum += c
		out = append(out, Entry{At: at, Cost: c})
	}
	if sum != total || at != int64(last) {
		return LogState{}, nil, ErrCorrupt
	}
	return LogState{Entries: out}, r.b, nil
}

// ApplyLog applies an admitted LOG request of cost at now straight to
// enc, a key's encoded state, and appends the state after it, encoded
// with rule r, to dst; the result is what AppendState of the state Rule.Log
// returns would be. ok is false, with dst as given, when it cannot: enc is
// not a LOG state in the summed layout, the request is denied, or it falls
// on the instant of the last entry (or before: a clock held back). The
// caller then decodes the state and runs Rule.Log.
//
// The entries that stay in the window are copied, not checked: a state
// that only its header and the leaving entries show to be corrupt is
// caught here, one corrupt further in when it is next decoded.
func (r Rule) ApplyLog(dst, enc []byte, now, cost int64) (out []byte, d Decision, ok bool) {
	if !IsState(enc) || enc[len(magic)] != logSummed || cost > r.Limit {
		return dst, Decision{}, false
	}
	rd := reader{b: enc[len(magic)+1:]}
	rd.next() // the stored rule: r replaces it
	rd.next()
	rd.next()
	count, total, last := rd.next(), rd.next(), rd.next()
	if rd.bad || last >= now {
		return dst, Decision{}, false
	}
	// The entries end at the last byte that is not zero (see logSummed).
	body := trimPad(rd.b)
	cut := now - r.Period
	// Drop the entries that left the window, up to the first that stays;
	// body is then the entries after that one.
	var at, dropped, left int64 // left: how many entries were dropped
	var firstAt, firstCost int64
	kept := false
	for left < count {
		delta, k1 := binary.Uvarint(body)
		if k1 <= 0 {
			return dst, Decision{}, false
		}
		c, k2 := binary.Uvarint(body[k1:])
		if k2 <= 0 || delta > 1<<62 || c == 0 || c > uint64(MaxLimit) || (left == 0 && int64(delta) > last) {
			return dst, Decision{}, false
		}
		body = body[k1+k2:]
		if left == 0 {
			at = last - int64(delta) // the first entry: back from the last
		} else {
			at += int64(delta)
		}
		if at > cut {
			firstAt, firstCost, kept = at, int64(c), true
			break
		}
		dropped += int64(c)
		left++
	}
	used := total - dropped
	if used < 0 || used+cost > r.Limit {
		return dst, Decision{}, false
	}
	start := len(dst)
	dst = appendHead(dst, logSummed, r)
	dst = binary.AppendUvarint(dst, uint64(count-left+1))
	dst = binary.AppendUvarint(dst, uint64(used+cost))
	dst = binary.AppendUvarint(dst, uint64(now))
	if kept {
		dst = binary.AppendUvarint(dst, uint64(now-firstAt))
		dst = binary.AppendUvarint(dst, uint64(firstCost))
		dst = append(dst, body...)
		dst = binary.AppendUvarint(dst, uint64(now-last))
	} else {
		dst = append(dst, 0) // the only entry: no distance back
	}
	dst = binary.AppendUvarint(dst, uint64(cost))
	return padLog(dst, start), Decision{Allowed: true, Limit: r.Limit, Remaining: r.Limit - used - cost, RetryAfter: -1, ResetAfter: r.Period}, true
}
