package coll

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"sync"
)

// ZSet is a Redis sorted set: members ordered by (score, member bytes).
//
// While small (at most maxPackedEntries members, each at most
// maxPackedValue bytes: Redis's "listpack") it is one packed byte slice
// of entries in order, each
//
//	tag byte | score | member
//
// where the score is a zigzag integer of 0 to 8 bytes when integral
// within ±2^62 (as in Redis's listpack a negative zero becomes 0) or a
// float64, and the member is a zigzag integer of 0 to 8 bytes when it is
// the canonical decimal of an int64 (stored as its difference from an
// integral score, so a member equal to its score takes no byte), or a
// length byte and its bytes. The tag byte holds both forms and widths. A
// sliding-log entry whose score and member are the same millisecond
// timestamp takes 7 bytes (Redis's listpack: 20).
//
// Past the thresholds it is a skiplist with a member map ("skiplist"),
// and it never converts back, like Redis.
type ZSet struct {
	packed []byte
	n      int
	big    *zskip
}

const maxIntScore = 1 << 62

// NewZSet returns an empty sorted set.
func NewZSet() *ZSet { return &ZSet{} }

// NewZSetFor returns an empty sorted set for n members, the longest
// maxLen bytes, in the form Redis gives such a set when it builds one
// whole (ZUNIONSTORE and its kin build a skiplist, then pack it only if it
// fits): the skiplist form from the start when the members will not fit
// the packed form, so that a negative zero score keeps its sign there as
// in Redis's skiplist (the packed form, like Redis's listpack, has none).
func NewZSetFor(n, maxLen int) *ZSet {
	if n > maxPackedEntries || maxLen > maxPackedValue {
		return &ZSet{big: newZskip(n)}
	}
	return &ZSet{}
}

// Len returns the number of members.
func (z *ZSet) Len() int {
	if z.big != nil {
		return z.big.length
	}
	return z.n
}

// Encoding returns "listpack" or "skiplist".
func (z *ZSet) Encoding() string {
	if z.big != nil {
		return "skiplist"
	}
	return "listpack"
}

// MemoryUsage returns the approximate bytes the set holds.
func (z *ZSet) MemoryUsage() int {
	if z.big != nil {
		return 48 + z.big.memory()
	}
	return 48 + cap(z.packed)
}

// CloneObject returns a deep copy.
func (z *ZSet) CloneObject() any {
	c := &ZSet{n: z.n}
	if z.packed != nil {
		c.packed = append(make([]byte, 0, len(z.packed)), z.packed...)
	}
	if z.big != nil {
		c.big = z.big.clone()
	}
	return c
}

// zent is one decoded packed entry.
type zent struct {
	score   float64
	mi      int64  // member when mInt
	ms      []byte // member, or its part after the score when mPrefix (aliases the packed slice)
	mInt    bool
	mPrefix bool
}

// mbuf holds a packed member while it is formatted.
type mbuf [maxPackedValue + 20]byte

var mbufPool = sync.Pool{New: func() any { return new(mbuf) }}

// member returns the entry's member bytes, formatting an integer member
// or a score-prefixed one into buf.
func (e *zent) member(buf *mbuf) []byte {
	switch {
	case e.mInt:
		return strconv.AppendInt(buf[:0], e.mi, 10)
	case e.mPrefix:
		return append(strconv.AppendInt(buf[:0], int64(e.score), 10), e.ms...)
	}
	return e.ms
}

// Tag byte: the low nibble is the score's form, the high nibble the
// member's. A form of 0..8 is a zigzag integer in that many little-endian
// bytes (0 bytes for zero); zFloat is a float64 score in 8 bytes, zStr a
// member as one length byte (at most maxPackedValue) and its bytes,
// zPrefix the same for the part of a member after the decimal form of its
// integral score ("1764600000000-17" at score 1764600000000 stores "-17").
const (
	zFloat  = 9
	zStr    = 9
	zPrefix = 10
)

// getUint reads an n-byte little-endian integer at off.
func getUint(p []byte, off, n int) uint64 {
	if len(p)-off >= 8 {
		return binary.LittleEndian.Uint64(p[off:]) & (1<<(8*n) - 1)
	}
	var v uint64
	for i := n - 1; i >= 0; i-- {
		v = v<<8 | uint64(p[off+i])
	}
	return v
}

func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }
func zigzag(v int64) uint64   { return uint64(v<<1) ^ uint64(v>>63) }

