// Package hll is Redis's HyperLogLog: the same hash, the same sparse and
// dense encodings, byte for byte, and the same estimator, so that a value
// written by PFADD here reads the same on Redis (GET, DUMP of the string)
// and PFCOUNT answers the same number.
//
// A value is a string: a 16-byte header ("HYLL", the encoding, three
// zeros, the cached cardinality as 8 little-endian bytes whose top bit set
// means "not cached"), then the registers: 16384 six-bit registers packed
// little-endian (dense, 12288 bytes), or a run-length sparse form of
// opcodes ZERO (00xxxxxx: 1-64 zero registers), XZERO (01xxxxxx xxxxxxxx:
// 1-16384) and VAL (1vvvvvxx: 1-4 registers of value 1-32). A sparse value
// turns dense when a register needs more than 32 or the value would pass
// the sparse size limit (hll-sparse-max-bytes).
//
// Functions never modify their argument: a value that changes is returned
// as a new slice (the keyspace's values are immutable). Values that are
// not valid report errors; no input panics.
package hll

import (
	"encoding/binary"
	"errors"
)

const (
	p          = 14
	q          = 64 - p
	registers  = 1 << p
	regBits    = 6
	regMax     = 1<<regBits - 1
	headerSize = 16
	// DenseSize is the length of a dense value.
	DenseSize = headerSize + (registers*regBits+7)/8

	encDense  = 0
	encSparse = 1

	valMaxValue  = 32
	valMaxLen    = 4
	zeroMaxLen   = 64
	xzeroMaxLen  = 16384
	alphaInf     = 0.721347520444481703680 // 0.5/ln(2)
	murmurSeed   = 0xadc83b19
	murmurMul    = 0xc6a4a7935bd1e995
	murmurRShift = 47
)

// DefaultSparseMaxBytes is Redis's default hll-sparse-max-bytes.
const DefaultSparseMaxBytes = 3000

// Errors: a value that is not a HyperLogLog (Redis answers WRONGTYPE) and
// one whose registers are corrupt (INVALIDOBJ).
var (
	ErrNotHLL  = errors.New("not a HyperLogLog value")
	ErrCorrupt = errors.New("corrupted HyperLogLog value")
)

// New returns an empty value: sparse, one XZERO covering every register.
func New() []byte {
	v := make([]byte, headerSize, headerSize+2)
	copy(v, "HYLL")
	v[4] = encSparse
	return append(v, 0x40|byte((xzeroMaxLen-1)>>8), byte((xzeroMaxLen-1)&0xff))
}

// Check reports whether v is a HyperLogLog as Redis's isHLLObjectOrReply
// accepts one: long enough, "HYLL", a known encoding, a dense value of
// exactly DenseSize bytes. Registers are checked where they are read.
func Check(v []byte) error {
	if len(v) < headerSize || string(v[:4]) != "HYLL" || v[4] > encSparse ||
		v[4] == encDense && len(v) != DenseSize {
		return ErrNotHLL
	}
	return nil
}

// Hash is MurmurHash64A with Redis's seed.
func Hash(b []byte) uint64 {
	h := uint64(murmurSeed) ^ uint64(len(b))*murmurMul
	n := len(b) &^ 7
	for i := 0; i < n; i += 8 {
		k := binary.LittleEndian.Uint64(b[i:])
		k *= murmurMul
		k ^= k >> murmurRShift
		k *= murmurMul
		h ^= k
		h *= murmurMul
	}
	if rest := b[n:]; len(rest) > 0 {
		for i := len(rest) - 1; i >= 0; i-- {
			h ^= uint64(rest[i]) << (8 * uint(i))
		}
		h *= murmurMul
	}
	h ^= h >> murmurRShift
	h *= murmurMul
	h ^= h >> murmurRShift
	return h
}

// patLen returns the register an element falls in and the length of the
// run of zeros (plus one) after the index bits of its hash.
func patLen(b []byte) (index int, count uint8) {
	h := Hash(b)
	index = int(h & (registers - 1))
	h >>= p
	h |= 1 << q
	count = 1
	for bit := uint64(1); h&bit == 0; bit <<= 1 {
		count++
	}
	return index, count
}

// denseGet and denseSet read and write register i of dense registers r;
// the last register's second byte lies past the end, where its bits are
// zero.
func denseGet(r []byte, i int) uint8 {
	byteAt, fb := i*regBits/8, uint(i*regBits&7)
	b0 := uint(r[byteAt])
	var b1 uint
	if byteAt+1 < len(r) {
		b1 = uint(r[byteAt+1])
	}
	return uint8((b0>>fb | b1<<(8-fb)) & regMax)
}

func denseSet(r []byte, i int, val uint8) {
	byteAt, fb := i*regBits/8, uint(i*regBits&7)
	v := uint(val)
	r[byteAt] &^= byte(regMax << fb)
	r[byteAt] |= byte(v << fb)
	if byteAt+1 < len(r) {
		r[byteAt+1] &^= byte(regMax >> (8 - fb))
		r[byteAt+1] |= byte(v >> (8 - fb))
	}
}

// Sparse opcodes.
func isZero(b byte) bool  { return b&0xc0 == 0 }
func isXZero(b byte) bool { return b&0xc0 == 0x40 }
func isVal(b byte) bool   { return b&0x80 != 0 }
func valOp(val, n int) byte {
	return byte((val-1)<<2|(n-1)) | 0x80
}
func zeroOps(dst []byte, n int) []byte {
	if n > zeroMaxLen {
		return append(dst, 0x40|byte((n-1)>>8), byte((n-1)&0xff))
	}
	return append(dst, byte(n-1))
}

