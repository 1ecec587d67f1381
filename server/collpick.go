package server

import (
	"math/rand/v2"

	"github.com/turnstile/turnstile/coll"
)

// Random picks and member lists shared by the set and hash commands. The
// server makes every random choice (coll never reads randomness) and logs
// only what it chose.

// maxRandomCount bounds the reply of SRANDMEMBER and HRANDFIELD with a
// negative count (picks with repetition, so not bounded by the size of
// the value). Redis 7.0 tries to build any such reply and is killed for
// counts near 2^63; Turnstile replies errRandomCount instead.
const maxRandomCount = 1 << 24

const errRandomCount = "ERR value is out of range"

// pickDistinct returns k distinct indexes in [0, n), in random order
// (0 < k <= n).
func pickDistinct(n, k int) []int {
	if k*4 <= n { // sparse: draw and reject repeats
		seen := make(map[int]struct{}, k)
		out := make([]int, 0, k)
		for len(out) < k {
			i := rand.IntN(n)
			if _, dup := seen[i]; !dup {
				seen[i] = struct{}{}
				out = append(out, i)
			}
		}
		return out
	}
	idx := make([]int, n) // dense: a partial Fisher-Yates shuffle
	for i := range idx {
		idx[i] = i
	}
	for i := 0; i < k; i++ {
		j := i + rand.IntN(n-i)
		idx[i], idx[j] = idx[j], idx[i]
	}
	return idx[:k]
}

// memberList holds copies of byte strings back to back in one buffer.
type memberList struct {
	buf  []byte
	ends []int
}

func (l *memberList) add(m []byte) {
	l.buf = append(l.buf, m...)
	l.ends = append(l.ends, len(l.buf))
}

func (l *memberList) len() int { return len(l.ends) }

func (l *memberList) at(i int) []byte {
	start := 0
	if i > 0 {
		start = l.ends[i-1]
	}
	return l.buf[start:l.ends[i]:l.ends[i]]
}

// args returns the strings as op arguments (views of the buffer).
func (l *memberList) args() [][]byte {
	out := make([][]byte, l.len())
	for i := range out {
		out[i] = l.at(i)
	}
	return out
}

// setIndex reads members of a set by index for random picks. A listpack's
// At scans, so for many picks its members are gathered once as views.
type setIndex struct {
	s       *coll.Set
	views   [][]byte
	scratch [24]byte
}

func newSetIndex(s *coll.Set, picks int) *setIndex {
	ix := &setIndex{s: s}
	if picks > 1 && s.Encoding() == "listpack" {
		ix.views = make([][]byte, 0, s.Len())
		s.Each(func(m []byte) bool { ix.views = append(ix.views, m); return true })
	}
	return ix
}

// at returns member i, valid until the next at or change.
func (ix *setIndex) at(i int) []byte {
	if ix.views != nil {
		return ix.views[i]
	}
	return ix.s.At(i, ix.scratch[:0])
}

// hashIndex is setIndex for a hash's fields and values.
type hashIndex struct {
	h     *coll.Hash
	views [][2][]byte
}

func newHashIndex(h *coll.Hash, picks int) *hashIndex {
	ix := &hashIndex{h: h}
	if picks > 1 && h.Encoding() == "listpack" {
		ix.views = make([][2][]byte, 0, h.Len())
		h.Each(func(f, v []byte) bool { ix.views = append(ix.views, [2][]byte{f, v}); return true })
	}
	return ix
}

func (ix *hashIndex) at(i int) (field, value []byte) {
	if ix.views != nil {
		return ix.views[i][0], ix.views[i][1]
	}
	return ix.h.At(i)
}

// parseRandomCount parses the count of SRANDMEMBER and HRANDFIELD: an
// integer in [-(2^63-1), 2^63-1], as Redis's getRangeLongFromObjectOrReply.
func parseRandomCount(x *Ctx, b []byte) (int64, bool) {
	n, ok := parseInt(x, b)
	if !ok {
		return 0, false
	}
	if n == -1<<63 {
		x.w.Error("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
		return 0, false
	}
	return n, true
}

// scanOptions parses the MATCH and COUNT options of SSCAN and HSCAN from
// args[3:], replying the error when they are malformed. pat is nil when
// everything matches.
func scanOptions(x *Ctx) (pat []byte, count int, ok bool) {
	count = scanDefaultCount
	for i := 3; i < len(x.args); i += 2 {
		if i+1 >= len(x.args) {
			x.w.Error(errSyntax)
			return nil, 0, false
		}
		a, v := x.args[i], x.args[i+1]
		switch {
		case isKeyword(a, "count"):
			n, ok := parseInt(x, v)
			if !ok {
				return nil, 0, false
			}
			if n < 1 {
				x.w.Error(errSyntax)
				return nil, 0, false
			}
			count = int(min(n, 1<<30))
		case isKeyword(a, "match"):
			pat = v
			if matchesAll(pat) {
				pat = nil
			}
		default:
			x.w.Error(errSyntax)
			return nil, 0, false
		}
	}
	return pat, count, true
}

// replyEmptyScan is the reply of SSCAN/HSCAN/ZSCAN for a missing key.
func replyEmptyScan(x *Ctx) {
	x.w.Array(2)
	x.w.BulkString("0")
	x.w.Array(0)
}