// uintLen returns the bytes an unsigned integer takes (0 for zero).
func uintLen(u uint64) int { return (bits.Len64(u) + 7) / 8 }

func appendUint(p []byte, u uint64, n int) []byte {
	for i := 0; i < n; i++ {
		p = append(p, byte(u>>(8*i)))
	}
	return p
}

// zdecode decodes the well-formed entry at off and returns the offset
// after it.
func zdecode(p []byte, off int, e *zent) int {
	tag := p[off]
	off++
	var base int64
	if sf := int(tag & 15); sf == zFloat {
		e.score = math.Float64frombits(binary.LittleEndian.Uint64(p[off:]))
		off += 8
	} else {
		base = unzigzag(getUint(p, off, sf))
		off += sf
		e.score = float64(base)
	}
	mf := int(tag >> 4)
	if mf < zStr {
		e.mInt, e.mPrefix, e.mi, e.ms = true, false, int64(uint64(base)+uint64(unzigzag(getUint(p, off, mf)))), nil
		return off + mf
	}
	n := int(p[off])
	off++
	e.mInt, e.mPrefix, e.ms = false, mf == zPrefix, p[off:off+n:off+n]
	return off + n
}

// zcheck validates the entry at off in p and returns the offset after it.
func zcheck(p []byte, off int, e *zent) (int, bool) {
	if off >= len(p) {
		return off, false
	}
	tag := p[off]
	off++
	sf, mf := int(tag&15), int(tag>>4)
	if sf > zFloat || mf > zPrefix || mf == zPrefix && sf == zFloat {
		return off, false
	}
	var base int64
	if sf == zFloat {
		if len(p)-off < 8 {
			return off, false
		}
		e.score = math.Float64frombits(binary.LittleEndian.Uint64(p[off:]))
		off += 8
		// A float must be one the encoder writes as a float.
		if _, isInt := intScore(e.score); isInt || math.IsNaN(e.score) {
			return off, false
		}
	} else {
		if len(p)-off < sf {
			return off, false
		}
		u := getUint(p, off, sf)
		base = unzigzag(u)
		if uintLen(u) != sf || base < -maxIntScore || base > maxIntScore {
			return off, false
		}
		off += sf
		e.score = float64(base)
	}
	if mf < zStr {
		if len(p)-off < mf {
			return off, false
		}
		u := getUint(p, off, mf)
		if uintLen(u) != mf {
			return off, false
		}
		e.mInt, e.mPrefix, e.mi, e.ms = true, false, int64(uint64(base)+uint64(unzigzag(u))), nil
		return off + mf, true
	}
	if off >= len(p) {
		return off, false
	}
	n := int(p[off])
	off++
	if n > maxPackedValue || n > len(p)-off {
		return off, false
	}
	e.mInt, e.mPrefix, e.ms = false, mf == zPrefix, p[off:off+n:off+n]
	var buf mbuf
	m := e.member(&buf)
	// The member must be in the form the encoder picks for it.
	if len(m) > maxPackedValue || memberForm(m, e.score) != mf {
		return off, false
	}
	return off + n, true
}

// memberForm returns the tag form zappend picks for a member that is not
// an integer (zStr or zPrefix), or -1 for one that is.
func memberForm(m []byte, score float64) int {
	if _, ok := canonicalInt(m); ok {
		return -1
	}
	if si, ok := intScore(score); ok && hasScorePrefix(m, si) {
		return zPrefix
	}
	return zStr
}

// intScore returns f as an integer when the packed form stores it so.
func intScore(f float64) (int64, bool) {
	if f >= -maxIntScore && f <= maxIntScore && f == math.Trunc(f) {
		return int64(f), true
	}
	return 0, false
}

// canonicalInt parses b when it is exactly the decimal form of an int64.
func canonicalInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	i, neg := 0, false
	if b[0] == '-' {
		if len(b) == 1 {
			return 0, false
		}
		neg, i = true, 1
	}
	if b[i] == '0' && len(b) > i+1 || (neg && b[i] == '0') {
		return 0, false
	}
	var u uint64
	for ; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if u > (math.MaxUint64-9)/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return int64(-u), true
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}

