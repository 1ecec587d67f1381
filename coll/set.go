package coll

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/turnstile/turnstile/resp"
)

// Set is a Redis set in one of Redis's three encodings:
//
//   - intset: every member is a canonical decimal int64 (the form
//     resp.ParseInt accepts) and there are at most maxIntsetEntries of
//     them; they are kept as one sorted array of little-endian integers
//     of the smallest width (2, 4 or 8 bytes) that holds all of them,
//     widened when a larger one arrives and never narrowed, like Redis.
//     Members are read in ascending numeric order.
//   - listpack: at most maxPackedEntries members of at most
//     maxPackedValue bytes, one packed slice in insertion order.
//   - hashtable: a strTable without values.
//
// An intset becomes a listpack when a non-integer member arrives and the
// result still fits (members then in the intset's order, the new one
// last), a hashtable otherwise; a listpack becomes a hashtable past its
// thresholds. No set converts back. OpSAdd also converts ahead for a
// large argument count, as Redis 7.2's SADD does with its size hint.
type Set struct {
	enc    uint8
	w      uint8  // intset integer width in bytes: 2, 4 or 8
	n      int    // members while intset or listpack
	ints   []byte // intset: n integers of width w, ascending
	packed []byte // listpack: n packed entries
	big    *strTable
}

// The encodings of a Set, also its persistent form's tag byte.
const (
	encIntset   = 0
	encListpack = 1
	encHT       = 2
)

// NewSet returns an empty set (an empty intset).
func NewSet() *Set { return &Set{w: 2} }

// Len returns the number of members.
func (s *Set) Len() int {
	if s.enc == encHT {
		return s.big.len()
	}
	return s.n
}

// Encoding returns "intset", "listpack" or "hashtable".
func (s *Set) Encoding() string {
	switch s.enc {
	case encIntset:
		return "intset"
	case encListpack:
		return "listpack"
	}
	return "hashtable"
}

// MemoryUsage returns the approximate bytes the set holds.
func (s *Set) MemoryUsage() int {
	switch s.enc {
	case encIntset:
		return 48 + cap(s.ints)
	case encListpack:
		return 48 + cap(s.packed)
	}
	return 48 + s.big.memory()
}

// CloneObject returns a deep copy.
func (s *Set) CloneObject() any {
	c := &Set{enc: s.enc, w: s.w, n: s.n}
	if s.ints != nil {
		c.ints = append(make([]byte, 0, len(s.ints)), s.ints...)
	}
	if s.packed != nil {
		c.packed = append(make([]byte, 0, len(s.packed)), s.packed...)
	}
	if s.big != nil {
		c.big = s.big.clone()
	}
	return c
}

// ---- intset ----

// intWidth returns the bytes an intset needs to hold v.
func intWidth(v int64) uint8 {
	switch {
	case v >= -1<<15 && v < 1<<15:
		return 2
	case v >= -1<<31 && v < 1<<31:
		return 4
	}
	return 8
}

func getInt(b []byte, w uint8, i int) int64 {
	switch w {
	case 2:
		return int64(int16(binary.LittleEndian.Uint16(b[2*i:])))
	case 4:
		return int64(int32(binary.LittleEndian.Uint32(b[4*i:])))
	}
	return int64(binary.LittleEndian.Uint64(b[8*i:]))
}

func putInt(b []byte, w uint8, i int, v int64) {
	switch w {
	case 2:
		binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	default:
		binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
	}
}

// intFind returns v's position in the intset, or where it would go.
func (s *Set) intFind(v int64) (int, bool) {
	lo, hi := 0, s.n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		x := getInt(s.ints, s.w, m)
		switch {
		case x == v:
			return m, true
		case x < v:
			lo = m + 1
		default:
			hi = m
		}
	}
	return lo, false
}

// intAdd adds v and reports whether it is new.
func (s *Set) intAdd(v int64) bool {
	i, found := s.intFind(v)
	if found {
		return false
	}
	if w := intWidth(v); w > s.w {
		grown := make([]byte, (s.n+1)*int(w))
		for j := 0; j < s.n; j++ {
			putInt(grown, w, j, getInt(s.ints, s.w, j))
		}
		s.ints, s.w = grown[:s.n*int(w)], w
	}
	w := int(s.w)
	s.ints = append(s.ints, make([]byte, w)...)
	copy(s.ints[(i+1)*w:], s.ints[i*w:s.n*w])
	putInt(s.ints, s.w, i, v)
	s.n++
	return true
}

// intDel removes v and reports whether it was there.
func (s *Set) intDel(v int64) bool {
	i, found := s.intFind(v)
	if !found {
		return false
	}
	w := int(s.w)
	copy(s.ints[i*w:], s.ints[(i+1)*w:])
	s.ints = s.ints[:(s.n-1)*w]
	s.n--
	return true
}

