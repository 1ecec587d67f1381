package shards

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"sync/atomic"
	"unsafe"
)

// table is one shard's storage, built to keep the cost per key small:
//
//   - slots is an open-addressing array (linear probing) of 16-byte,
//     pointer-free slots, so the garbage collector never scans it;
//   - keys, string values and expiry times live in arena, an append-only
//     byte slice; a slot points at its record there.
//
// A slot's ideal index maps the top 24 bits of the key's hash (the tag,
// kept in the slot) onto the array by multiplication, (tag*len)>>24, so the
// array can have any length: it grows by half when 85% full, which keeps the
// average load near 70% (a power-of-two array averages far less). The tag
// also filters most mismatches without touching the arena. Deletion shifts
// the following slots back (no tombstones), and growing re-places slots from
// their tags alone, without rehashing keys.
//
// Record layout:
//
//	uvarint key length | key | [8-byte expiry, if flagExp] | [value, if KindBytes]
//
// A record bigger than bigRecord (or one that would push the arena past the
// 4 GiB a uint32 offset reaches) is kept as its own []byte in objs instead,
// with flagOwnRec set and off indexing objs; so large values neither bloat
// arena compaction nor overflow the offset.
//
// A GCRA entry (KindInt whose expiry equals its value) stores no expiry at
// all: flagExpIsInt says the expiry is the value. Value bytes are never
// changed in place, so a Str slice handed out by get stays valid (as a
// snapshot) after later writes. Not safe for concurrent use: the shard
// mutex guards it.
type table struct {
	slots   []slot
	n       int // live slots
	arena   []byte
	garbage int   // arena bytes no slot refers to any more
	objs    []any // collection values (Object) and records kept outside the arena
	freeObj []int64
	// mine has bit i set when objs[i] is an Object that only this live
	// table refers to, so it may be changed in place; a clear bit means a
	// frozen snapshot copy may share it (or its owner is unknown) and
	// mutable clones it first (copy on write).
	mine []uint64
	// sharedArena is set while a snapshot's frozen copy may read the
	// arena's array: no record byte in it may then change in place. A
	// frozen copy keeps the array it was given, so the flag is cleared
	// when the arena moves to a new array (reserve, compact): in-place
	// updates resume after a snapshot instead of never again. sharedOwn
	// is the same for records kept as their own []byte (a frozen copy
	// shares those until each is replaced); it stays set.
	sharedArena, sharedOwn bool
	// mapped says slots is a mapping of alloc's (slotmem.go) that the table
	// must free itself when it replaces or drops the array.
	mapped bool
	alloc  slotAlloc
	// shrinkHold, when not 0, is the key count maybeShrink waits for
	// before it looks again after declining to shrink (see there).
	shrinkHold int
	// outside is the bytes held outside the arena, by records kept as
	// their own []byte and by collection values, as last measured;
	// objSize[i] is objs[i]'s share of it (memory.go).
	outside int64
	objSize []int64
	// access holds one access stamp per slot (access.go) while the Map
	// tracks accesses, and is nil otherwise. A stamp moves with its slot.
	access []uint16
	// tight, when set, makes deletions compact the arena at an eighth of
	// garbage (Map.SetTightArena); it is the Map's flag (nil in frozen
	// copies), read without the Map's help.
	tight *atomic.Bool
}

// slot is 16 bytes. meta is 0 for an empty slot; otherwise its low byte is
// the Kind plus flags and its top 24 bits are the tag.
type slot struct {
	meta uint32
	off  uint32 // arena offset of the record
	num  int64  // KindInt: the value; KindBytes: value length; object kinds: objs index
}

const (
	kindMask     = 0x0f
	flagExp      = 0x10 // an 8-byte expiry follows the key in the record
	flagExpIsInt = 0x20 // the expiry equals num (GCRA state)
	flagOwnRec   = 0x40 // the record is objs[off] ([]byte), not in the arena
	tagShift     = 8

	bigRecord = 1 << 10

	minSlots = 8
	maxSlots = 1 << 24 // the tag must tell every index apart
	// A table grows by half once more than loadNum/loadDen of it is used.
	loadNum, loadDen = 17, 20
	// shrinkMaxRun is the farthest past its ideal slot that a shrink may
	// place a key (maybeShrink).
	shrinkMaxRun = 32
	// garbageMin is the least garbage worth compacting the arena for.
	garbageMin = 4 << 10
)

