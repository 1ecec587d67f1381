package coll

import (
	"encoding/binary"
	"unsafe"
)

// strTable is the big form of hashes and sets: entries in a slice, found
// through an index map. Deleting moves the last entry into the hole, so
// the slice stays dense and an entry can be picked at random by index.
type strTable struct {
	keys  []string
	vals  [][]byte // nil for sets
	idx   map[string]int32
	bytes int // key and value bytes, for memory
}

// newStrTable returns a table sized for n entries, with values (a hash)
// or without (a set).
func newStrTable(n int, withVals bool) *strTable {
	t := &strTable{keys: make([]string, 0, n), idx: make(map[string]int32, n)}
	if withVals {
		t.vals = make([][]byte, 0, n)
	}
	return t
}

func (t *strTable) len() int { return len(t.keys) }

// memory estimates the bytes held: per entry a string header and map
// slot (about 40 bytes), a value header when a hash, and the bytes.
func (t *strTable) memory() int {
	per := 40
	if t.vals != nil {
		per += 24
	}
	return len(t.keys)*per + t.bytes
}

func (t *strTable) clone() *strTable {
	c := &strTable{keys: append([]string(nil), t.keys...), idx: make(map[string]int32, len(t.keys)), bytes: t.bytes}
	// Key strings are immutable and may be shared; values are copied.
	for k, i := range t.idx {
		c.idx[k] = i
	}
	if t.vals != nil {
		c.vals = make([][]byte, len(t.vals))
		for i, v := range t.vals {
			c.vals[i] = append([]byte(nil), v...)
		}
	}
	return c
}

func (t *strTable) has(key []byte) bool {
	_, ok := t.idx[string(key)]
	return ok
}

func (t *strTable) get(key []byte) ([]byte, bool) {
	i, ok := t.idx[string(key)]
	if !ok {
		return nil, false
	}
	return t.vals[i], true
}

// set adds or replaces key's value (ignored for a set) and reports
// whether key is new. Values are copied.
func (t *strTable) set(key, val []byte) bool {
	if i, ok := t.idx[string(key)]; ok {
		if t.vals != nil {
			t.bytes += len(val) - len(t.vals[i])
			t.vals[i] = append([]byte(nil), val...)
		}
		return false
	}
	k := string(key)
	t.idx[k] = int32(len(t.keys))
	t.keys = append(t.keys, k)
	t.bytes += len(k)
	if t.vals != nil {
		t.vals = append(t.vals, append([]byte{}, val...))
		t.bytes += len(val)
	}
	return true
}

// add adds a set member and reports whether it is new.
func (t *strTable) add(key []byte) bool { return t.set(key, nil) }

// del removes key and reports whether it was there.
func (t *strTable) del(key []byte) bool {
	i, ok := t.idx[string(key)]
	if !ok {
		return false
	}
	last := int32(len(t.keys) - 1)
	t.bytes -= len(t.keys[i])
	delete(t.idx, t.keys[i])
	if i != last {
		t.keys[i] = t.keys[last]
		t.idx[t.keys[i]] = i
	}
	t.keys[last] = ""
	t.keys = t.keys[:last]
	if t.vals != nil {
		t.bytes -= len(t.vals[i])
		t.vals[i] = t.vals[last]
		t.vals[last] = nil
		t.vals = t.vals[:last]
	}
	return true
}

// at returns entry i (0 <= i < len).
func (t *strTable) at(i int) (key string, val []byte) {
	if t.vals != nil {
		val = t.vals[i]
	}
	return t.keys[i], val
}

func (t *strTable) each(fn func(key, val []byte) bool) {
	for i, k := range t.keys {
		var v []byte
		if t.vals != nil {
			v = t.vals[i]
		}
		if !fn(unsafe.Slice(unsafe.StringData(k), len(k)), v) {
			return
		}
	}
}

func appendUvarint(dst []byte, n uint64) []byte { return binary.AppendUvarint(dst, n) }
