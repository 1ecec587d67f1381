package coll

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/turnstile/turnstile/resp"
)

// Stream is a minimal Redis stream: entries (an ID and field/value pairs)
// in ID order, the last ID ever added, the count of entries ever added
// and the largest ID deleted. Consumer groups are not kept. An empty
// stream is still a stream (Redis keeps the key).
//
// Each entry's pairs are one packed slice. Trimming from the head
// re-slices; the array is compacted once mostly unused.
type Stream struct {
	ents   []StreamEntry
	last   StreamID
	added  uint64
	maxDel StreamID
	mem    int
}

// StreamID is an entry ID, ms-seq.
type StreamID struct{ Ms, Seq uint64 }

// MaxStreamID is the largest ID.
var MaxStreamID = StreamID{math.MaxUint64, math.MaxUint64}

// Less reports whether a sorts before b.
func (a StreamID) Less(b StreamID) bool {
	return a.Ms < b.Ms || a.Ms == b.Ms && a.Seq < b.Seq
}

// AppendText appends "ms-seq".
func (a StreamID) AppendText(dst []byte) []byte {
	dst = strconv.AppendUint(dst, a.Ms, 10)
	dst = append(dst, '-')
	return strconv.AppendUint(dst, a.Seq, 10)
}

func (a StreamID) String() string { return string(a.AppendText(nil)) }

// Next returns the ID after a, and false for the largest.
func (a StreamID) Next() (StreamID, bool) {
	switch {
	case a.Seq < math.MaxUint64:
		return StreamID{a.Ms, a.Seq + 1}, true
	case a.Ms < math.MaxUint64:
		return StreamID{a.Ms + 1, 0}, true
	}
	return a, false
}

// Prev returns the ID before a, and false for 0-0.
func (a StreamID) Prev() (StreamID, bool) {
	switch {
	case a.Seq > 0:
		return StreamID{a.Ms, a.Seq - 1}, true
	case a.Ms > 0:
		return StreamID{a.Ms - 1, math.MaxUint64}, true
	}
	return a, false
}