// ---- listpack ----

// packedFind returns the offsets of m's entry and after it.
func (s *Set) packedFind(m []byte) (at, end int, ok bool) {
	for off := 0; ; {
		e, next, more := packedNext(s.packed, off)
		if !more {
			return 0, 0, false
		}
		if string(e) == string(m) {
			return off, next, true
		}
		off = next
	}
}

// ---- reads ----

// IsMember reports whether m is a member.
func (s *Set) IsMember(m []byte) bool {
	switch s.enc {
	case encIntset:
		v, ok := resp.ParseInt(m)
		if !ok {
			return false
		}
		_, found := s.intFind(v)
		return found
	case encListpack:
		_, _, ok := s.packedFind(m)
		return ok
	}
	return s.big.has(m)
}

// Each calls fn for every member, in the encoding's order (intset:
// ascending; listpack: insertion; hashtable: table order), until fn
// returns false. The slice is read-only and valid only during the call.
func (s *Set) Each(fn func(member []byte) bool) {
	switch s.enc {
	case encIntset:
		var buf [20]byte
		for i := 0; i < s.n; i++ {
			if !fn(strconv.AppendInt(buf[:0], getInt(s.ints, s.w, i), 10)) {
				return
			}
		}
	case encListpack:
		for off := 0; ; {
			e, next, ok := packedNext(s.packed, off)
			if !ok || !fn(e) {
				return
			}
			off = next
		}
	default:
		s.big.each(func(k, _ []byte) bool { return fn(k) })
	}
}

// At returns member i (0 <= i < Len) in Each's order, for a pick at an
// index the caller chose. An intset member is formatted into scratch
// (from scratch[:0]); other members are read-only views valid until the
// next change. A listpack pick scans (at most maxPackedEntries entries).
func (s *Set) At(i int, scratch []byte) []byte {
	switch s.enc {
	case encIntset:
		return strconv.AppendInt(scratch[:0], getInt(s.ints, s.w, i), 10)
	case encListpack:
		off := 0
		for ; i > 0; i-- {
			_, off, _ = packedNext(s.packed, off)
		}
		e, _, _ := packedNext(s.packed, off)
		return e
	}
	k, _ := s.big.at(i)
	return strBytes(k)
}

// Scan visits members for SSCAN. An intset or listpack is visited whole
// and the next cursor is 0, as Redis does for its small encodings. A
// hashtable is visited count slots at a time from the top of its dense
// table down (cursor 0 starts at the top; the returned cursor is the
// number of slots still to visit, 0 when done). Removing a member moves
// only the last slot down into the hole, so a member present during the
// whole scan is never skipped (it may be returned twice).
func (s *Set) Scan(cursor uint64, count int, fn func(member []byte)) uint64 {
	if s.enc != encHT {
		s.Each(func(m []byte) bool { fn(m); return true })
		return 0
	}
	return s.big.scan(cursor, count, func(k, _ []byte) { fn(k) })
}

// ---- changes ----

// toListpack converts an intset to a listpack, members ascending.
func (s *Set) toListpack(extra int) {
	p := make([]byte, 0, s.n*8+extra)
	s.Each(func(m []byte) bool { p = packedAppend(p, m); return true })
	s.enc, s.packed, s.ints = encListpack, p, nil
}

// toBig converts to a hashtable sized for hint members.
func (s *Set) toBig(hint int) {
	t := newStrTable(max(hint, s.Len()), false)
	s.Each(func(m []byte) bool { t.add(m); return true })
	s.enc, s.big, s.ints, s.packed, s.n = encHT, t, nil, nil, 0
}

// add adds m and reports whether it is new.
func (s *Set) add(m []byte) bool {
	switch s.enc {
	case encIntset:
		if v, ok := resp.ParseInt(m); ok {
			if !s.intAdd(v) {
				return false
			}
			if s.n > maxIntsetEntries {
				s.toBig(s.n)
			}
			return true
		}
		if s.n < maxPackedEntries && len(m) <= maxPackedValue {
			s.toListpack(packedSize(m))
		} else {
			s.toBig(s.n + 1)
		}
		return s.add(m)
	case encListpack:
		if _, _, ok := s.packedFind(m); ok {
			return false
		}
		if s.n < maxPackedEntries && len(m) <= maxPackedValue {
			s.packed = packedAppend(s.packed, m)
			s.n++
			return true
		}
		s.toBig(s.n + 1)
	}
	return s.big.add(m)
}

// rem removes m and reports whether it was a member.
func (s *Set) rem(m []byte) bool {
	switch s.enc {
	case encIntset:
		v, ok := resp.ParseInt(m)
		return ok && s.intDel(v)
	case encListpack:
		at, end, ok := s.packedFind(m)
		if !ok {
			return false
		}
		s.packed = packedReplace(s.packed, at, end, nil)
		s.n--
		return true
	}
	return s.big.del(m)
}

