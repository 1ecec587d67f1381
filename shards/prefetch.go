package shards

import "unsafe"

// Prefetching for pipelined requests.
//
// With more keys than the caches hold, a lookup waits on two memory loads
// in a row: the slot, then the key bytes in the arena that the slot points
// at. A client that pipelines sends several commands at once, so the server
// knows the next keys before it needs them and can start those loads early,
// in two stages a command apart: PrefetchSlot for a key two commands ahead,
// PrefetchRecord (whose slot has arrived by then) for the key one command
// ahead. Both take the key's Hash, computed once for both stages. They are
// hints only: they change nothing, and a wrong guess (a stale hash, another
// database's) just costs a wasted cache line.

// PrefetchSlot starts loading the slot where the lookup of the key whose
// Hash is h begins. It takes no lock: it reads the slot array's address as
// the shard last published it (slotHint).
func (m *Map) PrefetchSlot(h uint64) {
	s := &m.shards[h&m.mask]
	if n := s.hint.n.Load(); n > 0 {
		i := uintptr(uint64(tagOf(h)) * n >> 24)
		prefetch(s.hint.base.Load() + i*slotBytes)
	}
}

// PrefetchRecord starts loading the arena record of the first slot in the
// probe run of the key whose Hash is h that has the key's tag (usually the
// key's own record), and, for a collection, the value's own struct. It
// reports whether that slot holds a collection, whose data PrefetchValue
// can then load a stage later. It locks the key's shard briefly: the
// caller must hold no shard of m.
func (m *Map) PrefetchRecord(h uint64) (object bool) {
	s := &m.shards[h&m.mask]
	s.mu.Lock()
	if i := s.t.tagSlot(h); i >= 0 {
		s.t.prefetchRec(i)
		object = isObjectKind(Kind(s.t.slots[i].meta & kindMask))
	}
	s.mu.Unlock()
	return object
}

// PrefetchValue starts loading the data of the collection value of the
// key whose Hash is h (as found by PrefetchRecord a stage earlier), if the
// value says where its data is (ValuePrefetcher). It locks the key's shard
// briefly: the caller must hold no shard of m.
func (m *Map) PrefetchValue(h uint64) {
	s := &m.shards[h&m.mask]
	s.mu.Lock()
	if i := s.t.tagSlot(h); i >= 0 {
		if sl := &s.t.slots[i]; isObjectKind(Kind(sl.meta&kindMask)) && sl.num >= 0 && sl.num < int64(len(s.t.objs)) {
			if v, ok := s.t.objs[sl.num].(ValuePrefetcher); ok {
				v.PrefetchData()
			}
		}
	}
	s.mu.Unlock()
}

// ValuePrefetcher is an Object that can start loading its own data.
type ValuePrefetcher interface {
	PrefetchData()
}

// Prefetch starts loading the cache line at p (a hint: it never faults).
func Prefetch(p unsafe.Pointer) { prefetch(uintptr(p)) }

// tagSlot returns the first slot of the probe run for hash h with h's
// tag, or -1.
func (t *table) tagSlot(h uint64) int {
	if t.n == 0 {
		return -1
	}
	want := tagOf(h) << tagShift
	for i := t.ideal(want); t.slots[i].meta != 0; i = t.next(i) {
		if t.slots[i].meta&^0xff == want {
			return i
		}
	}
	return -1
}

// prefetchRec starts loading slot i's arena record, if it has one, and
// the value a collection entry points at. A record with a string value
// may span cache lines (a rate-limit state of 40 bytes crosses a line
// boundary more often than not): every line up to its estimated end is
// loaded, at most maxRecordLines. The slot tells the value's length and
// whether an expiry is stored, not the key's, which is taken as keyGuess
// bytes. An integer's record (its key alone, mostly) gets its first line.
func (t *table) prefetchRec(i int) {
	sl := &t.slots[i]
	if sl.meta != 0 && sl.meta&flagOwnRec == 0 && int(sl.off) < len(t.arena) {
		start := uintptr(unsafe.Pointer(&t.arena[sl.off]))
		prefetch(start)
		if Kind(sl.meta&kindMask) == KindBytes && sl.num > 0 {
			size := keyGuess + sl.num // the record's estimated length
			if sl.meta&flagExp != 0 {
				size += 8
			}
			end := start + uintptr(min(size, int64(len(t.arena))-int64(sl.off), maxRecordLines*cacheLine))
			for p := start&^(cacheLine-1) + cacheLine; p < end; p += cacheLine {
				prefetch(p)
			}
		}
	}
	if isObjectKind(Kind(sl.meta&kindMask)) && sl.num >= 0 && sl.num < int64(len(t.objs)) {
		// An Object is a pointer: the data word of the interface value
		// is the address of the value itself.
		type eface struct{ typ, data unsafe.Pointer }
		if p := (*eface)(unsafe.Pointer(&t.objs[sl.num])).data; p != nil {
			prefetch(uintptr(p))
		}
	}
}

const (
	cacheLine      = 64
	maxRecordLines = 4  // the most lines of one record prefetchRec loads
	keyGuess       = 24 // the key length (and its length's varint) prefetchRec assumes
)
