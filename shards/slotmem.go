package shards

import (
	"sync/atomic"
	"unsafe"
)

// Slot arrays and huge pages.
//
// At millions of keys a lookup's first memory access, the slot, misses
// every cache, and with 4 KiB pages it also misses the TLB: the page walk
// costs as much again. A slot array of at least mappedMin bytes therefore
// gets its own anonymous mapping, rounded up to whole 2 MiB huge pages and
// marked MADV_HUGEPAGE, so the kernel backs it with huge pages where
// transparent huge pages are enabled ("always" or "madvise"). The slots are
// pointer-free, so the garbage collector need not know about them; the
// table frees a mapping itself (munmap) the moment it replaces or drops the
// array, which also hands the memory straight back to the system.
//
// A mapped array uses every slot its pages hold (len is the whole mapping),
// so the rounding up lowers the load factor instead of wasting memory.
// Smaller arrays, frozen snapshot copies, and platforms other than 64-bit
// Linux (slotmem_other.go) use the Go heap. The mapping is made with raw
// system calls, not syscall.Mmap, so that nothing records it
// (slotmem_linux.go).

const (
	slotBytes = 16
	hugePage  = 2 << 20
	// mappedMin is the least slot array size that gets its own mapping:
	// half a huge page, so rounding up never more than doubles it.
	mappedMin = hugePage / 2
)

// slotAlloc allocates and frees slot arrays and counts the bytes mapped
// outside the Go heap. The zero value allocates on the heap only.
type slotAlloc struct {
	mapped *atomic.Int64 // nil: never map
	hint   *slotHint     // nil: publish nothing
}

// slotHint publishes where a shard's slot array is, for PrefetchSlot to
// read without the shard lock. The two words may be seen torn or stale;
// they only ever feed a prefetch, which cannot fault, so that costs a
// wasted cache line at worst. The table stores them (under the lock)
// whenever it replaces its array.
type slotHint struct {
	base atomic.Uintptr
	n    atomic.Uint64
}

// publish records s as the table's current slot array.
func (a slotAlloc) publish(s []slot) {
	if a.hint == nil {
		return
	}
	a.hint.base.Store(uintptr(unsafe.Pointer(unsafe.SliceData(s))))
	a.hint.n.Store(uint64(len(s)))
}

// alloc returns a zeroed array of at least n slots and whether it is mapped.
func (a slotAlloc) alloc(n int) ([]slot, bool) {
	if a.mapped == nil || n*slotBytes < mappedMin {
		return make([]slot, n), false
	}
	s, err := mapSlots(min(roundUp(n*slotBytes, hugePage)/slotBytes, maxSlots))
	if err != nil {
		return make([]slot, n), false
	}
	a.mapped.Add(int64(cap(s) * slotBytes))
	return s, true
}

// free releases an array alloc returned as mapped. The caller must not use
// s afterwards.
func (a slotAlloc) free(s []slot) {
	a.mapped.Add(-int64(cap(s) * slotBytes))
	unmapSlots(s)
}

func roundUp(n, to int) int { return (n + to - 1) / to * to }
