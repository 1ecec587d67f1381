//go:build amd64 || arm64

package shards

// prefetch asks the CPU to start loading the cache line at addr. It never
// faults, whatever addr is, and does not wait for the load.
//
//go:noescape
func prefetch(addr uintptr)