// tagOf returns the 24-bit tag of a key hash: its top 24 bits.
func tagOf(h uint64) uint32 { return uint32(h >> 40) }

// init gives the table a fresh, empty slot array of at least nslots slots.
// The caller frees the previous array, if any, with freeSlots.
func (t *table) init(nslots int) {
	t.slots, t.mapped = t.alloc.alloc(nslots)
	t.alloc.publish(t.slots)
}

// freeSlots frees an array that init made, once nothing refers to it.
func (t *table) freeSlots(s []slot, mapped bool) {
	if mapped {
		t.alloc.free(s)
	}
}

// ideal returns the slot index a slot's tag maps to.
func (t *table) ideal(meta uint32) int {
	return int(uint64(meta>>tagShift) * uint64(len(t.slots)) >> 24)
}

// next returns the slot after i, wrapping around.
func (t *table) next(i int) int {
	if i++; i == len(t.slots) {
		return 0
	}
	return i
}

// rec returns the bytes holding slot i's record, from its start.
func (t *table) rec(i int) []byte {
	s := &t.slots[i]
	if s.meta&flagOwnRec != 0 {
		return t.objs[s.off].([]byte)
	}
	return t.arena[s.off:]
}

// keyAt returns the key of slot i, the record, and the record offset just
// past the key.
func (t *table) keyAt(i int) ([]byte, []byte, int) {
	r := t.rec(i)
	klen, n := binary.Uvarint(r)
	end := n + int(klen)
	return r[n:end:end], r, end
}

// find returns the slot holding key, or -1.
func (t *table) find(key []byte, tag uint32) int {
	if t.n == 0 {
		return -1
	}
	want := tag << tagShift
	for i := t.ideal(want); ; i = t.next(i) {
		m := t.slots[i].meta
		if m == 0 {
			return -1
		}
		if m&^0xff == want {
			if k, _, _ := t.keyAt(i); bytes.Equal(k, key) {
				return i
			}
		}
	}
}

// entry decodes slot i. An integer without a stored expiry (GCRA state,
// counters) is decoded from the slot alone, without touching the arena.
func (t *table) entry(i int) Entry {
	s := &t.slots[i]
	e := Entry{Kind: Kind(s.meta & kindMask)}
	if e.Kind == KindInt && s.meta&flagExp == 0 {
		e.Int = s.num
		if s.meta&flagExpIsInt != 0 {
			e.Exp = s.num
		}
		return e
	}
	_, r, p := t.keyAt(i)
	switch {
	case s.meta&flagExpIsInt != 0:
		e.Exp = s.num
	case s.meta&flagExp != 0:
		e.Exp = int64(binary.LittleEndian.Uint64(r[p:]))
		p += 8
	}
	switch e.Kind {
	case KindInt:
		e.Int = s.num
	case KindBytes:
		end := p + int(s.num)
		e.Str = r[p:end:end]
	default:
		e.Obj = t.objs[s.num]
	}
	return e
}

// expAt returns the expiry of slot i without decoding the value.
func (t *table) expAt(i int) int64 {
	s := &t.slots[i]
	switch {
	case s.meta&flagExpIsInt != 0:
		return s.num
	case s.meta&flagExp != 0:
		_, r, p := t.keyAt(i)
		return int64(binary.LittleEndian.Uint64(r[p:]))
	}
	return 0
}

// put stores e under key (whose hash tag is tag) and returns the previous
// entry's expiry and whether one existed. Key and value bytes are copied.
func (t *table) put(key []byte, tag uint32, e Entry) (oldExp int64, existed bool) {
	return t.putAt(t.find(key, tag), key, tag, e)
}

