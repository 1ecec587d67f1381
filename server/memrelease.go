package server

// memReleaser returns memory to the OS after the keyspace shrinks a lot
// (mass expiry, FLUSHALL, deletions). The tables freed by then are garbage
// that only a collection reclaims, and with few allocations going on none
// may run for minutes; the Go scavenger would then return the pages only
// slowly. So after a big drop one forced collection and scavenge
// (debug.FreeOSMemory) is worth it. Checked once a second by the
// background loop; not safe for concurrent use.
//
// The keyspace size (the tables' bytes, not the Go heap, which keeps the
// freed tables until a collection) is what is watched: a release happens
// once it has halved since the highest size seen after the last release,
// by at least releaseMinDrop. So a mass expiry releases a few times as it
// halves (each release costs one collection, cheap here: the tables are
// pointer-free) and once more when it ends, and a keyspace that only
// churns never triggers one.
type memReleaser struct {
	peak    int64 // largest keyspace size seen since the last release
	release func()
}

// releaseMinDrop is the least keyspace shrinkage worth a forced release.
const releaseMinDrop = 1 << 20

// tick takes the current keyspace size in bytes and reports whether it
// released memory.
func (m *memReleaser) tick(dataset int64) bool {
	if dataset > m.peak {
		m.peak = dataset
		return false
	}
	if m.peak-dataset >= releaseMinDrop && dataset <= m.peak/2 {
		m.release()
		m.peak = dataset
		return true
	}
	return false
}
