//go:build linux && (amd64 || arm64 || loong64 || mips64 || mips64le || ppc64 || ppc64le || riscv64)

package shards

import (
	"fmt"
	"syscall"
	"unsafe"
)

// Slot arrays are mapped and unmapped with raw system calls. syscall.Mmap
// would record every mapping in package syscall's own table until
// syscall.Munmap of the whole mapping removes it; since mapSlots trims its
// mapping and the table unmaps what is left with a raw munmap, that record
// would grow by one entry for every array ever mapped. The raw mmap
// records nothing, so nothing outlives the mapping.
//
// The build constraint lists the 64-bit platforms where the mmap system
// call takes its six arguments directly (32-bit ones use mmap2, s390x
// passes a struct); elsewhere slotmem_other.go keeps every array on the
// heap.

// mapSlots maps n zeroed slots (n*slotBytes is a multiple of hugePage) at a
// huge-page-aligned address and asks for huge pages. The mapping is made
// one huge page larger and trimmed, because mmap only promises page
// alignment.
func mapSlots(n int) ([]slot, error) {
	size := n * slotBytes
	base, err := mmap(size + hugePage)
	if err != nil {
		return nil, fmt.Errorf("shards: map %d slots: %w", n, err)
	}
	head := int((hugePage - base%hugePage) % hugePage)
	if head > 0 {
		munmap(base, head)
	}
	if tail := hugePage - head; tail > 0 {
		munmap(base+uintptr(head+size), tail)
	}
	addr := base + uintptr(head)
	// Advice only: without transparent huge pages the array still works.
	_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, addr, uintptr(size), syscall.MADV_HUGEPAGE)
	// The memory is outside the Go heap, so the garbage collector neither
	// tracks nor moves it: turning the address into a pointer is safe.
	p := *(*unsafe.Pointer)(unsafe.Pointer(&addr))
	return unsafe.Slice((*slot)(p), n), nil
}

// unmapSlots unmaps an array made by mapSlots.
func unmapSlots(s []slot) {
	munmap(uintptr(unsafe.Pointer(unsafe.SliceData(s))), cap(s)*slotBytes)
}

// mmap maps n bytes of private, anonymous, readable and writable memory.
func mmap(n int) (uintptr, error) {
	addr, _, errno := syscall.Syscall6(syscall.SYS_MMAP, 0, uintptr(n),
		syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS,
		^uintptr(0), 0) // fd -1, offset 0
	if errno != 0 {
		return 0, errno
	}
	return addr, nil
}

func munmap(addr uintptr, n int) {
	// An munmap of a range this package mapped can only fail on a bug.
	if _, _, errno := syscall.Syscall(syscall.SYS_MUNMAP, addr, uintptr(n), 0); errno != 0 {
		panic(fmt.Sprintf("shards: munmap %#x+%d: %v", addr, n, errno))
	}
}

const mapSupported = true
