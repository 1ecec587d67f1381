package shards

// Memory accounting.
//
// Each table knows the bytes it holds (acct): its slot array by capacity,
// its arena by capacity less the garbage in it, the records kept outside
// the arena and the collection values (as last measured), and its
// bookkeeping slices. Garbage is left out because a deletion should show at
// once as memory given back: an eviction loop that waited for the arena's
// compaction to see progress would evict far more keys than needed. The
// arena's garbage is bounded instead, by compaction (at half of the arena,
// three quarters during active expiry's sweep, or an eighth under
// SetTightArena).
//
// A collection value changed in place is measured again by Touched, which
// every in-place change calls. The Map keeps the sum over its shards in one
// atomic counter: Unlock adds the change of the shard's figure since the
// last report, so reading the total (Bytes) is one atomic load and the
// figure is never more than the changes of the shards locked right now
// behind.

// acct returns the bytes the table holds, for accounting (see above).
func (t *table) acct() int64 {
	return int64(cap(t.slots))*16 + int64(cap(t.arena)-t.garbage) + t.outside +
		int64(cap(t.objs))*16 + int64(cap(t.objSize)+cap(t.freeObj)+cap(t.mine))*8 +
		int64(cap(t.access))*2
}

// measure records what objs[idx] holds now in objSize and outside.
func (t *table) measure(idx int64) {
	var n int64
	switch o := t.objs[idx].(type) {
	case []byte:
		n = int64(cap(o))
	case Object:
		n = int64(o.MemoryUsage())
	}
	if int(idx) >= len(t.objSize) {
		if n == 0 {
			return
		}
		t.objSize = append(t.objSize, make([]int64, len(t.objs)-len(t.objSize))...)
	}
	t.outside += n - t.objSize[idx]
	t.objSize[idx] = n
}

// report adds the change of shard s's figure since its last report to the
// Map's total. Requires s locked.
func (m *Map) report(s *shard) {
	if a := s.t.acct(); a != s.reported {
		m.bytes.Add(a - s.reported)
		s.reported = a
	}
}

// Bytes returns the bytes the keyspace's tables hold, as accounted above:
// the figure maxmemory is measured against. It takes no lock; changes made
// under shard locks still held are not in it yet.
func (m *Map) Bytes() int64 { return m.bytes.Load() }

// SetTightArena makes deletions compact a shard's arena once an eighth of
// it is garbage rather than half (on), or restores the default (off). A
// server under a memory limit turns it on: the garbage is memory held but
// not accounted, and an eighth keeps it small at the cost of more copying.
// It takes no lock (a shard sees the change at its next deletion), so it
// may be called with shards held.
func (m *Map) SetTightArena(on bool) { m.tight.Store(on) }