// opAt decodes the sparse opcode at ops[k]: how many registers it covers,
// their value (0 for ZERO and XZERO) and its length in bytes; ok is false
// for an XZERO cut short.
func opAt(ops []byte, k int) (span int, val uint8, oplen int, ok bool) {
	b := ops[k]
	switch {
	case isZero(b):
		return int(b&0x3f) + 1, 0, 1, true
	case isVal(b):
		return int(b&3) + 1, b>>2&0x1f + 1, 1, true
	case k+1 < len(ops):
		return (int(b&0x3f)<<8 | int(ops[k+1])) + 1, 0, 2, true
	}
	return 0, 0, 0, false
}

// sparseRegisters calls fn for each run of registers of a sparse value
// that are not zero (first register, length, value) and returns
// ErrCorrupt unless the runs cover exactly the 16384 registers. A run of
// values past the last register stops the walk, as in Redis.
func sparseRegisters(ops []byte, fn func(first, n int, val uint8)) error {
	i := 0
	for k := 0; k < len(ops); {
		n, val, oplen, ok := opAt(ops, k)
		if !ok || val != 0 && i+n > registers {
			return ErrCorrupt
		}
		if val != 0 {
			fn(i, n, val)
		}
		i += n
		k += oplen
	}
	if i != registers {
		return ErrCorrupt
	}
	return nil
}

// toDense returns the dense form of sparse value v (its header kept but
// the encoding).
func toDense(v []byte) ([]byte, error) {
	d := make([]byte, DenseSize)
	copy(d, v[:headerSize])
	d[4] = encDense
	regs := d[headerSize:]
	err := sparseRegisters(v[headerSize:], func(first, n int, val uint8) {
		for i := first; i < first+n; i++ {
			denseSet(regs, i, val)
		}
	})
	return d, err
}

func invalidate(v []byte) { v[15] |= 0x80 }

// set raises register i of v to count if that is more. v is a value this
// package made (its own copy): dense values change in place; a sparse one
// may be returned anew (longer, or dense). changed reports a raise.
func set(v []byte, i int, count uint8, sparseMax int) (out []byte, changed bool, err error) {
	if v[4] == encDense {
		regs := v[headerSize:]
		if count > denseGet(regs, i) {
			denseSet(regs, i, count)
			return v, true, nil
		}
		return v, false, nil
	}
	if count > valMaxValue {
		return promote(v, i, count)
	}
	ops := v[headerSize:]
	// Find the opcode covering register i.
	first, k, prev, span := 0, 0, -1, 0
	for k < len(ops) {
		n, _, oplen, ok := opAt(ops, k)
		if !ok {
			return v, false, ErrCorrupt
		}
		span = n
		if i <= first+span-1 {
			break
		}
		prev = k
		k += oplen
		first += span
	}
	if span == 0 || k >= len(ops) {
		return v, false, ErrCorrupt
	}
	b := ops[k]
	oldLen := 1
	if isXZero(b) {
		oldLen = 2
	}
	var seq []byte
	var buf [5]byte
	last := first + span - 1
	switch {
	case isVal(b):
		cur := int(b>>2&0x1f) + 1
		if cur >= int(count) {
			return v, false, nil // already as high
		}
		if span == 1 {
			seq = append(buf[:0], valOp(int(count), 1))
			break
		}
		seq = buf[:0]
		if i != first {
			seq = append(seq, valOp(cur, i-first))
		}
		seq = append(seq, valOp(int(count), 1))
		if i != last {
			seq = append(seq, valOp(cur, last-i))
		}
	case isZero(b) && span == 1:
		seq = append(buf[:0], valOp(int(count), 1))
	default: // a ZERO or XZERO run to split
		seq = buf[:0]
		if i != first {
			seq = zeroOps(seq, i-first)
		}
		seq = append(seq, valOp(int(count), 1))
		if i != last {
			seq = zeroOps(seq, last-i)
		}
	}
	delta := len(seq) - oldLen
	if delta > 0 && len(v)+delta > sparseMax {
		return promote(v, i, count)
	}
	out = make([]byte, 0, len(v)+max(delta, 0))
	out = append(out, v[:headerSize+k]...)
	out = append(out, seq...)
	out = append(out, v[headerSize+k+oldLen:]...)
	out = mergeVals(out, prev)
	invalidate(out)
	return out, true, nil
}

// mergeVals joins adjacent VAL opcodes of equal value, scanning up to
// five opcodes from the one at prev (the start when -1), as Redis does
// after a change; it returns the shortened value.
func mergeVals(v []byte, prev int) []byte {
	ops := v[headerSize:]
	k := max(prev, 0)
	for scan := 5; k < len(ops) && scan > 0; scan-- {
		b := ops[k]
		if isXZero(b) {
			k += 2
			continue
		}
		if isZero(b) {
			k++
			continue
		}
		if k+1 < len(ops) && isVal(ops[k+1]) {
			v1, v2 := int(b>>2&0x1f)+1, int(ops[k+1]>>2&0x1f)+1
			if n := int(b&3) + 1 + int(ops[k+1]&3) + 1; v1 == v2 && n <= valMaxLen {
				ops[k+1] = valOp(v1, n)
				copy(ops[k:], ops[k+1:])
				ops = ops[:len(ops)-1]
				continue // the merged run may join the next one
			}
		}
		k++
	}
	return v[:headerSize+len(ops)]
}

// promote turns sparse v dense and raises register i to count.
func promote(v []byte, i int, count uint8) ([]byte, bool, error) {
	d, err := toDense(v)
	if err != nil {
		return v, false, err
	}
	denseSet(d[headerSize:], i, count)
	return d, true, nil
}