// putAt is put when find(key, tag) is already known to be i (-1: absent).
func (t *table) putAt(i int, key []byte, tag uint32, e Entry) (oldExp int64, existed bool) {
	if t.slots == nil {
		t.init(minSlots)
	}
	keepObj := int64(-1)
	if i >= 0 {
		oldExp, existed = t.expAt(i), true
		if t.updateInPlace(i, e) {
			return oldExp, true
		}
		if s := &t.slots[i]; isObjectKind(Kind(s.meta&kindMask)) && e.Kind == Kind(s.meta&kindMask) && t.objs[s.num] == e.Obj {
			keepObj = s.num // same object, new expiry: keep it where it is
			t.releaseRecord(i)
		} else {
			t.release(i)
		}
	} else {
		if overLoad(t.n+1, len(t.slots)) {
			t.grow()
		}
		i = t.ideal(tag << tagShift)
		for t.slots[i].meta != 0 {
			i = t.next(i)
		}
		t.n++
	}
	t.write(i, key, tag, e, keepObj)
	if existed {
		t.maybeCompact()
	}
	return oldExp, existed
}

// updateInPlace rewrites slot i for e when the record can stay as it is:
// an integer value whose expiry needs no (or the same) arena space, or a
// string of the same length as the one it replaces, with an expiry where
// the old one had one (a limiter's state rewritten on every call: no
// garbage, no arena growth). Never while a snapshot may share the arena.
func (t *table) updateInPlace(i int, e Entry) bool {
	s := &t.slots[i]
	old := Kind(s.meta & kindMask)
	if e.Kind == KindBytes && old == KindBytes {
		return t.updateBytesInPlace(i, e)
	}
	if e.Kind != KindInt || old != KindInt {
		return false
	}
	flags := expFlags(e)
	if flags != s.meta&(flagExp|flagExpIsInt) || (flags == flagExp && t.recShared(i)) {
		return false
	}
	if flags == flagExp {
		_, r, p := t.keyAt(i)
		binary.LittleEndian.PutUint64(r[p:], uint64(e.Exp))
	}
	s.meta = s.meta&^kindMask | uint32(KindInt)
	s.num = e.Int
	return true
}

// updateBytesInPlace is updateInPlace for a string replacing a string.
func (t *table) updateBytesInPlace(i int, e Entry) bool {
	s := &t.slots[i]
	flags := expFlags(e)
	if t.recShared(i) || s.num != int64(len(e.Str)) || flags != s.meta&(flagExp|flagExpIsInt) || flags == flagExpIsInt {
		return false
	}
	_, r, p := t.keyAt(i)
	if flags == flagExp {
		binary.LittleEndian.PutUint64(r[p:], uint64(e.Exp))
		p += 8
	}
	copy(r[p:p+len(e.Str)], e.Str)
	return true
}

// recShared reports whether slot i's record may be read by a snapshot's
// frozen copy, and so must not change in place.
func (t *table) recShared(i int) bool {
	if t.slots[i].meta&flagOwnRec != 0 {
		return t.sharedOwn
	}
	return t.sharedArena
}

func expFlags(e Entry) uint32 {
	switch {
	case e.Exp == 0:
		return 0
	case e.Kind == KindInt && e.Exp == e.Int:
		return flagExpIsInt
	}
	return flagExp
}

// write fills slot i with a fresh record for key and e. keepObj, when not
// -1, is the objs index that already holds e.Obj (an object kept across a
// change of expiry), so the object keeps its index and its mine bit.
func (t *table) write(i int, key []byte, tag uint32, e Entry, keepObj int64) {
	flags := expFlags(e)
	size := binary.MaxVarintLen64 + len(key) + 8
	if e.Kind == KindBytes {
		size += len(e.Str)
	}
	own := size > bigRecord || uint64(len(t.arena)+size) > math.MaxUint32
	var r []byte
	if own {
		// Grown, not made: the capacity is then the allocator's size class
		// (4,864 bytes for a 4 KiB value), so accounting counts what the
		// record really takes.
		r = slices.Grow([]byte(nil), size)
	} else {
		t.reserve(size)
		r = t.arena
	}
	start := len(r)
	r = binary.AppendUvarint(r, uint64(len(key)))
	r = append(r, key...)
	if flags == flagExp {
		r = binary.LittleEndian.AppendUint64(r, uint64(e.Exp))
	}
	var num int64
	switch e.Kind {
	case KindInt:
		num = e.Int
	case KindBytes:
		r = append(r, e.Str...)
		num = int64(len(e.Str))
	default:
		if keepObj >= 0 {
			num = keepObj
		} else {
			num = t.storeObj(e.Obj)
		}
	}
	off := uint32(start)
	if own {
		flags |= flagOwnRec
		off = uint32(t.storeObj(r))
	} else {
		t.arena = r
	}
	t.slots[i] = slot{meta: tag<<tagShift | flags | uint32(e.Kind), off: off, num: num}
}

