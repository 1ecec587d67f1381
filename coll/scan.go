package coll

import "unsafe"

// strBytes returns a read-only byte view of s.
func strBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// scan visits count slots of t for a SCAN-style cursor, from the top of
// the dense slice down: cursor 0 starts at the top, and the returned
// cursor is the number of slots below the ones visited (0 when done).
// Deleting moves only the last slot into the hole, so an entry present
// for a whole scan stays below the cursor until it is visited: it is
// never skipped, though one moved down past the cursor is seen twice.
func (t *strTable) scan(cursor uint64, count int, fn func(key, val []byte)) uint64 {
	top := uint64(t.len())
	if cursor != 0 && cursor < top {
		top = cursor
	}
	stop := uint64(0)
	if c := uint64(max(count, 1)); top > c {
		stop = top - c
	}
	for i := top; i > stop; i-- {
		k, v := t.at(int(i - 1))
		fn(strBytes(k), v)
	}
	return stop
}
