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
// key's own record). It locks the key's shard briefly: the caller must hold
// no shard of m.
func (m *Map) PrefetchRecord(h uint64) {
	s := &m.shards[h&m.mask]
	s.mu.Lock()
	t := &s.t
	if t.n > 0 {
		want := tagOf(h) << tagShift
		for i := t.ideal(want); t.slots[i].meta != 0; i = t.next(i) {
			if t.slots[i].meta&^0xff == want {
				t.prefetchRec(i)
				break
			}
		}
	}
	s.mu.Unlock()
}

// prefetchRec starts loading slot i's arena record, if it has one.
func (t *table) prefetchRec(i int) {
	if sl := &t.slots[i]; sl.meta != 0 && sl.meta&flagOwnRec == 0 && int(sl.off) < len(t.arena) {
		prefetch(uintptr(unsafe.Pointer(&t.arena[sl.off])))
	}
}