// reserve makes room for n more arena bytes, growing by a quarter rather
// than append's doubling: the arena is most of a shard's memory.
func (t *table) reserve(n int) {
	if cap(t.arena)-len(t.arena) >= n {
		return
	}
	grown := make([]byte, len(t.arena), len(t.arena)+max(n, len(t.arena)/4, 256))
	copy(grown, t.arena)
	t.arena = grown
	t.sharedArena = false // a frozen copy keeps the old array
}

// overlaps reports whether a and b share memory.
func overlaps(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	a0, b0 := uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&b[0]))
	return a0 < b0+uintptr(len(b)) && b0 < a0+uintptr(len(a))
}

// recordLen returns the bytes slot i's record uses.
func (t *table) recordLen(i int) int {
	s := &t.slots[i]
	_, _, p := t.keyAt(i)
	if s.meta&flagExp != 0 {
		p += 8
	}
	if Kind(s.meta&kindMask) == KindBytes {
		p += int(s.num)
	}
	return p
}

// release drops slot i's record: arena bytes become garbage, objects are
// freed.
func (t *table) release(i int) {
	t.releaseRecord(i)
	s := &t.slots[i]
	if isObjectKind(Kind(s.meta & kindMask)) {
		t.freeObjAt(s.num)
	}
}

// releaseRecord drops slot i's record bytes, but not its object.
func (t *table) releaseRecord(i int) {
	s := &t.slots[i]
	if s.meta&flagOwnRec != 0 {
		t.freeObjAt(int64(s.off))
	} else {
		t.garbage += t.recordLen(i)
	}
}

func (t *table) freeObjAt(idx int64) {
	t.objs[idx] = nil
	t.measure(idx)
	t.setMine(idx, false)
	t.freeObj = append(t.freeObj, idx)
}

// isMine reports objs[idx]'s mine bit.
func (t *table) isMine(idx int64) bool {
	w := int(idx >> 6)
	return w < len(t.mine) && t.mine[w]&(1<<(idx&63)) != 0
}

func (t *table) setMine(idx int64, on bool) {
	w := int(idx >> 6)
	if !on {
		if w < len(t.mine) {
			t.mine[w] &^= 1 << (idx & 63)
		}
		return
	}
	for w >= len(t.mine) {
		t.mine = append(t.mine, 0)
	}
	t.mine[w] |= 1 << (idx & 63)
}

// mutableObj returns slot i's object for changing in place, first
// replacing it by a clone unless only this table refers to it.
func (t *table) mutableObj(i int) any {
	idx := t.slots[i].num
	if !t.isMine(idx) {
		t.objs[idx] = t.objs[idx].(Object).CloneObject()
		t.setMine(idx, true)
	}
	return t.objs[idx]
}

func (t *table) storeObj(o any) int64 {
	var idx int64
	if n := len(t.freeObj); n > 0 {
		idx = t.freeObj[n-1]
		t.freeObj = t.freeObj[:n-1]
		t.objs[idx] = o
	} else {
		t.objs = append(t.objs, o)
		idx = int64(len(t.objs) - 1)
	}
	t.measure(idx)
	return idx
}

// del removes slot i, shifting later slots of the probe run back so that
// lookups never need tombstones, then shrinks the table or compacts the
// arena when they have become mostly empty.
func (t *table) del(i int) {
	t.unlink(i)
	if !t.maybeShrink() {
		t.maybeCompact()
	}
}

// delSwept is del for active expiry's sweep. It compacts the arena only
// once garbage is three quarters of it, not half, and otherwise leaves that
// to the end of the sweep's pass (sweptAll): during a mass expiry most of
// what a compaction would copy dies moments later (compacting at half made
// BenchmarkExpireMass 74 ns per key instead of 41). The bound stays: with
// keys expiring all the time, a pass over a big shard can take minutes, and
// the arena holds at most four times its live records meanwhile.
func (t *table) delSwept(i int) {
	t.unlink(i)
	if !t.maybeShrink() {
		if t.isTight() {
			t.compactAt(1, 8)
		} else {
			t.compactAt(3, 4)
		}
	}
}