// ParseStreamU64 reads one part of an ID as Redis does (string2ull): a
// canonical decimal, or what C's strtoull takes whole (leading spaces, a
// sign, leading zeros; '-' negates modulo 2^64), but not a canonical
// negative number.
func ParseStreamU64(b []byte) (uint64, bool) {
	if v, ok := resp.ParseInt(b); ok {
		if v < 0 {
			return 0, false
		}
		return uint64(v), true
	}
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] >= '\t' && b[i] <= '\r') {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	if i == len(b) {
		return 0, false
	}
	var v uint64
	for ; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > (math.MaxUint64-uint64(c-'0'))/10 {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// ParseStreamID reads "ms" or "ms-seq" (seq defaults to missingSeq); with
// autoSeq, "ms-*" is read too, and seqAuto reports it. ok is false for
// anything else (Redis's "Invalid stream ID").
func ParseStreamID(b []byte, missingSeq uint64, autoSeq bool) (id StreamID, seqAuto, ok bool) {
	if len(b) > 127 {
		return id, false, false
	}
	dash := bytes.IndexByte(b, '-') // the first, even at 0 (then ms is "")
	if dash < 0 {
		ms, ok := ParseStreamU64(b)
		return StreamID{ms, missingSeq}, false, ok
	}
	ms, ok := ParseStreamU64(b[:dash])
	if !ok {
		return id, false, false
	}
	rest := b[dash+1:]
	if autoSeq && len(rest) == 1 && rest[0] == '*' {
		return StreamID{ms, 0}, true, true
	}
	seq, ok := ParseStreamU64(rest)
	return StreamID{ms, seq}, false, ok
}

// StreamEntry is one entry: its ID and its field/value pairs.
type StreamEntry struct {
	ID     StreamID
	pairs  int
	packed []byte // field, value, field, value, ...
}

// Pairs returns the number of field/value pairs.
func (e *StreamEntry) Pairs() int { return e.pairs }

// Each calls fn with each field and value in order (2*Pairs calls). The
// slices are read-only.
func (e *StreamEntry) Each(fn func(b []byte)) {
	for off := 0; ; {
		b, next, ok := packedNext(e.packed, off)
		if !ok {
			return
		}
		fn(b)
		off = next
	}
}

const (
	streamBaseMem  = 96
	streamEntryMem = 48 // a StreamEntry in the slice
)

// NewStream returns an empty stream.
func NewStream() *Stream { return &Stream{mem: streamBaseMem} }

// Len returns the number of entries.
func (s *Stream) Len() int { return len(s.ents) }

// Encoding returns "stream".
func (s *Stream) Encoding() string { return "stream" }

// MemoryUsage returns the approximate bytes the stream holds.
func (s *Stream) MemoryUsage() int { return s.mem + cap(s.ents)*streamEntryMem }

// LastID returns the largest ID ever added (0-0 for none).
func (s *Stream) LastID() StreamID { return s.last }

// EntriesAdded returns the number of entries ever added.
func (s *Stream) EntriesAdded() uint64 { return s.added }

// MaxDeletedID returns the largest ID deleted by XDEL (0-0 for none).
func (s *Stream) MaxDeletedID() StreamID { return s.maxDel }

// CloneObject returns a deep copy.
func (s *Stream) CloneObject() any {
	c := *s
	c.ents = make([]StreamEntry, len(s.ents))
	for i, e := range s.ents {
		e.packed = append([]byte(nil), e.packed...)
		c.ents[i] = e
	}
	return &c
}

// search returns the index of the first entry with an ID >= id.
func (s *Stream) search(id StreamID) int {
	return sort.Search(len(s.ents), func(i int) bool { return !s.ents[i].ID.Less(id) })
}

// Range calls fn for the entries with lo <= ID <= hi in order (reverse:
// from hi down), until fn returns false.
func (s *Stream) Range(lo, hi StreamID, reverse bool, fn func(e *StreamEntry) bool) {
	if hi.Less(lo) {
		return
	}
	i := s.search(lo)
	j := s.search(hi)
	if j < len(s.ents) && s.ents[j].ID == hi {
		j++
	}
	if !reverse {
		for k := i; k < j; k++ {
			if !fn(&s.ents[k]) {
				return
			}
		}
		return
	}
	for k := j - 1; k >= i; k-- {
		if !fn(&s.ents[k]) {
			return
		}
	}
}

func (s *Stream) add(id StreamID, pairs [][]byte) {
	e := StreamEntry{ID: id, pairs: len(pairs) / 2}
	size := 0
	for _, b := range pairs {
		size += packedSize(b)
	}
	e.packed = make([]byte, 0, size)
	for _, b := range pairs {
		e.packed = packedAppend(e.packed, b)
	}
	s.ents = append(s.ents, e)
	s.mem += size
	s.last = id
	s.added++
}

// removeFront drops the first n entries.
func (s *Stream) removeFront(n int) {
	for i := range n {
		s.mem -= cap(s.ents[i].packed)
		s.ents[i] = StreamEntry{}
	}
	s.ents = s.ents[n:]
	if len(s.ents) < cap(s.ents)/4 {
		s.ents = append(make([]StreamEntry, 0, len(s.ents)+len(s.ents)/2), s.ents...)
	}
}

func (s *Stream) apply(op Op, args [][]byte) (int64, bool, error) {
	switch op {
	case OpXAdd:
		if len(args) < 3 || len(args)%2 != 1 {
			return 0, false, badArgs(op, args)
		}
		id, _, ok := ParseStreamID(args[0], 0, false)
		if !ok || !s.last.Less(id) {
			return 0, false, fmt.Errorf("%w: xadd id %q not above the last id %s", ErrBadOp, args[0], s.last)
		}
		s.add(id, args[1:])
		return 1, true, nil
	case OpXDel:
		if len(args) == 0 {
			return 0, false, badArgs(op, args)
		}
		ids := make([]StreamID, len(args))
		for i, a := range args {
			var ok bool
			if ids[i], _, ok = ParseStreamID(a, 0, false); !ok {
				return 0, false, fmt.Errorf("%w: xdel id %q", ErrBadOp, a)
			}
		}
		var n int64
		for _, id := range ids {
			i := s.search(id)
			if i == len(s.ents) || s.ents[i].ID != id {
				continue
			}
			if i == 0 {
				s.removeFront(1)
			} else {
				s.mem -= cap(s.ents[i].packed)
				copy(s.ents[i:], s.ents[i+1:])
				s.ents[len(s.ents)-1] = StreamEntry{}
				s.ents = s.ents[:len(s.ents)-1]
			}
			if s.maxDel.Less(id) {
				s.maxDel = id
			}
			n++
		}
		return n, n > 0, nil
	case OpXTrim:
		if len(args) != 2 {
			return 0, false, badArgs(op, args)
		}
		var cut int
		switch string(args[0]) {
		case "MAXLEN":
			n, ok := parseCount(args[1])
			if !ok {
				return 0, false, badArgs(op, args)
			}
			cut = max(len(s.ents)-int(min(n, int64(len(s.ents)))), 0)
		case "MINID":
			id, _, ok := ParseStreamID(args[1], 0, false)
			if !ok {
				return 0, false, badArgs(op, args)
			}
			cut = s.search(id)
		default:
			return 0, false, badArgs(op, args)
		}
		s.removeFront(cut)
		return int64(cut), cut > 0, nil
	case OpXSetID:
		if len(args) != 1 && len(args) != 3 {
			return 0, false, badArgs(op, args)
		}
		last, _, ok := ParseStreamID(args[0], 0, false)
		if !ok || len(s.ents) > 0 && last.Less(s.ents[len(s.ents)-1].ID) {
			return 0, false, fmt.Errorf("%w: xsetid %q below the top entry", ErrBadOp, args[0])
		}
		if len(args) == 3 {
			added, ok1 := strconv.ParseUint(string(args[1]), 10, 64)
			maxDel, _, ok2 := ParseStreamID(args[2], 0, false)
			if ok1 != nil || !ok2 || added < uint64(len(s.ents)) || last.Less(maxDel) {
				return 0, false, badArgs(op, args)
			}
			s.added, s.maxDel = added, maxDel
		}
		s.last = last
		return 0, true, nil
	}
	return 0, false, fmt.Errorf("%w: %s on a stream", ErrBadOp, op)
}

// AppendBinary appends the persistent form: the last ID, entries added and
// the largest deleted ID as uvarints, the entry count, then each entry:
// its ID, its pair count, and the fields and values length-prefixed.
func (s *Stream) AppendBinary(dst []byte) []byte {
	dst = appendUvarint(appendUvarint(dst, s.last.Ms), s.last.Seq)
	dst = appendUvarint(dst, s.added)
	dst = appendUvarint(appendUvarint(dst, s.maxDel.Ms), s.maxDel.Seq)
	dst = appendUvarint(dst, uint64(len(s.ents)))
	for i := range s.ents {
		e := &s.ents[i]
		dst = appendUvarint(appendUvarint(dst, e.ID.Ms), e.ID.Seq)
		dst = appendUvarint(dst, uint64(e.pairs))
		dst = append(dst, e.packed...)
	}
	return dst
}

func decodeStream(b []byte) (*Stream, error) {
	r := reader{b: b}
	s := NewStream()
	last := StreamID{r.uvarint(), r.uvarint()}
	added := r.uvarint()
	maxDel := StreamID{r.uvarint(), r.uvarint()}
	n := r.count(5)
	var prev StreamID
	for i := 0; i < n && r.err == nil; i++ {
		id := StreamID{r.uvarint(), r.uvarint()}
		pairs := r.count(4)
		if r.err != nil {
			break
		}
		if pairs == 0 || (i > 0 || id == StreamID{}) && !prev.Less(id) {
			return nil, fmt.Errorf("%w: stream entry %s out of order or empty", ErrBadOp, id)
		}
		args := make([][]byte, 2*pairs)
		for j := range args {
			args[j] = r.bytes()
		}
		if r.err == nil {
			s.add(id, args)
		}
		prev = id
	}
	if err := r.done(); err != nil {
		return nil, err
	}
	if last.Less(s.last) || added < uint64(len(s.ents)) || last.Less(maxDel) {
		return nil, fmt.Errorf("%w: stream metadata %s %d %s does not fit its entries", ErrBadOp, last, added, maxDel)
	}
	s.last, s.added, s.maxDel = last, added, maxDel
	return s, nil
}
