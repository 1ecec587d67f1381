package shards

import (
	"fmt"
	"syscall"
	"unsafe"
)

// mapSlots maps n zeroed slots (n*slotBytes is a multiple of hugePage) at a
// huge-page-aligned address and asks for huge pages. The mapping is made
// one huge page larger and trimmed, because mmap only promises page
// alignment.
func mapSlots(n int) ([]slot, error) {
	size := n * slotBytes
	mem, err := syscall.Mmap(-1, 0, size+hugePage, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("shards: map %d slots: %w", n, err)
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	head := int((hugePage - base%hugePage) % hugePage)
	if head > 0 {
		munmap(base, head)
	}
	if tail := hugePage - head; tail > 0 {
		munmap(base+uintptr(head+size), tail)
	}
	aligned := mem[head : head+size : head+size]
	// Advice only: without transparent huge pages the array still works.
	_ = syscall.Madvise(aligned, madvHugepage)
	return unsafe.Slice((*slot)(unsafe.Pointer(unsafe.SliceData(aligned))), n), nil
}

// unmapSlots unmaps an array made by mapSlots.
func unmapSlots(s []slot) {
	munmap(uintptr(unsafe.Pointer(unsafe.SliceData(s))), cap(s)*slotBytes)
}

// madvHugepage is MADV_HUGEPAGE, which package syscall does not name.
const madvHugepage = 14

func munmap(addr uintptr, n int) {
	// An munmap of a range this package mapped can only fail on a bug.
	if _, _, errno := syscall.Syscall(syscall.SYS_MUNMAP, addr, uintptr(n), 0); errno != 0 {
		panic(fmt.Sprintf("shards: munmap %#x+%d: %v", addr, n, errno))
	}
}

const mapSupported = true