// unlink removes slot i: it releases the record and moves later slots of
// the probe run back, each into the hole if its ideal index is not in the
// cyclic range (hole, its index].
func (t *table) unlink(i int) {
	t.release(i)
	t.n--
	for j := t.next(i); t.slots[j].meta != 0; j = t.next(j) {
		k := t.ideal(t.slots[j].meta)
		if (j > i && (k <= i || k > j)) || (j < i && k <= i && k > j) {
			t.slots[i] = t.slots[j]
			if t.access != nil {
				t.access[i] = t.access[j]
			}
			i = j
		}
	}
	t.slots[i] = slot{}
	if t.access != nil {
		t.access[i] = 0
	}
}

// maybeShrink rebuilds a table that has become mostly empty (under an
// eighth full) at about half load, and frees an empty one entirely, so
// memory is returned when keys expire or are deleted. It reports whether it
// rebuilt (slot indexes then change).
//
// A slot's place follows its tag, so keys whose tags crowd into a narrow
// range would crowd into one long probe run of a smaller table, however
// empty the table is on average. Active expiry leaves keys exactly like
// that: it sweeps the slots in order, so halfway through a mass expiry the
// survivors are the keys of the slots it has not reached yet, a contiguous
// range of tags. Packed into a table of twice their number, they made one
// run thousands of slots long (each lookup and delete in it walking
// thousands of slots). So maybeShrink only shrinks to a size where no key
// would sit more than shrinkMaxRun slots past its ideal slot (fits), trying
// twice the size while that is still at most half the current size. When no
// size fits, it does not look again until the key count has fallen to a
// quarter (so that the checks stay amortized over the deletes), or until
// active expiry's sweep ends a pass (sweptAll).
func (t *table) maybeShrink() bool {
	if t.n == 0 {
		t.freeSlots(t.slots, t.mapped)
		*t = table{alloc: t.alloc, tight: t.tight} // nothing a frozen copy holds is reachable from here
		t.alloc.publish(nil)
		return true
	}
	if len(t.slots) <= 4*minSlots || t.n*8 >= len(t.slots) || (t.shrinkHold != 0 && t.n > t.shrinkHold) {
		return false
	}
	for size := max(minSlots, 2*t.n); size <= len(t.slots)/2; size *= 2 {
		if t.fits(size, shrinkMaxRun) {
			t.resize(size)
			t.compact()
			return true
		}
	}
	t.shrinkHold = t.n / 4
	return false
}

// sweptAll tells the table that active expiry has just looked at every
// slot, so no range of tags is left crowded by its sweep: it tries to
// shrink at once, even where maybeShrink declined to shrink a moment ago,
// and otherwise compacts the arena if delSwept left enough garbage. It
// reports whether the table was rebuilt or freed (slot indexes changed).
func (t *table) sweptAll() bool {
	t.shrinkHold = 0
	if t.maybeShrink() {
		return true
	}
	t.maybeCompact()
	return false
}

// fits reports whether a table of nslots slots would hold the keys with
// none more than maxRun slots past its ideal slot. It builds nothing: it
// visits the keys in tag order and follows where linear probing puts each
// (which slots a probing table fills does not depend on the order the keys
// arrive in, and in tag order each key lands just after the previous one
// or at its ideal slot, whichever is later).
func (t *table) fits(nslots, maxRun int) bool {
	old := t.slots
	start := 0
	for start < len(old) && old[start].meta != 0 {
		start++
	}
	last := -1 // where the previous key landed, not wrapped around
	land := func(m uint32) bool {
		i := int(uint64(m>>tagShift) * uint64(nslots) >> 24)
		last = max(i, last+1)
		return last-i <= maxRun
	}
	// Tag order: the keys of old's first run that sit at or after their
	// ideal slot, then the rest of old, then the keys of the first run that
	// wrapped around from the end.
	for j := 0; j < start; j++ {
		if m := old[j].meta; t.ideal(m) <= j && !land(m) {
			return false
		}
	}
	for _, sl := range old[start:] {
		if sl.meta != 0 && !land(sl.meta) {
			return false
		}
	}
	for j := 0; j < start; j++ {
		if m := old[j].meta; t.ideal(m) > j && !land(m) {
			return false
		}
	}
	// Keys that ran past the end wrap around onto the first slots.
	return last-nslots < maxRun
}

