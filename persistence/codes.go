package persistence

// On-disk codes: the bytes that name an op and a value kind in a record
// payload (FORMAT.md, "Payload"). They are the file format's own numbering,
// independent of the in-memory enums (Op here, shards.Kind in the keyspace):
// those may be reordered or grow freely, these are fixed by the files already
// on disk. Never renumber or reuse a code; a new op or value kind gets a new
// code (and a new format version, see FORMAT.md), and a mapping below.
//
// No op code is 0: a torn tail is recognised by zeros where a record should
// be, which a whole record can never look like because its payload starts
// with a non-zero op code (recReader.bad).

import "github.com/turnstile/turnstile/shards"

// Op codes: the first byte of a record payload.
const (
	opcodeSet      byte = 1 // OpSet
	opcodeDel      byte = 2 // OpDel
	opcodeFlushDB  byte = 3 // OpFlushDB
	opcodeFlushAll byte = 4 // OpFlushAll
	// 5 to 31 are reserved for field-level effects on hashes, lists, sets
	// and sorted sets (a change to one field or element rather than a whole
	// value); they are neither written nor read yet.
	opcodeEnd byte = 0xFF // last record of a dump: the number of SET records before it
)

// Value codes: the kind byte of a SET record, which says how the value that
// follows is laid out.
const (
	valueInt   byte = 1 // shards.KindInt: a varint
	valueBytes byte = 2 // shards.KindBytes: a uvarint length, then the bytes
	// Reserved for whole values of the coming collection kinds; neither
	// written nor read yet (a reader rejects them as unknown).
	valueHash byte = 3
	valueList byte = 4
	valueSet  byte = 5
	valueZSet byte = 6
)

// opCode returns the file's code for op; ok is false for an Op the format
// cannot hold.
func opCode(op Op) (code byte, ok bool) {
	switch op {
	case OpSet:
		return opcodeSet, true
	case OpDel:
		return opcodeDel, true
	case OpFlushDB:
		return opcodeFlushDB, true
	case OpFlushAll:
		return opcodeFlushAll, true
	}
	return 0, false
}

// opOf returns the Op a file's op code stands for; ok is false for an
// unknown code and for opcodeEnd, which is not an effect.
func opOf(code byte) (op Op, ok bool) {
	switch code {
	case opcodeSet:
		return OpSet, true
	case opcodeDel:
		return OpDel, true
	case opcodeFlushDB:
		return OpFlushDB, true
	case opcodeFlushAll:
		return OpFlushAll, true
	}
	return 0, false
}

// valueCode returns the file's code for an entry kind; ok is false for a
// kind the format cannot hold.
func valueCode(k shards.Kind) (code byte, ok bool) {
	switch k {
	case shards.KindInt:
		return valueInt, true
	case shards.KindBytes:
		return valueBytes, true
	}
	return 0, false
}

// kindOf returns the entry kind a file's value code stands for; ok is false
// for an unknown (or reserved) code.
func kindOf(code byte) (k shards.Kind, ok bool) {
	switch code {
	case valueInt:
		return shards.KindInt, true
	case valueBytes:
		return shards.KindBytes, true
	}
	return 0, false
}