// zappend appends the packed entry for (score, member); member is at
// most maxPackedValue bytes.
func zappend(p []byte, score float64, member []byte) []byte {
	si, sInt := intScore(score)
	mi, mInt := canonicalInt(member)
	at := len(p)
	p = append(p, 0)
	var tag byte
	if sInt {
		u := zigzag(si)
		n := uintLen(u)
		tag = byte(n)
		p = appendUint(p, u, n)
	} else {
		tag = zFloat
		si = 0
		p = binary.LittleEndian.AppendUint64(p, math.Float64bits(score))
	}
	switch {
	case mInt:
		u := zigzag(int64(uint64(mi) - uint64(si)))
		n := uintLen(u)
		tag |= byte(n) << 4
		p = appendUint(p, u, n)
	case sInt && hasScorePrefix(member, si):
		var buf [20]byte
		rest := member[len(strconv.AppendInt(buf[:0], si, 10)):]
		tag |= zPrefix << 4
		p = append(p, byte(len(rest)))
		p = append(p, rest...)
	default:
		tag |= zStr << 4
		p = append(p, byte(len(member)))
		p = append(p, member...)
	}
	p[at] = tag
	return p
}

// hasScorePrefix reports whether m starts with the decimal form of si
// and goes on after it.
func hasScorePrefix(m []byte, si int64) bool {
	var buf [20]byte
	d := strconv.AppendInt(buf[:0], si, 10)
	return len(m) > len(d) && string(m[:len(d)]) == string(d)
}

// zkey is a member prepared for comparisons with packed entries.
type zkey struct {
	m    []byte
	mi   int64
	mInt bool
	// The last prefix length equal tried for a score-prefixed entry, and
	// what m's first pn bytes read as: entries of one set nearly always
	// have prefixes of one length (timestamps), so m is parsed once, not
	// each entry's score formatted.
	pn  int
	pv  int64
	pok bool
}

func makeZkey(m []byte) zkey {
	mi, ok := canonicalInt(m)
	return zkey{m: m, mi: mi, mInt: ok, pn: -1}
}

func (k *zkey) equal(e *zent) bool {
	switch {
	case k.mInt || e.mInt:
		return k.mInt && e.mInt && e.mi == k.mi
	case e.mPrefix:
		// The stored rest first: it differs more often than the score.
		n := len(k.m) - len(e.ms)
		if n <= 0 || string(k.m[n:]) != string(e.ms) {
			return false
		}
		if n != k.pn {
			k.pn = n
			k.pv, k.pok = canonicalInt(k.m[:n])
		}
		return k.pok && k.pv == int64(e.score)
	}
	return string(e.ms) == string(k.m)
}

// cmp compares the entry with (score, k): -1 if the entry orders first.
func (k *zkey) cmp(e *zent, score float64) int {
	switch {
	case e.score < score:
		return -1
	case e.score > score:
		return 1
	}
	var buf mbuf
	return bytes.Compare(e.member(&buf), k.m)
}

// findPacked returns the offset of member's entry, the offset after it
// and its score.
func (z *ZSet) findPacked(k *zkey) (at, end int, score float64, ok bool) {
	var e zent
	for off := 0; off < len(z.packed); {
		next := zdecode(z.packed, off, &e)
		if k.equal(&e) {
			return off, next, e.score, true
		}
		off = next
	}
	return 0, 0, 0, false
}

// Score returns member's score.
func (z *ZSet) Score(member []byte) (float64, bool) {
	if z.big != nil {
		n, ok := z.big.dict[string(member)]
		if !ok {
			return 0, false
		}
		return n.score, true
	}
	k := makeZkey(member)
	_, _, s, ok := z.findPacked(&k)
	return s, ok
}

// Rank returns member's 0-based rank (from the highest score when rev)
// and score.
func (z *ZSet) Rank(member []byte, rev bool) (rank int, score float64, ok bool) {
	if z.big != nil {
		n, ok := z.big.dict[string(member)]
		if !ok {
			return 0, 0, false
		}
		rank = z.big.rank(n.score, n.member)
		score = n.score
	} else {
		k := makeZkey(member)
		var e zent
		i := 0
		for off := 0; ; i++ {
			if off >= len(z.packed) {
				return 0, 0, false
			}
			off = zdecode(z.packed, off, &e)
			if k.equal(&e) {
				break
			}
		}
		rank, score = i, e.score
	}
	if rev {
		rank = z.Len() - 1 - rank
	}
	return rank, score, true
}

// Each calls fn for every member and score in order until fn returns
// false. The member is read-only and valid only during the call.
func (z *ZSet) Each(fn func(member []byte, score float64) bool) {
	z.Walk(0, z.Len(), false, fn)
}

