package coll

import (
	"encoding/binary"
	"fmt"
)

// maxHashPackedEntries is Redis's default hash-max-listpack-entries: 512,
// where sets and sorted sets leave their listpack at 128.
const maxHashPackedEntries = 512

// Hash is a Redis hash: fields with values, in insertion order while
// packed (as Redis's listpack), in an indexed table past the thresholds
// (maxHashPackedEntries fields, or a field or value longer than
// maxPackedValue bytes). It never converts back, like Redis.
type Hash struct {
	packed []byte // field, value, field, value, ... (nil once big)
	n      int    // fields while packed
	big    *strTable
}

// NewHash returns an empty hash.
func NewHash() *Hash { return &Hash{} }

// Len returns the number of fields.
func (h *Hash) Len() int {
	if h.big != nil {
		return h.big.len()
	}
	return h.n
}

// Encoding returns "listpack" or "hashtable".
func (h *Hash) Encoding() string {
	if h.big != nil {
		return "hashtable"
	}
	return "listpack"
}

// MemoryUsage returns the approximate bytes the hash holds.
func (h *Hash) MemoryUsage() int {
	if h.big != nil {
		return 48 + h.big.memory()
	}
	return 48 + cap(h.packed)
}

// CloneObject returns a deep copy.
func (h *Hash) CloneObject() any {
	c := &Hash{n: h.n}
	if h.packed != nil {
		c.packed = append(make([]byte, 0, len(h.packed)), h.packed...)
	}
	if h.big != nil {
		c.big = h.big.clone()
	}
	return c
}

// findPacked returns the offsets of field's entry and of its value's
// entry and the offset after the value; ok is false if field is absent.
func (h *Hash) findPacked(field []byte) (at, valAt, end int, ok bool) {
	off := 0
	for {
		f, next, more := packedNext(h.packed, off)
		if !more {
			return 0, 0, 0, false
		}
		_, after, _ := packedNext(h.packed, next)
		if string(f) == string(field) {
			return off, next, after, true
		}
		off = after
	}
}

// Get returns field's value (read-only) and whether it exists.
func (h *Hash) Get(field []byte) ([]byte, bool) {
	if h.big != nil {
		return h.big.get(field)
	}
	_, valAt, _, ok := h.findPacked(field)
	if !ok {
		return nil, false
	}
	v, _, _ := packedNext(h.packed, valAt)
	return v, true
}

// Each calls fn for every field and value, in order, until fn returns
// false. The slices are read-only and valid until the next change.
func (h *Hash) Each(fn func(field, value []byte) bool) {
	if h.big != nil {
		h.big.each(fn)
		return
	}
	for off := 0; ; {
		f, next, ok := packedNext(h.packed, off)
		if !ok {
			return
		}
		v, after, _ := packedNext(h.packed, next)
		if !fn(f, v) {
			return
		}
		off = after
	}
}

// set sets field to value and reports whether the field is new.
func (h *Hash) set(field, value []byte) bool {
	if h.big == nil && (len(field) > maxPackedValue || len(value) > maxPackedValue) {
		h.toBig()
	}
	if h.big != nil {
		return h.big.set(field, value)
	}
	if _, valAt, end, ok := h.findPacked(field); ok {
		var buf [binary.MaxVarintLen64 + maxPackedValue]byte // value fits: checked above
		h.packed = packedReplace(h.packed, valAt, end, packedAppend(buf[:0], value))
		return false
	}
	if h.n >= maxHashPackedEntries {
		h.toBig()
		return h.big.set(field, value)
	}
	h.packed = packedAppend(packedAppend(h.packed, field), value)
	h.n++
	return true
}

// del removes field and reports whether it existed.
func (h *Hash) del(field []byte) bool {
	if h.big != nil {
		return h.big.del(field)
	}
	at, _, end, ok := h.findPacked(field)
	if !ok {
		return false
	}
	h.packed = packedReplace(h.packed, at, end, nil)
	h.n--
	return true
}

func (h *Hash) toBig() {
	t := newStrTable(h.n, true)
	h.Each(func(f, v []byte) bool {
		t.set(f, v)
		return true
	})
	h.big, h.packed, h.n = t, nil, 0
}

func (h *Hash) apply(op Op, args [][]byte) (int64, bool, error) {
	switch op {
	case OpHSet:
		if len(args) == 0 || len(args)%2 != 0 {
			return 0, false, badArgs(op, args)
		}
		var added int64
		for i := 0; i < len(args); i += 2 {
			if h.set(args[i], args[i+1]) {
				added++
			}
		}
		return added, true, nil
	case OpHDel:
		if len(args) == 0 {
			return 0, false, badArgs(op, args)
		}
		var removed int64
		for _, f := range args {
			if h.del(f) {
				removed++
			}
		}
		return removed, removed > 0, nil
	}
	return 0, false, fmt.Errorf("%w: %s on a hash", ErrBadOp, op)
}

// AppendBinary appends the persistent form: a uvarint field count, then
// each field and value as a uvarint length and bytes.
func (h *Hash) AppendBinary(dst []byte) []byte {
	dst = appendUvarint(dst, uint64(h.Len()))
	h.Each(func(f, v []byte) bool {
		dst = packedAppend(packedAppend(dst, f), v)
		return true
	})
	return dst
}

func decodeHash(b []byte) (*Hash, error) {
	r := reader{b: b}
	n := r.count(2)
	h := NewHash()
	for i := 0; i < n && r.err == nil; i++ {
		f, v := r.bytes(), r.bytes()
		if r.err == nil && !h.set(f, v) {
			return nil, fmt.Errorf("%w: field %q twice in a hash", ErrBadOp, f)
		}
	}
	if err := r.done(); err != nil {
		return nil, err
	}
	return h, nil
}

// At returns field i and its value (0 <= i < Len) in Each's order, for a
// pick at an index the caller chose; read-only, valid until the next
// change. A packed pick scans (at most maxHashPackedEntries fields).
func (h *Hash) At(i int) (field, value []byte) {
	if h.big != nil {
		k, v := h.big.at(i)
		return strBytes(k), v
	}
	off := 0
	for ; i > 0; i-- {
		_, next, _ := packedNext(h.packed, off)
		_, off, _ = packedNext(h.packed, next)
	}
	f, next, _ := packedNext(h.packed, off)
	v, _, _ := packedNext(h.packed, next)
	return f, v
}

// Scan visits fields for HSCAN: a packed hash whole (next cursor 0, as
// Redis does for a listpack), a big one count slots at a time with the
// cursor Set.Scan describes.
func (h *Hash) Scan(cursor uint64, count int, fn func(field, value []byte)) uint64 {
	if h.big == nil {
		h.Each(func(f, v []byte) bool { fn(f, v); return true })
		return 0
	}
	return h.big.scan(cursor, count, fn)
}
