package shards

import (
	"strconv"

	"github.com/turnstile/turnstile/resp"
)

// Kind is the type of value an entry holds. Kinds are below 16: the table
// keeps the kind in 4 bits of a slot.
type Kind uint8

const (
	// KindInt is a string whose bytes are the canonical decimal form of Int
	// (what Redis calls the "int" encoding). GCRA state is stored this way:
	// the theoretical arrival time in ns, with Exp set to the same instant.
	KindInt Kind = iota + 1
	// KindBytes is any other string; Str holds its bytes.
	KindBytes
	// Collection kinds: Obj holds the value, an Object (package coll).
	KindHash
	KindList
	KindSet
	KindZSet
	KindStream
)

// isObjectKind reports whether entries of kind k keep their value in Obj.
func isObjectKind(k Kind) bool { return k >= KindHash }

// Object is a collection value, kept in an Entry's Obj. The table stores
// it by reference and never looks inside, except through these methods.
type Object interface {
	// CloneObject returns a deep copy sharing nothing that a later change
	// to either copy could alter (copy on write after a snapshot).
	CloneObject() any
	// MemoryUsage returns the bytes the value holds, approximately; it
	// must be cheap (INFO sums it over every key).
	MemoryUsage() int
}

// Entry is one value in the keyspace, as Get returns it and Put takes it.
// It is a decoded view: the table stores it in a compact form.
type Entry struct {
	Exp  int64  // absolute expiry in Unix ns; 0 = no expiry
	Int  int64  // value when Kind == KindInt
	Str  []byte // value when Kind == KindBytes (read-only)
	Obj  any    // value of the collection kinds: an Object
	Kind Kind
}

// IntEntry returns a string entry holding n.
func IntEntry(n int64, exp int64) Entry { return Entry{Kind: KindInt, Int: n, Exp: exp} }

// BytesEntry returns a string entry holding b, using the integer form when b
// is the canonical decimal form of an int64. b is not copied (Put copies).
func BytesEntry(b []byte, exp int64) Entry {
	if n, ok := resp.ParseInt(b); ok {
		return Entry{Kind: KindInt, Int: n, Exp: exp}
	}
	return Entry{Kind: KindBytes, Str: b, Exp: exp}
}

// IsString reports whether the entry is of Redis type "string".
func (e Entry) IsString() bool { return e.Kind == KindInt || e.Kind == KindBytes }

// TypeName returns the name TYPE reports for the entry.
func (e Entry) TypeName() string {
	switch e.Kind {
	case KindInt, KindBytes:
		return "string"
	case KindHash:
		return "hash"
	case KindList:
		return "list"
	case KindSet:
		return "set"
	case KindZSet:
		return "zset"
	case KindStream:
		return "stream"
	}
	return "none"
}

// AppendString appends the string value of a string entry to dst.
func (e Entry) AppendString(dst []byte) []byte {
	if e.Kind == KindInt {
		return strconv.AppendInt(dst, e.Int, 10)
	}
	return append(dst, e.Str...)
}

// StrLen returns the length in bytes of a string entry's value.
func (e Entry) StrLen() int {
	if e.Kind == KindInt {
		var buf [20]byte
		return len(strconv.AppendInt(buf[:0], e.Int, 10))
	}
	return len(e.Str)
}

// Bytes returns the raw bytes of a KindBytes entry (nil otherwise). The
// caller must not modify them: stored values are immutable.
func (e Entry) Bytes() []byte {
	return e.Str
}
