package server

import (
	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
)

// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]: the longest
// common subsequence of two strings, as Redis 7.0's lcsCommand computes
// it: the same dynamic-programming table (a missing key is ""), the same
// walk back from its end, so that ties pick the same subsequence and IDX
// lists the same ranges, last first. Its table needs (len1+1)×(len2+1)
// four-byte cells, refused beyond proto-max-bulk-len as in Redis.
func lcsCommand() *Command {
	return &Command{Name: "lcs", Docs: "key1:key key2:key [LEN] [IDX] [MINMATCHLEN len:integer] [WITHMATCHLEN]",
		Arity: -3, Flags: command.Readonly, Since: "7.0.0", Group: "string", FirstKey: 1, LastKey: 2, Step: 1,
		Summary: "Finds the longest common substring.", Handler: cmdLCS}
}

func cmdLCS(x *Ctx) {
	var vals [2][]byte
	for i, key := range x.args[1:3] {
		e, found := x.get(key)
		if found && !e.IsString() {
			x.w.Error("ERR The specified keys must contain string values")
			return
		}
		if found {
			vals[i] = stringBytes(e, nil)
		}
	}
	a, b := vals[0], vals[1]
	var getLen, getIdx, withMatchLen bool
	minMatch := int64(0)
	for j := 3; j < len(x.args); j++ {
		switch opt := x.args[j]; {
		case isKeyword(opt, "idx"):
			getIdx = true
		case isKeyword(opt, "len"):
			getLen = true
		case isKeyword(opt, "withmatchlen"):
			withMatchLen = true
		case isKeyword(opt, "minmatchlen") && j+1 < len(x.args):
			n, ok := resp.ParseInt(x.args[j+1])
			if !ok {
				x.w.Error(errNotInt)
				return
			}
			minMatch = max(n, 0)
			j++
		default:
			x.w.Error(errSyntax)
			return
		}
	}
	if getLen && getIdx {
		x.w.Error("ERR If you want both the length and indexes, please just use IDX.")
		return
	}
	alen, blen := len(a), len(b)
	cells := int64(alen+1) * int64(blen+1)
	if cells*4 > maxStringLen(x) {
		x.w.Error("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
		return
	}
	w := blen + 1
	lcs := make([]uint32, cells)
	for i := 1; i <= alen; i++ {
		for j := 1; j <= blen; j++ {
			if a[i-1] == b[j-1] {
				lcs[i*w+j] = lcs[(i-1)*w+j-1] + 1
			} else {
				lcs[i*w+j] = max(lcs[(i-1)*w+j], lcs[i*w+j-1])
			}
		}
	}
	total := lcs[alen*w+blen]
	if getLen {
		x.w.Int(int64(total))
		return
	}
	result := make([]byte, total)
	type match struct{ aStart, aEnd, bStart, bEnd int }
	var matches []match
	// Walk back from the end; a range grows while matches stay contiguous,
	// and is emitted (when long enough) where it stops.
	idx := int(total)
	aStart, aEnd, bStart, bEnd := alen, 0, 0, 0 // aStart == alen: no range yet
	for i, j := alen, blen; i > 0 && j > 0; {
		emit := false
		if a[i-1] == b[j-1] {
			result[idx-1] = a[i-1]
			switch {
			case aStart == alen:
				aStart, aEnd, bStart, bEnd = i-1, i-1, j-1, j-1
			case aStart == i && bStart == j:
				aStart--
				bStart--
			default: // not reached: a step that is no match closes the range
				emit = true
			}
			if aStart == 0 || bStart == 0 {
				emit = true
			}
			idx--
			i--
			j--
		} else {
			if lcs[(i-1)*w+j] > lcs[i*w+j-1] {
				i--
			} else {
				j--
			}
			if aStart != alen {
				emit = true
			}
		}
		if emit {
			if n := aEnd - aStart + 1; getIdx && (minMatch == 0 || int64(n) >= minMatch) {
				matches = append(matches, match{aStart, aEnd, bStart, bEnd})
			}
			aStart = alen
		}
	}
	if !getIdx {
		x.w.Bulk(result)
		return
	}
	x.w.Map(2)
	x.w.BulkString("matches")
	fields := 2
	if withMatchLen {
		fields = 3
	}
	x.w.Array(len(matches))
	for _, m := range matches {
		x.w.Array(fields)
		x.w.Array(2)
		x.w.Int(int64(m.aStart))
		x.w.Int(int64(m.aEnd))
		x.w.Array(2)
		x.w.Int(int64(m.bStart))
		x.w.Int(int64(m.bEnd))
		if withMatchLen {
			x.w.Int(int64(m.aEnd - m.aStart + 1))
		}
	}
	x.w.BulkString("len")
	x.w.Int(int64(total))
}
