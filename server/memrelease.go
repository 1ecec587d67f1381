package server

// memReleaser returns memory to the OS after the keyspace shrinks a lot
// (mass expiry, FLUSHALL, deletions) or large client buffers are freed
// (big requests done, hostile half-sent requests whose connections closed,
// replies or subscriber queues that were large). What they held is garbage
// that only a collection reclaims, and with few allocations going on none
// may run for minutes; the Go scavenger would then return the pages only
// slowly. So after a big drop one forced collection and scavenge
// (debug.FreeOSMemory) is worth it. Checked once a second by the
// background loop, so at most one release a second; not safe for
// concurrent use.
//
// The keyspace size (the tables' bytes, not the Go heap, which keeps the
// freed tables until a collection) is watched: a release happens once it
// has halved since the highest size seen after the last release, by at
// least releaseMinDrop. So a mass expiry releases a few times as it halves
// (each release costs one collection, cheap here: the tables are
// pointer-free) and once more when it ends, and a keyspace that only
// churns never triggers one.
//
// Client buffers are watched through the bytes of large buffers given back
// (clientmem.go: beyond the small buffers every connection has, so that
// connection churn alone does not count): a release happens once
// releaseMinClientBytes more have been given back since the last one.
type memReleaser struct {
	peak        int64 // largest keyspace size seen since the last release
	clientFreed int64 // large client buffer bytes given back, as of the last release
	release     func()
}

const (
	// releaseMinDrop is the least keyspace shrinkage worth a forced release.
	releaseMinDrop = 1 << 20
	// releaseMinClientBytes is the least freeing of large client buffers
	// worth a forced release.
	releaseMinClientBytes = 32 << 20
)

// tick takes the current keyspace size and the large client buffer bytes
// given back so far (a running total), and reports whether it released
// memory.
func (m *memReleaser) tick(dataset, clientFreed int64) bool {
	keyspaceDrop := m.peak-dataset >= releaseMinDrop && dataset <= m.peak/2
	clientDrop := clientFreed-m.clientFreed >= releaseMinClientBytes
	if dataset > m.peak {
		m.peak = dataset
	}
	if !keyspaceDrop && !clientDrop {
		return false
	}
	m.release()
	m.peak, m.clientFreed = dataset, clientFreed
	return true
}