// Walk calls fn for count members from 0-based rank start (counted from
// the highest score when rev), in that direction, until fn returns false.
// The member is read-only and valid only during the call.
func (z *ZSet) Walk(start, count int, rev bool, fn func(member []byte, score float64) bool) {
	n := z.Len()
	if start < 0 || start >= n || count <= 0 {
		return
	}
	count = min(count, n-start)
	if z.big != nil {
		if rev {
			x := z.big.byRank(n - 1 - start)
			for ; x != nil && count > 0; x, count = x.back, count-1 {
				if !fn(memberBytes(x.member), x.score) {
					return
				}
			}
			return
		}
		x := z.big.byRank(start)
		for ; x != nil && count > 0; x, count = x.lv[0].next, count-1 {
			if !fn(memberBytes(x.member), x.score) {
				return
			}
		}
		return
	}
	var e zent
	// fn may keep the member slice as far as escape analysis knows, so
	// the formatting buffer comes from a pool rather than the stack.
	buf := mbufPool.Get().(*mbuf)
	defer mbufPool.Put(buf)
	if rev {
		// Offsets of the entries, walked backwards.
		var offs [maxPackedEntries + 1]int32
		i := 0
		for off := 0; off < len(z.packed); i++ {
			offs[i] = int32(off)
			off = zdecode(z.packed, off, &e)
		}
		for j := n - 1 - start; j >= 0 && count > 0; j, count = j-1, count-1 {
			zdecode(z.packed, int(offs[j]), &e)
			if !fn(e.member(buf), e.score) {
				return
			}
		}
		return
	}
	off := 0
	for i := 0; i < start; i++ {
		off = zdecode(z.packed, off, &e)
	}
	for ; count > 0; count-- {
		off = zdecode(z.packed, off, &e)
		if !fn(e.member(buf), e.score) {
			return
		}
	}
}

// ScoreRanks returns the ranks [lo, hi) of the members in r.
func (z *ZSet) ScoreRanks(r ScoreRange) (lo, hi int) {
	if r.Empty() || z.Len() == 0 {
		return 0, 0
	}
	if z.big != nil {
		lo = z.big.countBefore(func(n *znode) bool { return r.gteMin(n.score) })
		hi = z.big.countBefore(func(n *znode) bool { return !r.lteMax(n.score) })
		return lo, max(lo, hi)
	}
	var e zent
	i, off := 0, 0
	for ; off < len(z.packed); i++ {
		next := zdecode(z.packed, off, &e)
		if r.gteMin(e.score) {
			break
		}
		off = next
	}
	lo = i
	for ; off < len(z.packed); i++ {
		off = zdecode(z.packed, off, &e)
		if !r.lteMax(e.score) {
			break
		}
	}
	return lo, i
}

// LexRanks returns the ranks [lo, hi) of the members in r: as Redis, the
// first member at or above the minimum and the run after it up to the
// maximum (meaningful when all scores are equal).
func (z *ZSet) LexRanks(r LexRange) (lo, hi int) {
	n := z.Len()
	if r.Empty() || n == 0 {
		return 0, 0
	}
	if z.big != nil {
		if !r.gteMin(memberBytes(z.big.tail.member)) || !r.lteMax(memberBytes(z.big.head.lv[0].next.member)) {
			return 0, 0
		}
		lo = z.big.countBefore(func(x *znode) bool { return r.gteMin(memberBytes(x.member)) })
		hi = z.big.countBefore(func(x *znode) bool { return !r.lteMax(memberBytes(x.member)) })
		return lo, max(lo, hi)
	}
	var e zent
	var buf mbuf
	first := true
	i, off := 0, 0
	for ; off < len(z.packed); i++ {
		next := zdecode(z.packed, off, &e)
		if first {
			if !r.lteMax(e.member(&buf)) {
				return 0, 0
			}
			first = false
		}
		if r.gteMin(e.member(&buf)) {
			break
		}
		off = next
	}
	if i == n {
		return 0, 0
	}
	lo = i
	for ; off < len(z.packed); i++ {
		off = zdecode(z.packed, off, &e)
		if !r.lteMax(e.member(&buf)) {
			break
		}
	}
	hi = i
	// As Redis, nothing is in range unless the last member is at or
	// above the minimum (it differs from the scan with mixed scores).
	for ; off < len(z.packed); off = zdecode(z.packed, off, &e) {
	}
	if !r.gteMin(e.member(&buf)) {
		return 0, 0
	}
	return lo, hi
}

