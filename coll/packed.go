package coll

import (
	"encoding/binary"
	"fmt"
)

// A packed slice is the small form of hashes, sets and lists: entries back
// to back, each a uvarint length and that many bytes, in order. It costs
// 1 or 2 bytes per entry beyond the entry itself, and one allocation for
// the whole collection. Entries are found by a linear scan, which is
// faster than hashing while a collection is small (see the thresholds).

// Thresholds past which a collection leaves its packed form, as Redis's
// defaults for hash-max-listpack-entries / -value, set-max-listpack-*,
// zset-max-listpack-* (list-max-listpack-size -2 is 8 KiB per node).
const (
	maxPackedEntries = 128
	maxPackedValue   = 64
	maxIntsetEntries = 512 // set-max-intset-entries
)

// packedNext returns the entry at off in p and the offset after it; ok is
// false at the end of p or on a malformed entry.
func packedNext(p []byte, off int) (entry []byte, next int, ok bool) {
	if off >= len(p) {
		return nil, off, false
	}
	n, w := binary.Uvarint(p[off:])
	if w <= 0 || n > uint64(len(p)-off-w) {
		return nil, off, false
	}
	start := off + w
	end := start + int(n)
	return p[start:end:end], end, true
}

// packedAppend appends one entry to p.
func packedAppend(p, entry []byte) []byte {
	p = binary.AppendUvarint(p, uint64(len(entry)))
	return append(p, entry...)
}

// packedSize returns the bytes packedAppend adds for entry.
func packedSize(entry []byte) int {
	var buf [binary.MaxVarintLen64]byte
	return binary.PutUvarint(buf[:], uint64(len(entry))) + len(entry)
}

// packedReplace returns p with bytes [from, to) replaced by repl; it may
// reuse p's array.
func packedReplace(p []byte, from, to int, repl []byte) []byte {
	d := len(repl) - (to - from)
	switch {
	case d == 0:
		copy(p[from:], repl)
		return p
	case d < 0:
		copy(p[from:], repl)
		n := copy(p[from+len(repl):], p[to:])
		return p[:from+len(repl)+n]
	}
	if cap(p)-len(p) < d {
		grown := make([]byte, len(p), len(p)+d+len(p)/4)
		copy(grown, p)
		p = grown
	}
	p = p[:len(p)+d]
	copy(p[to+d:], p[to:len(p)-d])
	copy(p[from:], repl)
	return p
}

// packedCheck verifies that p holds exactly n well-formed entries.
func packedCheck(p []byte, n int) error {
	off, count := 0, 0
	for off < len(p) {
		_, next, ok := packedNext(p, off)
		if !ok {
			return fmt.Errorf("%w: malformed packed entry at byte %d", ErrBadOp, off)
		}
		off = next
		count++
	}
	if count != n {
		return fmt.Errorf("%w: %d packed entries, want %d", ErrBadOp, count, n)
	}
	return nil
}

// reader decodes a persistent form: uvarint counts and length-prefixed
// byte strings.
type reader struct {
	b       []byte
	err     error
	scratch [binary.MaxVarintLen64]byte
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	n, w := binary.Uvarint(r.b)
	if w <= 0 || w != len(binary.AppendUvarint(r.scratch[:0], n)) {
		r.err = fmt.Errorf("%w: truncated value or non-minimal varint", ErrBadOp)
		return 0
	}
	r.b = r.b[w:]
	return n
}

// count reads an entry count, refusing one that could not fit in the
// rest of the input (each entry takes at least min bytes).
func (r *reader) count(min int) int {
	n := r.uvarint()
	if r.err == nil && n > uint64(len(r.b)/max(min, 1)) {
		r.err = fmt.Errorf("%w: count %d larger than the value", ErrBadOp, n)
		return 0
	}
	return int(n)
}

// bytes reads a length-prefixed byte string (a copy).
func (r *reader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = fmt.Errorf("%w: truncated value", ErrBadOp)
		return nil
	}
	out := append([]byte(nil), r.b[:n]...)
	r.b = r.b[n:]
	return out
}

func (r *reader) u64() uint64 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 8 {
		r.err = fmt.Errorf("%w: truncated value", ErrBadOp)
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

// done returns the first error, or one for bytes left over.
func (r *reader) done() error {
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%w: %d bytes after the value", ErrBadOp, len(r.b))
	}
	return r.err
}
