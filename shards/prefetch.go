package shards

import "unsafe"

// Prefetching for pipelined requests.
//
// With more keys than the caches hold, a lookup waits on two memory loads
// in a row: the slot, then the key bytes in the arena that the slot points
// at. A client that pipelines sends several commands at once, so the server
// knows the next keys before it needs them. Hint lets it start those loads
// early, in two stages a command apart: PrefetchSlot for a key two
// commands ahead, PrefetchRecord (whose slot has arrived by then) for the
// key one command ahead. Both are hints only: they change nothing, and a
// wrong guess just costs a wasted cache line.

// PrefetchSlot starts loading the slot where key's lookup begins. It locks
// key's shard briefly: the caller must hold no shard of m.
func (m *Map) PrefetchSlot(key []byte) {
	s, tag := m.locate(key)
	s.mu.Lock()
	if len(s.t.slots) > 0 {
		prefetch(uintptr(unsafe.Pointer(&s.t.slots[s.t.ideal(tag<<tagShift)])))
	}
	s.mu.Unlock()
}

// PrefetchRecord starts loading the arena record of the first slot in
// key's probe run whose tag matches key's (usually key's own). It locks
// key's shard briefly: the caller must hold no shard of m.
func (m *Map) PrefetchRecord(key []byte) {
	s, tag := m.locate(key)
	s.mu.Lock()
	t := &s.t
	if t.n > 0 {
		want := tag << tagShift
		for i := t.ideal(want); t.slots[i].meta != 0; i = t.next(i) {
			if sl := &t.slots[i]; sl.meta&^0xff == want {
				if sl.meta&flagOwnRec == 0 && int(sl.off) < len(t.arena) {
					prefetch(uintptr(unsafe.Pointer(&t.arena[sl.off])))
				}
				break
			}
		}
	}
	s.mu.Unlock()
}
