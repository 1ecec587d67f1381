package shards

import "slices"

// Point-in-time snapshots without stopping writes.
//
// BeginSnapshotLocked marks every shard "pending" at one instant (the caller
// holds every shard of every database). From then on, the first change to a
// pending shard first freezes a copy of it, and SnapshotShard freezes (or
// takes the already frozen copy of) one shard at a time. A frozen copy
// clones the 16-byte slots and shares the arena, whose record bytes are
// never changed in place while a copy may share them (sharedArena), so a
// copy costs one memcpy of the slot array and iterating it needs no lock.
// Expiry may still remove keys from a pending shard before it is frozen;
// such keys were due to expire before the snapshot completes, so loading
// the snapshot would drop them anyway.

// Frozen is one shard's contents at the snapshot's instant.
type Frozen struct {
	t table
}

// BeginSnapshotLocked starts a snapshot. Requires every shard of m locked.
func (m *Map) BeginSnapshotLocked() {
	for i := range m.shards {
		s := &m.shards[i]
		s.snapPending = true
		s.frozen = nil
	}
}

// SnapshotShard returns shard i as it was when the snapshot began. It locks
// shard i briefly and requires that the caller holds no shard of m.
func (m *Map) SnapshotShard(i int) Frozen {
	s := &m.shards[i]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.snapPending {
		s.freezeLocked()
	}
	f := s.frozen
	s.frozen = nil
	if f == nil {
		return Frozen{}
	}
	return *f
}

// EndSnapshot drops whatever an abandoned snapshot left behind.
func (m *Map) EndSnapshot() {
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		s.snapPending, s.frozen = false, nil
		s.mu.Unlock()
	}
}

// beforeChangeLocked freezes the shard if a snapshot still needs its
// current contents. Every change except expiry calls it first.
func (s *shard) beforeChangeLocked() {
	if s.snapPending {
		s.freezeLocked()
	}
}

func (s *shard) freezeLocked() {
	t := &s.t
	s.frozen = &Frozen{t: table{
		slots: slices.Clone(t.slots),
		n:     t.n,
		arena: t.arena[:len(t.arena):len(t.arena)],
		objs:  slices.Clone(t.objs),
	}}
	t.sharedArena, t.sharedOwn = true, true
	clear(t.mine) // the frozen copy shares every object now: copy on write
	s.snapPending = false
}

// ForEach calls fn for every key of the frozen shard whose expiry is after
// now, stopping at the first error.
func (f Frozen) ForEach(now int64, fn func(key []byte, e Entry) error) error {
	var err error
	f.t.eachLive(now, func(k []byte, e Entry) bool {
		err = fn(k, e)
		return err == nil
	})
	return err
}
