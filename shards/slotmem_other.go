//go:build !(linux && (amd64 || arm64 || loong64 || mips64 || mips64le || ppc64 || ppc64le || riscv64))

package shards

import "errors"

// The portable fallback: no mappings, every slot array lives on the Go
// heap (slotAlloc.alloc falls back to make when mapSlots fails).

func mapSlots(int) ([]slot, error) {
	return nil, errors.New("shards: no slot mappings on this platform")
}

func unmapSlots([]slot) {}

const mapSupported = false
