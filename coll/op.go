package coll

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/turnstile/turnstile/shards"
)

// Op is one kind of change to a collection. Its numbering is in-memory
// only: the log's file codes are persistence's (persistence/codes.go).
type Op uint8

// The ops and their arguments. Integers are canonical decimal; a score is
// a float in the form strconv.FormatFloat(f, 'g', -1, 64) writes (or any
// form ParseScore reads); an index is already normalised (0-based, within
// the value). Each op says what Apply returns as n.
const (
	// Hashes.
	OpHSet Op = iota + 1 // field value [field value ...]; n = fields added
	OpHDel               // field [field ...]; n = fields removed

	// Sets.
	OpSAdd // member [member ...]; n = members added
	OpSRem // member [member ...]; n = members removed

	// Sorted sets.
	OpZAdd             // score member [score member ...]; n = members added (a new score for a present member changes it without counting)
	OpZRem             // member [member ...]; n = members removed
	OpZRemRangeByScore // min max (ZRANGEBYSCORE syntax: "(" exclusive, -inf/+inf); n = members removed
	OpZRemRangeByRank  // start stop (normalised, 0 <= start <= stop < len); n = members removed
	OpZRemRangeByLex   // min max (ZRANGEBYLEX syntax: "[" "(" "-" "+"); n = members removed

	// Lists.
	OpLPush   // element [element ...], each pushed at the head in turn; n = new length
	OpRPush   // element [element ...], each appended in turn; n = new length
	OpLPop    // count; n = elements removed from the head
	OpRPop    // count; n = elements removed from the tail
	OpLSet    // index element; n = 1
	OpLTrim   // start stop: keep elements start..stop (normalised; start > stop empties the list); n = elements removed
	OpLInsert // index element: insert before the element at index (index = length appends); n = new length
	OpLRem    // count element (LREM semantics); n = elements removed

	// Streams.
	OpXAdd   // id field value [field value ...] (id "ms-seq", above the last id); n = 1
	OpXDel   // id [id ...]; n = entries removed
	OpXTrim  // "MAXLEN" n | "MINID" id (exact trimming); n = entries removed
	OpXSetID // last-id [entries-added max-deleted-id]; n = 0

	// Stream consumer groups (stream_group.go); times are Unix ms.
	OpXGroupCreate      // group last-id entries-read (-1: unknown); n = 1
	OpXGroupSetID       // group last-id entries-read; n = 1
	OpXGroupDestroy     // group; n = 1
	OpXGroupConsumer    // group consumer seen: creates the consumer or sets its seen time; n = 1 when created
	OpXGroupDelConsumer // group consumer; n = its pending entries, dropped
	OpXGroupClaim       // group consumer time count-mode id...: each id pending for consumer (created when absent, with count 1), delivered at time; count-mode "one" | "incr" | "keep" | n; n = ids
	OpXGroupAck         // group id...; n = pending entries removed

	numOps // one past the last op
)

var opNames = [numOps]string{
	OpHSet: "hset", OpHDel: "hdel",
	OpSAdd: "sadd", OpSRem: "srem",
	OpZAdd: "zadd", OpZRem: "zrem", OpZRemRangeByScore: "zremrangebyscore",
	OpZRemRangeByRank: "zremrangebyrank", OpZRemRangeByLex: "zremrangebylex",
	OpLPush: "lpush", OpRPush: "rpush", OpLPop: "lpop", OpRPop: "rpop",
	OpLSet: "lset", OpLTrim: "ltrim", OpLInsert: "linsert", OpLRem: "lrem",
	OpXAdd: "xadd", OpXDel: "xdel", OpXTrim: "xtrim", OpXSetID: "xsetid",
	OpXGroupCreate: "xgroup-create", OpXGroupSetID: "xgroup-setid", OpXGroupDestroy: "xgroup-destroy",
	OpXGroupConsumer: "xgroup-consumer", OpXGroupDelConsumer: "xgroup-delconsumer",
	OpXGroupClaim: "xgroup-claim", OpXGroupAck: "xgroup-ack",
}

// String returns the op's name (the Redis command it resembles).
func (op Op) String() string {
	if op > 0 && op < numOps {
		return opNames[op]
	}
	return "op(" + strconv.Itoa(int(op)) + ")"
}

// Valid reports whether op is a known op.
func (op Op) Valid() bool { return op > 0 && op < numOps }

// Kind returns the kind of value op applies to (0 for an unknown op).
func (op Op) Kind() shards.Kind {
	switch {
	case op >= OpHSet && op <= OpHDel:
		return shards.KindHash
	case op >= OpSAdd && op <= OpSRem:
		return shards.KindSet
	case op >= OpZAdd && op <= OpZRemRangeByLex:
		return shards.KindZSet
	case op >= OpLPush && op <= OpLRem:
		return shards.KindList
	case op >= OpXAdd && op <= OpXGroupAck:
		return shards.KindStream
	}
	return 0
}

// Value is what every collection type provides, besides its own reads.
type Value interface {
	shards.Object
	// Len is the number of entries (fields, elements, members).
	Len() int
	// Encoding is the name OBJECT ENCODING reports.
	Encoding() string
	// AppendBinary appends the value's persistent form (Decode reads it).
	AppendBinary(dst []byte) []byte
	// apply makes one change (see Apply).
	apply(op Op, args [][]byte) (n int64, changed bool, err error)
}

// New returns an empty value of a collection kind, or nil for another kind.
func New(k shards.Kind) Value {
	switch k {
	case shards.KindHash:
		return NewHash()
	case shards.KindSet:
		return NewSet()
	case shards.KindZSet:
		return NewZSet()
	case shards.KindList:
		return NewList()
	case shards.KindStream:
		return NewStream()
	}
	return nil
}

// ErrBadOp is wrapped by the errors Apply returns: an op that does not fit
// the value or malformed arguments. The server never makes one; a log
// that holds one is damaged.
var ErrBadOp = errors.New("coll: bad op")

// Apply makes one change to v, which must be of op's kind, and returns the
// op's n (see the Op constants) and whether v changed. On error v is
// unchanged.
func Apply(v Value, op Op, args [][]byte) (n int64, changed bool, err error) {
	if !op.Valid() {
		return 0, false, fmt.Errorf("%w: unknown op %d", ErrBadOp, op)
	}
	return v.apply(op, args)
}

// Decode reads a value of kind k from its persistent form.
func Decode(k shards.Kind, b []byte) (Value, error) {
	switch k {
	case shards.KindHash:
		return decodeHash(b)
	case shards.KindSet:
		return decodeSet(b)
	case shards.KindZSet:
		return decodeZSet(b)
	case shards.KindList:
		return decodeList(b)
	case shards.KindStream:
		return decodeStream(b)
	}
	return nil, fmt.Errorf("%w: kind %d is not a collection", ErrBadOp, k)
}

// badArgs returns the error for arguments that do not fit op.
func badArgs(op Op, args [][]byte) error {
	return fmt.Errorf("%w: %s with %d arguments", ErrBadOp, op, len(args))
}

// parseCount reads a non-negative decimal count argument.
func parseCount(b []byte) (int64, bool) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil && n >= 0
}