// sizeHint converts ahead of an OpSAdd of hint members, as Redis 7.2's
// SADD does (setTypeCreate for a new key, setTypeMaybeConvert for an
// existing one): an empty set takes the encoding its first member and
// the hint call for; a listpack (or intset) that the hint would overflow
// becomes a hashtable at once.
func (s *Set) sizeHint(first []byte, hint int) {
	if s.Len() == 0 && s.enc != encHT {
		_, isInt := resp.ParseInt(first)
		switch {
		case isInt && hint <= maxIntsetEntries:
			s.enc = encIntset
		case hint <= maxPackedEntries:
			s.enc = encListpack
		default:
			s.toBig(hint)
		}
		return
	}
	if (s.enc == encListpack && hint > maxPackedEntries) || (s.enc == encIntset && hint > maxIntsetEntries) {
		s.toBig(s.Len() + hint)
	}
}

func (s *Set) apply(op Op, args [][]byte) (int64, bool, error) {
	switch op {
	case OpSAdd:
		if len(args) == 0 {
			return 0, false, badArgs(op, args)
		}
		enc := s.enc
		s.sizeHint(args[0], len(args))
		var added int64
		for _, m := range args {
			if s.add(m) {
				added++
			}
		}
		// A conversion alone (the size hint) changes the value too.
		return added, added > 0 || s.enc != enc, nil
	case OpSRem:
		if len(args) == 0 {
			return 0, false, badArgs(op, args)
		}
		var removed int64
		for _, m := range args {
			if s.rem(m) {
				removed++
			}
		}
		return removed, removed > 0, nil
	}
	return 0, false, fmt.Errorf("%w: %s on a set", ErrBadOp, op)
}

// ---- persistent form ----

// AppendBinary appends the persistent form: the encoding's tag byte, a
// uvarint member count, then the members in Each's order: an intset's as
// zigzag varints (binary.AppendVarint), the others as a uvarint length
// and bytes. Decoding gives back the same encoding and order.
func (s *Set) AppendBinary(dst []byte) []byte {
	dst = append(dst, s.enc)
	dst = appendUvarint(dst, uint64(s.Len()))
	if s.enc == encIntset {
		for i := 0; i < s.n; i++ {
			dst = binary.AppendVarint(dst, getInt(s.ints, s.w, i))
		}
		return dst
	}
	s.Each(func(m []byte) bool { dst = packedAppend(dst, m); return true })
	return dst
}

func decodeSet(b []byte) (*Set, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty set value", ErrBadOp)
	}
	s := &Set{enc: b[0], w: 2}
	r := reader{b: b[1:]}
	n := r.count(1)
	switch s.enc {
	case encIntset:
		if n > maxIntsetEntries {
			return nil, fmt.Errorf("%w: intset of %d members", ErrBadOp, n)
		}
		vals := make([]int64, n)
		for i := range vals {
			u := r.uvarint()
			v := int64(u >> 1)
			if u&1 != 0 {
				v = ^v
			}
			if r.err == nil && i > 0 && v <= vals[i-1] {
				return nil, fmt.Errorf("%w: intset members out of order", ErrBadOp)
			}
			vals[i] = v
			s.w = max(s.w, intWidth(v))
		}
		if r.err == nil {
			s.ints = make([]byte, n*int(s.w))
			for i, v := range vals {
				putInt(s.ints, s.w, i, v)
			}
			s.n = n
		}
	case encListpack:
		if n > maxPackedEntries {
			return nil, fmt.Errorf("%w: listpack set of %d members", ErrBadOp, n)
		}
		for i := 0; i < n && r.err == nil; i++ {
			m := r.bytes()
			if r.err != nil {
				break
			}
			if len(m) > maxPackedValue {
				return nil, fmt.Errorf("%w: listpack set member of %d bytes", ErrBadOp, len(m))
			}
			if _, _, dup := s.packedFind(m); dup {
				return nil, fmt.Errorf("%w: member %q twice in a set", ErrBadOp, m)
			}
			s.packed = packedAppend(s.packed, m)
			s.n++
		}
	case encHT:
		s.big = newStrTable(n, false)
		for i := 0; i < n && r.err == nil; i++ {
			m := r.bytes()
			if r.err == nil && !s.big.add(m) {
				return nil, fmt.Errorf("%w: member %q twice in a set", ErrBadOp, m)
			}
		}
	default:
		return nil, fmt.Errorf("%w: set encoding %d", ErrBadOp, s.enc)
	}
	if err := r.done(); err != nil {
		return nil, err
	}
	return s, nil
}
