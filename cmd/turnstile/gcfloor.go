package main

import (
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// gcFloor is the ballast behind --gc-floor: size bytes of heap that are
// never touched (address space, not RSS) and that the Go collector counts
// as live. With GOGC 25 and a keyspace of a few MiB, the collector would
// run after every few hundred KiB of garbage (scripts and connections make
// some); with the ballast, after about a quarter of the floor.
//
// The ballast is dropped, for good, once the heap without it outgrows the
// floor, and the garbage it let pile up is collected and given back to
// the OS at once (release): a large keyspace is then collected at GOGC of
// itself alone. Kept, the ballast let that much more garbage pile up
// whatever the keyspace's size: 10^6 GCRA keys took 65-67 B of RSS each
// with a 64 MiB ballast, 57-60 with this one (58 without any). It is
// never allocated again: a new ballast could reuse freed pages, which the
// runtime zeroes, and zeroing would touch them.
//
// Locking: check and watch run on one goroutine (the only one that touches
// ballast); held is read by the server from any goroutine.
type gcFloor struct {
	ballast []byte
	held    atomic.Int64
	release func() // after the drop: debug.FreeOSMemory
}

// newGCFloor allocates a ballast of size bytes (none when size <= 0).
func newGCFloor(size int64) *gcFloor {
	f := &gcFloor{release: debug.FreeOSMemory}
	if size > 0 {
		f.ballast = make([]byte, size)
		f.held.Store(size)
	}
	return f
}

// Held reports the bytes of ballast held now (server.Config.GoBallast).
func (f *gcFloor) Held() int64 { return f.held.Load() }

// check drops the ballast when live, the live heap bytes the collector
// last measured (the ballast included), exceed twice the ballast: the
// heap without it has outgrown the floor. It reports whether it dropped.
func (f *gcFloor) check(live int64) bool {
	n := int64(len(f.ballast))
	if n == 0 || live-n <= n {
		return false
	}
	f.ballast = nil
	f.held.Store(0)
	f.release()
	return true
}

// watch calls check with the collector's live heap every interval until
// stop is closed or the ballast is gone.
func (f *gcFloor) watch(stop <-chan struct{}, every time.Duration) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	t := time.NewTicker(every)
	defer t.Stop()
	for f.Held() > 0 {
		select {
		case <-stop:
			return
		case <-t.C:
			metrics.Read(sample)
			if sample[0].Value.Kind() == metrics.KindUint64 {
				f.check(int64(sample[0].Value.Uint64()))
			}
		}
	}
}