// overLoad reports whether n keys in nslots slots are more than the load
// factor allows (the table must grow first). MaxKeysPerShard keys in
// maxSlots slots are not.
func overLoad(n, nslots int) bool { return n*loadDen > nslots*loadNum }

// grow enlarges the slot array by half. Map.Set refuses a new key before
// the table would need more than maxSlots slots, so the panic here means
// that check was bypassed.
func (t *table) grow() {
	if len(t.slots) >= maxSlots {
		panic("shards: a shard table would exceed 2^24 slots: the caller did not check Room before adding a key")
	}
	t.resize(min(len(t.slots)+len(t.slots)/2, maxSlots))
}

// resize moves every slot into a fresh array of at least nslots slots,
// placing each by its tag (no key is rehashed), and frees the old array.
// Slots are re-placed in order of ideal index, starting after an empty slot
// (the load factor guarantees one), so each probe run is rebuilt in order.
func (t *table) resize(nslots int) {
	old, oldMapped, oldAccess := t.slots, t.mapped, t.access
	t.init(nslots)
	if oldAccess != nil {
		t.access = make([]uint16, len(t.slots))
	}
	t.shrinkHold = 0
	start := 0
	for start < len(old) && old[start].meta != 0 {
		start++
	}
	for j := start; j < len(old); j++ {
		t.place(old, oldAccess, j)
	}
	for j := range start {
		t.place(old, oldAccess, j)
	}
	t.freeSlots(old, oldMapped)
}

// place puts old[j] (an empty slot is skipped) at its ideal index or the
// first free slot after it, with its access stamp from oldAccess (if any).
func (t *table) place(old []slot, oldAccess []uint16, j int) {
	s := old[j]
	if s.meta == 0 {
		return
	}
	i := t.ideal(s.meta)
	for t.slots[i].meta != 0 {
		i = t.next(i)
	}
	t.slots[i] = s
	if oldAccess != nil {
		t.access[i] = oldAccess[j]
	}
}

func (t *table) isTight() bool { return t.tight != nil && t.tight.Load() }

// maybeCompact rewrites the arena without garbage once garbage is at least
// half of it (an eighth if tight), so the arena stays within twice the
// live records.
func (t *table) maybeCompact() {
	if t.isTight() {
		t.compactAt(1, 8)
		return
	}
	t.compactAt(1, 2)
}

// compactAt rewrites the arena without garbage once garbage is at least
// num/den of it (and at least garbageMin).
func (t *table) compactAt(num, den int) {
	if t.garbage < garbageMin || t.garbage*den < len(t.arena)*num {
		return
	}
	t.compact()
}

// compact copies the live records to a new arena of exactly their size.
func (t *table) compact() {
	fresh := make([]byte, 0, len(t.arena)-t.garbage)
	for i := range t.slots {
		if t.slots[i].meta == 0 || t.slots[i].meta&flagOwnRec != 0 {
			continue
		}
		off := int(t.slots[i].off)
		n := t.recordLen(i)
		t.slots[i].off = uint32(len(fresh))
		fresh = append(fresh, t.arena[off:off+n]...)
	}
	// A frozen copy may still share own records (sharedOwn), not this array.
	t.arena, t.garbage, t.sharedArena = fresh, 0, false
}

// eachLive calls fn for every slot holding a key whose expiry is after now,
// until fn returns false.
func (t *table) eachLive(now int64, fn func(key []byte, e Entry) bool) {
	for i := range t.slots {
		if t.slots[i].meta == 0 {
			continue
		}
		e := t.entry(i)
		if e.Exp != 0 && e.Exp <= now {
			continue
		}
		k, _, _ := t.keyAt(i)
		if !fn(k, e) {
			return
		}
	}
}

// reset empties the table, keeping nothing.
func (t *table) reset() {
	t.freeSlots(t.slots, t.mapped)
	*t = table{alloc: t.alloc, tight: t.tight}
	t.alloc.publish(nil)
}
