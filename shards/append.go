package shards

// Growing a big string value in place (APPEND): a value of about 1 KiB or
// more is kept as its own record (flagOwnRec), a []byte whose tail is the
// value, so appended bytes can go right after it, into the record's spare
// capacity, instead of into a fresh copy of the whole value. The rule that
// value bytes never change in place still holds: no byte before the
// record's end changes, so every Str handed out before (a read-only view up
// to its own length, whose capacity ends there) and a frozen snapshot copy
// (which has its own objs and reads only as far as its slot's length) see
// the value they saw. Only the live table ever writes past a record's end.

// AppendBytes appends add to the byte-string value of the present key r
// refers to, in place when that value is kept as its own record, and
// returns the new entry (the expiry is kept). It changes nothing and
// returns false when the value is anything else (a short value in the
// arena, an integer, a collection): the caller then stores a new value
// with Set. Like Set, it first freezes a pending snapshot and marks the
// key's watchers. Requires the shard locked and r from a Lookup or Find
// that found the key.
func (m *Map) AppendBytes(r Ref, add []byte) (Entry, bool) {
	s := r.s
	if r.i < 0 || !s.t.ownBytes(r.i) {
		return Entry{}, false
	}
	s.beforeChangeLocked()
	s.t.appendOwn(r.i, add)
	s.touchLocked(r.key)
	return s.t.entry(r.i), true
}

// ownBytes reports whether slot i holds a byte string kept as its own
// record.
func (t *table) ownBytes(i int) bool {
	meta := t.slots[i].meta
	return Kind(meta&kindMask) == KindBytes && meta&flagOwnRec != 0
}

// appendOwn appends add to the value of slot i, a byte string kept as its
// own record (ownBytes): after the record's end, in its spare capacity if
// there is room, else in a copy that append makes with room to spare
// (about a quarter more, for a large slice; the copied bytes are not
// zeroed first), so that a run of appends copies the value a logarithmic
// number of times, not once per append.
func (t *table) appendOwn(i int, add []byte) {
	s := &t.slots[i]
	t.objs[s.off] = append(t.objs[s.off].([]byte), add...)
	t.measure(int64(s.off))
	s.num += int64(len(add))
}
