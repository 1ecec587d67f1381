package coll

import (
	"unsafe"

	"github.com/turnstile/turnstile/shards"
)

// PrefetchData methods (shards.ValuePrefetcher): a connection with
// pipelined requests asks a value to start loading its packed data a
// request before the value is used, so that a small collection costs one
// cache miss fewer. They read only the value's own header, which the
// previous stage already prefetched, and change nothing.

func prefetchBytes(b []byte) {
	if len(b) > 0 {
		shards.Prefetch(unsafe.Pointer(unsafe.SliceData(b)))
	}
}

// PrefetchData starts loading the packed fields.
func (h *Hash) PrefetchData() { prefetchBytes(h.packed) }

// PrefetchData starts loading the packed members.
func (s *Set) PrefetchData() {
	prefetchBytes(s.ints)
	prefetchBytes(s.packed)
}

// PrefetchData starts loading the packed members.
func (z *ZSet) PrefetchData() { prefetchBytes(z.packed) }

// PrefetchData starts loading a small list's node (both ends of it).
func (l *List) PrefetchData() {
	if !l.quick && l.one.head < len(l.one.buf) {
		b := l.one.buf[l.one.head:]
		prefetchBytes(b)
		prefetchBytes(b[len(b)-1:])
	}
}
