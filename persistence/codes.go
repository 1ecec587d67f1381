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

import (
	"github.com/turnstile/turnstile/coll"
	"github.com/turnstile/turnstile/shards"
)

// Op codes: the first byte of a record payload.
const (
	opcodeSet      byte = 1 // OpSet
	opcodeDel      byte = 2 // OpDel
	opcodeFlushDB  byte = 3 // OpFlushDB
	opcodeFlushAll byte = 4 // OpFlushAll
	opcodeExpire   byte = 5 // OpExpire (format version 2)
	opcodeField    byte = 6 // OpField (format version 2)
	opcodeRange    byte = 7 // OpRange (format version 4)
	// 8 to 31 stay reserved for key-level effects.
	// Framing records, which are not effects, count down from 0xFF.
	opcodeGroup byte = 0xFE // the next records are one unit (format version 3): their count and byte length
	opcodeEnd   byte = 0xFF // last record of a dump: the number of SET records before it
)

// Value codes: the kind byte of a SET record, which says how the value that
// follows is laid out.
const (
	valueInt   byte = 1 // shards.KindInt: a varint
	valueBytes byte = 2 // shards.KindBytes: a uvarint length, then the bytes
	// Whole collection values (format version 2): a uvarint length, then
	// the value's persistent form (coll's AppendBinary).
	valueHash   byte = 3
	valueList   byte = 4
	valueSet    byte = 5
	valueZSet   byte = 6
	valueStream byte = 7
)

// Field op codes: the byte after the key in a FIELD record, naming the
// coll.Op. Never renumber or reuse one.
var fieldCodes = [...]struct {
	op   coll.Op
	code byte
}{
	{coll.OpHSet, 1}, {coll.OpHDel, 2},
	{coll.OpSAdd, 3}, {coll.OpSRem, 4},
	{coll.OpZAdd, 5}, {coll.OpZRem, 6}, {coll.OpZRemRangeByScore, 7}, {coll.OpZRemRangeByRank, 8}, {coll.OpZRemRangeByLex, 9},
	{coll.OpLPush, 10}, {coll.OpRPush, 11}, {coll.OpLPop, 12}, {coll.OpRPop, 13},
	{coll.OpLSet, 14}, {coll.OpLTrim, 15}, {coll.OpLInsert, 16}, {coll.OpLRem, 17},
	{coll.OpXAdd, 18}, {coll.OpXDel, 19}, {coll.OpXTrim, 20}, {coll.OpXSetID, 21},
	{coll.OpXGroupCreate, 22}, {coll.OpXGroupSetID, 23}, {coll.OpXGroupDestroy, 24},
	{coll.OpXGroupConsumer, 25}, {coll.OpXGroupDelConsumer, 26}, {coll.OpXGroupClaim, 27}, {coll.OpXGroupAck, 28},
}

// fieldCode returns the file's code for a collection op.
func fieldCode(op coll.Op) (byte, bool) {
	for _, f := range fieldCodes {
		if f.op == op {
			return f.code, true
		}
	}
	return 0, false
}

// fieldOp returns the collection op a file's field code stands for.
func fieldOp(code byte) (coll.Op, bool) {
	for _, f := range fieldCodes {
		if f.code == code {
			return f.op, true
		}
	}
	return 0, false
}

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
	case OpExpire:
		return opcodeExpire, true
	case OpField:
		return opcodeField, true
	case OpRange:
		return opcodeRange, true
	}
	return 0, false
}

// opOf returns the Op a file's op code stands for; ok is false for an
// unknown code and for opcodeEnd and opcodeGroup, which are not effects.
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
	case opcodeExpire:
		return OpExpire, true
	case opcodeField:
		return OpField, true
	case opcodeRange:
		return OpRange, true
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
	case shards.KindHash:
		return valueHash, true
	case shards.KindList:
		return valueList, true
	case shards.KindSet:
		return valueSet, true
	case shards.KindZSet:
		return valueZSet, true
	case shards.KindStream:
		return valueStream, true
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
	case valueHash:
		return shards.KindHash, true
	case valueList:
		return shards.KindList, true
	case valueSet:
		return shards.KindSet, true
	case valueZSet:
		return shards.KindZSet, true
	case valueStream:
		return shards.KindStream, true
	}
	return 0, false
}
