package coll

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/turnstile/turnstile/resp"
)

// Stream is a Redis stream: entries (an ID and field/value pairs) in ID
// order, the last ID ever added, the count of entries ever added, the
// largest ID deleted, and consumer groups (stream_group.go). An empty
// stream is still a stream (Redis keeps the key).
//
// Each entry's pairs are one packed slice; entries are kept in chunks of
// up to streamChunk, so that a long stream grows without copying it all
// and trimming from the head drops whole chunks.
type Stream struct {
	chunks [][]StreamEntry // none empty
	n      int
	last   StreamID
	added  uint64
	maxDel StreamID
	mem    int
	groups map[string]*StreamGroup // nil until a group is created
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
	streamEntryMem = 48 // a StreamEntry in its chunk
	streamChunk    = 128
)

// NewStream returns an empty stream.
func NewStream() *Stream { return &Stream{mem: streamBaseMem} }

// Len returns the number of entries.
func (s *Stream) Len() int { return s.n }

// Encoding returns "stream".
func (s *Stream) Encoding() string { return "stream" }

// MemoryUsage returns the approximate bytes the stream holds.
func (s *Stream) MemoryUsage() int { return s.mem }

// LastID returns the largest ID ever added (0-0 for none).
func (s *Stream) LastID() StreamID { return s.last }

// EntriesAdded returns the number of entries ever added.
func (s *Stream) EntriesAdded() uint64 { return s.added }

// MaxDeletedID returns the largest ID deleted by XDEL (0-0 for none).
func (s *Stream) MaxDeletedID() StreamID { return s.maxDel }

// CloneObject returns a deep copy.
func (s *Stream) CloneObject() any {
	c := *s
	c.chunks = make([][]StreamEntry, len(s.chunks))
	for ci, ch := range s.chunks {
		cc := make([]StreamEntry, len(ch), cap(ch))
		for i, e := range ch {
			e.packed = append([]byte(nil), e.packed...)
			cc[i] = e
		}
		c.chunks[ci] = cc
	}
	c.groups = s.cloneGroups()
	return &c
}

// search returns the position (chunk, index) of the first entry with an
// ID >= id, or (len(chunks), 0).
func (s *Stream) search(id StreamID) (int, int) {
	ci := sort.Search(len(s.chunks), func(ci int) bool {
		ch := s.chunks[ci]
		return !ch[len(ch)-1].ID.Less(id)
	})
	if ci == len(s.chunks) {
		return ci, 0
	}
	ch := s.chunks[ci]
	return ci, sort.Search(len(ch), func(i int) bool { return !ch[i].ID.Less(id) })
}

// TopID returns the ID of the last entry, and false when the stream is
// empty (its last ID may be larger: the entries after it were deleted).
func (s *Stream) TopID() (StreamID, bool) {
	if e := s.top(); e != nil {
		return e.ID, true
	}
	return StreamID{}, false
}

// top returns the last entry, or nil.
func (s *Stream) top() *StreamEntry {
	if len(s.chunks) == 0 {
		return nil
	}
	ch := s.chunks[len(s.chunks)-1]
	return &ch[len(ch)-1]
}