// add sets member's score and reports whether it is new and whether
// anything changed.
func (z *ZSet) add(score float64, member []byte) (added, changed bool) {
	if z.big == nil && len(member) > maxPackedValue {
		z.toBig()
	}
	if z.big != nil {
		return z.big.add(score, member)
	}
	if score == 0 {
		score = 0 // the packed form has no negative zero, as Redis's listpack
	}
	k := makeZkey(member)
	// One pass: the member's entry if present, and where (score, member)
	// goes.
	var e zent
	at, end, ins := -1, 0, len(z.packed)
	var old float64
	for off := 0; off < len(z.packed); {
		next := zdecode(z.packed, off, &e)
		if at < 0 && k.equal(&e) {
			at, end, old = off, next, e.score
		} else if ins == len(z.packed) && e.score >= score && (e.score > score || k.cmp(&e, score) > 0) {
			ins = off
		}
		if at >= 0 && ins < len(z.packed) {
			break
		}
		off = next
	}
	if at >= 0 {
		if old == score {
			return false, false
		}
		z.packed = packedReplace(z.packed, at, end, nil)
		if ins > at {
			ins -= end - at
		}
		z.insertPacked(ins, score, member)
		return false, true
	}
	if z.n >= maxPackedEntries {
		z.toBig()
		return z.big.add(score, member)
	}
	z.insertPacked(ins, score, member)
	z.n++
	return true, true
}

func (z *ZSet) insertPacked(at int, score float64, member []byte) {
	var buf [1 + 8 + 1 + maxPackedValue]byte
	z.packed = packedReplace(z.packed, at, at, zappend(buf[:0], score, member))
}

// del removes member and reports whether it was there.
func (z *ZSet) del(member []byte) bool {
	if z.big != nil {
		return z.big.del(member)
	}
	k := makeZkey(member)
	at, end, _, ok := z.findPacked(&k)
	if !ok {
		return false
	}
	z.packed = packedReplace(z.packed, at, end, nil)
	z.n--
	return true
}

// removeRanks deletes ranks [start, stop] (0-based, inclusive, within
// the set) and returns how many it removed.
func (z *ZSet) removeRanks(start, stop int) int {
	if start > stop {
		return 0
	}
	if z.big != nil {
		return z.big.removeRanks(start, stop)
	}
	var e zent
	off := 0
	for i := 0; i < start; i++ {
		off = zdecode(z.packed, off, &e)
	}
	end := off
	for i := start; i <= stop; i++ {
		end = zdecode(z.packed, end, &e)
	}
	z.packed = packedReplace(z.packed, off, end, nil)
	z.n -= stop - start + 1
	return stop - start + 1
}

func (z *ZSet) toBig() {
	b := newZskip(z.n)
	z.Each(func(m []byte, s float64) bool {
		b.add(s, m)
		return true
	})
	z.big, z.packed, z.n = b, nil, 0
}

func (z *ZSet) apply(op Op, args [][]byte) (int64, bool, error) {
	switch op {
	case OpZAdd:
		if len(args) == 0 || len(args)%2 != 0 {
			return 0, false, badArgs(op, args)
		}
		// Check every score first: on error nothing changes.
		for i := 0; i < len(args); i += 2 {
			if _, ok := ParseScore(args[i]); !ok {
				return 0, false, fmt.Errorf("%w: zadd score %q", ErrBadOp, args[i])
			}
		}
		var added int64
		changed := false
		for i := 0; i < len(args); i += 2 {
			s, _ := ParseScore(args[i])
			a, c := z.add(s, args[i+1])
			if a {
				added++
			}
			changed = changed || c
		}
		return added, changed, nil
	case OpZRem:
		if len(args) == 0 {
			return 0, false, badArgs(op, args)
		}
		var removed int64
		for _, m := range args {
			if z.del(m) {
				removed++
			}
		}
		return removed, removed > 0, nil
	case OpZRemRangeByScore, OpZRemRangeByLex:
		if len(args) != 2 {
			return 0, false, badArgs(op, args)
		}
		var lo, hi int
		if op == OpZRemRangeByScore {
			r, ok := ParseScoreRange(args[0], args[1])
			if !ok {
				return 0, false, fmt.Errorf("%w: %s range %q %q", ErrBadOp, op, args[0], args[1])
			}
			lo, hi = z.ScoreRanks(r)
		} else {
			r, ok := ParseLexRange(args[0], args[1])
			if !ok {
				return 0, false, fmt.Errorf("%w: %s range %q %q", ErrBadOp, op, args[0], args[1])
			}
			lo, hi = z.LexRanks(r)
		}
		n := z.removeRanks(lo, hi-1)
		return int64(n), n > 0, nil
	case OpZRemRangeByRank:
		if len(args) != 2 {
			return 0, false, badArgs(op, args)
		}
		start, ok1 := parseCount(args[0])
		stop, ok2 := parseCount(args[1])
		if !ok1 || !ok2 || start > stop || stop >= int64(z.Len()) {
			return 0, false, fmt.Errorf("%w: %s %q %q on %d members", ErrBadOp, op, args[0], args[1], z.Len())
		}
		n := z.removeRanks(int(start), int(stop))
		return int64(n), n > 0, nil
	}
	return 0, false, fmt.Errorf("%w: %s on a sorted set", ErrBadOp, op)
}

