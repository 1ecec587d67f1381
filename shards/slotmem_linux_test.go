//go:build linux && (amd64 || arm64 || loong64 || mips64 || mips64le || ppc64 || ppc64le || riscv64)

package shards

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"unsafe"
)

// TestMapSlotsKeepsNoRecord maps and unmaps many slot arrays and checks
// that the Go heap does not grow with them. mapSlots used to map with
// syscall.Mmap, which records every mapping in a map of package syscall's
// until syscall.Munmap removes it; the table unmaps a trimmed sub-range
// with a raw munmap instead, so the record kept one entry (some 50 bytes)
// per mapping ever made, for the life of the process.
//
// syscall's record is keyed by the mapping's last byte, and the kernel
// hands an unmapped range straight back to the next mmap, so mapping and
// unmapping in a loop would overwrite one entry again and again. A spacer
// mapping (one huge page of address space, PROT_NONE, so it costs no
// memory) after each round moves the next array to a new address, as the
// interleaved growth of many shards does in a server.
func TestMapSlotsKeepsNoRecord(t *testing.T) {
	var mapped atomic.Int64
	a := slotAlloc{mapped: &mapped}
	n := hugePage / slotBytes
	var spacers []uintptr
	defer func() {
		for _, p := range spacers {
			syscall.Syscall(syscall.SYS_MUNMAP, p, hugePage, 0)
		}
	}()
	cycle := func(count int) {
		for j := range count {
			s, ok := a.alloc(n)
			if !ok {
				t.Skip("alloc did not map (mmap failed)")
			}
			if len(s) != n || cap(s) != n {
				t.Fatalf("alloc(%d): len %d cap %d", n, len(s), cap(s))
			}
			if base := uintptr(unsafe.Pointer(unsafe.SliceData(s))); base%hugePage != 0 {
				t.Fatalf("mapping at %#x is not huge-page aligned", base)
			}
			if j%500 == 0 { // touching costs a zeroed (huge) page
				s[0].num, s[n-1].num = 1, 2
				if s[0].num+s[n-1].num != 3 {
					t.Fatal("mapped slots do not hold what was stored")
				}
			}
			a.free(s)
			p, _, errno := syscall.Syscall6(syscall.SYS_MMAP, 0, hugePage, syscall.PROT_NONE,
				syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS, ^uintptr(0), 0)
			if errno != 0 {
				t.Fatalf("spacer mmap: %v", errno)
			}
			spacers = append(spacers, p)
		}
	}
	heap := func() int64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	const count = 2000
	spacers = make([]uintptr, 0, count+16)
	cycle(16) // warm up whatever is allocated once
	before := heap()
	cycle(count)
	after := heap()
	if got := mapped.Load(); got != 0 {
		t.Fatalf("%d bytes still counted as mapped", got)
	}
	growth := after - before
	t.Logf("heap grew by %d bytes over %d mappings", growth, count)
	if growth > count*8 {
		t.Fatalf("heap grew by %d bytes over %d mappings (%d per mapping): something records every mapping", growth, count, growth/count)
	}
}

// TestMapSlotsAdvisesHugePages checks that a mapped array is one mapping
// of its own, aligned, and marked MADV_HUGEPAGE ("hg" in the VmFlags that
// /proc/self/smaps shows for it).
func TestMapSlotsAdvisesHugePages(t *testing.T) {
	n := 2 * hugePage / slotBytes
	s, err := mapSlots(n)
	if err != nil {
		t.Skipf("mapSlots: %v", err)
	}
	defer unmapSlots(s)
	base := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	if base%hugePage != 0 || len(s) != n || cap(s) != n {
		t.Fatalf("mapped at %#x with len %d cap %d", base, len(s), cap(s))
	}
	for i := range s {
		if s[i] != (slot{}) {
			t.Fatalf("slot %d not zero", i)
		}
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	var in bool
	for line := range strings.Lines(string(smaps)) {
		var lo, hi uintptr
		if _, err := fmt.Sscanf(line, "%x-%x ", &lo, &hi); err == nil {
			in = lo <= base && base < hi
			if in && (lo != base || hi != base+uintptr(n*slotBytes)) {
				t.Errorf("the array %#x-%#x lies in the mapping %#x-%#x", base, base+uintptr(n*slotBytes), lo, hi)
			}
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			if !slices.Contains(strings.Fields(line)[1:], "hg") {
				t.Fatalf("the array's mapping is not marked MADV_HUGEPAGE: %s", line)
			}
			return
		}
	}
	t.Fatalf("mapping %#x not found in /proc/self/smaps", base)
}