// Range calls fn for the entries with lo <= ID <= hi in order (reverse:
// from hi down), until fn returns false.
func (s *Stream) Range(lo, hi StreamID, reverse bool, fn func(e *StreamEntry) bool) {
	if hi.Less(lo) {
		return
	}
	if !reverse {
		for ci, i := s.search(lo); ci < len(s.chunks); ci, i = ci+1, 0 {
			for ch := s.chunks[ci]; i < len(ch); i++ {
				if hi.Less(ch[i].ID) || !fn(&ch[i]) {
					return
				}
			}
		}
		return
	}
	ci, i := len(s.chunks), 0
	if next, ok := hi.Next(); ok {
		ci, i = s.search(next)
	}
	// Step back to the last entry <= hi.
	for {
		if i == 0 {
			if ci == 0 {
				return
			}
			ci--
			i = len(s.chunks[ci])
		}
		i--
		e := &s.chunks[ci][i]
		if e.ID.Less(lo) || !fn(e) {
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
	if n := len(s.chunks); n == 0 || len(s.chunks[n-1]) >= streamChunk {
		c := 1 // the first chunk grows from one entry: most streams are small
		if n > 0 {
			c = streamChunk
		}
		s.chunks = append(s.chunks, make([]StreamEntry, 0, c))
	}
	n := len(s.chunks) - 1
	s.chunks[n] = append(s.chunks[n], e)
	s.n++
	s.mem += size + streamEntryMem
	s.last = id
	s.added++
}

// removeFront drops the first n entries.
func (s *Stream) removeFront(n int) {
	drop := 0
	for n > 0 {
		ch := s.chunks[drop]
		k := min(n, len(ch))
		for i := range k {
			s.mem -= cap(ch[i].packed) + streamEntryMem
			ch[i] = StreamEntry{}
		}
		s.n -= k
		n -= k
		if k == len(ch) {
			s.chunks[drop] = nil
			drop++
		} else {
			s.chunks[drop] = ch[k:]
		}
	}
	if drop > 0 {
		s.chunks = append(s.chunks[:0], s.chunks[drop:]...)
	}
}

// deleteAt removes entry i of chunk ci.
func (s *Stream) deleteAt(ci, i int) {
	ch := s.chunks[ci]
	s.mem -= cap(ch[i].packed) + streamEntryMem
	copy(ch[i:], ch[i+1:])
	ch[len(ch)-1] = StreamEntry{}
	s.chunks[ci] = ch[:len(ch)-1]
	s.n--
	if len(s.chunks[ci]) == 0 {
		copy(s.chunks[ci:], s.chunks[ci+1:])
		s.chunks[len(s.chunks)-1] = nil
		s.chunks = s.chunks[:len(s.chunks)-1]
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
		ids, ok := parseOpIDs(args)
		if !ok {
			return 0, false, badArgs(op, args)
		}
		var n int64
		for _, id := range ids {
			ci, i := s.search(id)
			if ci == len(s.chunks) || s.chunks[ci][i].ID != id {
				continue
			}
			s.deleteAt(ci, i)
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
			cut = s.n - int(min(n, int64(s.n)))
		case "MINID":
			id, _, ok := ParseStreamID(args[1], 0, false)
			if !ok {
				return 0, false, badArgs(op, args)
			}
			ci, i := s.search(id)
			for _, ch := range s.chunks[:ci] {
				cut += len(ch)
			}
			cut += i
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
		if !ok || s.n > 0 && last.Less(s.top().ID) {
			return 0, false, fmt.Errorf("%w: xsetid %q below the top entry", ErrBadOp, args[0])
		}
		if len(args) == 3 {
			added, ok1 := strconv.ParseUint(string(args[1]), 10, 64)
			maxDel, _, ok2 := ParseStreamID(args[2], 0, false)
			// (Redis lets the last ID fall below the largest deleted one.)
			if ok1 != nil || !ok2 || added < uint64(s.n) {
				return 0, false, badArgs(op, args)
			}
			s.added, s.maxDel = added, maxDel
		}
		s.last = last
		return 0, true, nil
	case OpXGroupCreate, OpXGroupSetID, OpXGroupDestroy, OpXGroupConsumer, OpXGroupDelConsumer, OpXGroupClaim, OpXGroupAck:
		return s.applyGroup(op, args)
	}
	return 0, false, fmt.Errorf("%w: %s on a stream", ErrBadOp, op)
}

// AppendBinary appends the persistent form: the last ID, entries added and
// the largest deleted ID as uvarints, the entry count, then each entry:
// its ID, its pair count, and the fields and values length-prefixed; then,
// when the stream has consumer groups, the groups (appendGroups). A
// stream without groups has the form it had before groups existed.
func (s *Stream) AppendBinary(dst []byte) []byte {
	dst = appendUvarint(appendUvarint(dst, s.last.Ms), s.last.Seq)
	dst = appendUvarint(dst, s.added)
	dst = appendUvarint(appendUvarint(dst, s.maxDel.Ms), s.maxDel.Seq)
	dst = appendUvarint(dst, uint64(s.n))
	s.Range(StreamID{}, MaxStreamID, false, func(e *StreamEntry) bool {
		dst = appendUvarint(appendUvarint(dst, e.ID.Ms), e.ID.Seq)
		dst = appendUvarint(dst, uint64(e.pairs))
		dst = append(dst, e.packed...)
		return true
	})
	if len(s.groups) > 0 {
		dst = s.appendGroups(dst)
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
		pairs := r.count(2) // a pair takes two bytes at least (empty field and value)
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
	if r.err == nil && len(r.b) > 0 {
		if err := s.decodeGroups(&r); err != nil {
			return nil, err
		}
	}
	if err := r.done(); err != nil {
		return nil, err
	}
	// (The last ID may be below the largest deleted one: XSETID allows it.)
	if last.Less(s.last) || added < uint64(s.n) {
		return nil, fmt.Errorf("%w: stream metadata %s %d %s does not fit its entries", ErrBadOp, last, added, maxDel)
	}
	s.last, s.added, s.maxDel = last, added, maxDel
	return s, nil
}