// AppendBinary appends the persistent form: a byte for the form (0
// packed, 1 big), a uvarint member count, then for the packed form the
// packed entries as a length-prefixed string, for the big form each
// member as a length-prefixed string and its score as 8 bytes, in order.
func (z *ZSet) AppendBinary(dst []byte) []byte {
	if z.big == nil {
		dst = append(dst, 0)
		dst = appendUvarint(dst, uint64(z.n))
		return packedAppend(dst, z.packed)
	}
	dst = append(dst, 1)
	dst = appendUvarint(dst, uint64(z.big.length))
	for x := z.big.head.lv[0].next; x != nil; x = x.lv[0].next {
		dst = packedAppend(dst, memberBytes(x.member))
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(x.score))
	}
	return dst
}

func decodeZSet(b []byte) (*ZSet, error) {
	if len(b) == 0 || b[0] > 1 {
		return nil, fmt.Errorf("%w: sorted set form", ErrBadOp)
	}
	r := reader{b: b[1:]}
	z := NewZSet()
	if b[0] == 0 {
		n := r.count(1) // an entry takes at least its tag byte
		p := r.bytes()
		if err := r.done(); err != nil {
			return nil, err
		}
		if n > maxPackedEntries {
			return nil, fmt.Errorf("%w: %d members in a packed sorted set", ErrBadOp, n)
		}
		var e, prev zent
		var buf, pbuf mbuf
		count := 0
		seen := make(map[string]bool, n)
		for off := 0; off < len(p); count++ {
			next, ok := zcheck(p, off, &e)
			if !ok {
				return nil, fmt.Errorf("%w: malformed sorted set entry at byte %d", ErrBadOp, off)
			}
			m := e.member(&buf)
			if len(m) > maxPackedValue {
				return nil, fmt.Errorf("%w: long member in a packed sorted set", ErrBadOp)
			}
			if count > 0 && (prev.score > e.score || prev.score == e.score && bytes.Compare(prev.member(&pbuf), m) >= 0) {
				return nil, fmt.Errorf("%w: sorted set entries out of order", ErrBadOp)
			}
			if seen[string(m)] {
				return nil, fmt.Errorf("%w: member %q twice in a sorted set", ErrBadOp, m)
			}
			seen[string(m)] = true
			prev = e
			off = next
		}
		if count != n {
			return nil, fmt.Errorf("%w: %d sorted set entries, want %d", ErrBadOp, count, n)
		}
		if len(p) > 0 {
			z.packed = p
		}
		z.n = n
		return z, nil
	}
	n := r.count(9)
	z.big = newZskip(n)
	var prevS float64
	var prevM string
	for i := 0; i < n && r.err == nil; i++ {
		m := r.bytes()
		s := math.Float64frombits(r.u64())
		if r.err != nil {
			break
		}
		if math.IsNaN(s) {
			return nil, fmt.Errorf("%w: NaN score", ErrBadOp)
		}
		if i > 0 && !zless(prevS, prevM, s, string(m)) {
			return nil, fmt.Errorf("%w: sorted set entries out of order", ErrBadOp)
		}
		if _, dup := z.big.dict[string(m)]; dup {
			return nil, fmt.Errorf("%w: member %q twice in a sorted set", ErrBadOp, m)
		}
		prevS, prevM = s, string(m)
		z.big.dict[prevM] = z.big.insert(s, prevM)
	}
	if err := r.done(); err != nil {
		return nil, err
	}
	return z, nil
}
