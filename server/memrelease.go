package server

import (
	"runtime/debug"
	"runtime/metrics"
)

// memReleaser returns memory to the OS after the keyspace shrinks a lot
// (mass expiry, FLUSHALL). Go's background scavenger would return it too,
// but slowly; after a big drop it is worth one forced collection. Checked
// once a second by the background loop; not safe for concurrent use.
type memReleaser struct {
	peak uint64 // highest heap seen since the last release
}

// releaseMinDrop is the least heap shrinkage worth a forced release.
const releaseMinDrop = 32 << 20

func (m *memReleaser) tick() {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	heap := s[0].Value.Uint64()
	if heap > m.peak {
		m.peak = heap
		return
	}
	if m.peak-heap >= releaseMinDrop && heap < m.peak/2 {
		debug.FreeOSMemory()
		m.peak = heap
	}
}
