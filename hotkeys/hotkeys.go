// Package hotkeys finds the heaviest keys of a stream with bounded memory
// (seed §6: heavy hitters found with a count-min sketch): a count-min
// sketch with conservative update estimates every key's count, and a
// small top-K list keeps the keys with the highest estimates.
//
// # Accuracy
//
// A count-min estimate never undercounts. With depth d and width w it
// overcounts by more than e*N/w (N: the total count) with probability at
// most e^-d; conservative update (raise each row only up to the new
// estimate) makes overcounts smaller still. A key enters the top list when
// its estimate exceeds the smallest estimate there, so a key whose true
// count is above that of the K-th key plus the sketch's error is listed.
//
// # Recent, not all-time
//
// Decay halves every counter: the server calls it on a timer, so counts
// fade with a half-life of that period and the list shows what is hot now.
//
// # Cost and concurrency
//
// Add does d multiply-free index computations, d reads and at most d
// writes, plus a scan of the K hashes when the estimate reaches the list;
// it allocates only when a key enters the list (a copy of the key). A
// Sketch is not safe for concurrent use: the server keeps one per keyspace
// shard and updates it under that shard's lock, which the command holds
// anyway.
package hotkeys

import (
	"slices"
	"strings"
)

// Item is a key and its estimated count.
type Item struct {
	Key   string
	Count uint64
	hash  uint64
}

// Sketch is a count-min sketch with a top-K list.
type Sketch struct {
	depth  int
	mask   uint64
	counts []uint32 // depth rows of width counters
	k      int
	top    []Item // at most k; unordered
	minIdx int    // index of the smallest count in top when len(top) == k
}

// New returns a sketch of depth rows of width counters (width rounded up to
// a power of two) keeping the k heaviest keys. Its memory is 4*depth*width
// bytes plus the k keys.
func New(depth, width, k int) *Sketch {
	depth = max(depth, 1)
	w := 1
	for w < width {
		w <<= 1
	}
	return &Sketch{depth: depth, mask: uint64(w - 1), counts: make([]uint32, depth*w), k: max(k, 1)}
}

// Bytes is the sketch's memory, without the listed keys' bytes.
func (s *Sketch) Bytes() int { return 4*len(s.counts) + s.k*int(itemSize) }

const itemSize = 16 + 8 + 8 // string header, count, hash

// Add counts n more for key, whose 64-bit hash (any good hash, e.g. the
// keyspace's xxhash) is h.
func (s *Sketch) Add(h uint64, key []byte, n uint32) {
	w := int(s.mask + 1)
	h1, h2 := h, h>>32|1 // Kirsch-Mitzenmacher: row i uses h1 + i*h2
	est := uint32(1<<32 - 1)
	for i := range s.depth {
		c := s.counts[i*w+int((h1+uint64(i)*h2)&s.mask)]
		est = min(est, c)
	}
	next := est + n
	if next < est {
		next = 1<<32 - 1 // saturate
	}
	for i := range s.depth {
		p := &s.counts[i*w+int((h1+uint64(i)*h2)&s.mask)]
		if *p < next {
			*p = next
		}
	}
	s.offer(h, key, uint64(next))
}

// offer puts key with estimate c into the top list if it belongs there.
func (s *Sketch) offer(h uint64, key []byte, c uint64) {
	if len(s.top) == s.k && c <= s.top[s.minIdx].Count {
		return // the common case: a cold key
	}
	for i := range s.top {
		if s.top[i].hash == h && s.top[i].Key == string(key) {
			s.top[i].Count = c
			if i == s.minIdx {
				s.findMin()
			}
			return
		}
	}
	it := Item{Key: string(key), Count: c, hash: h}
	if len(s.top) < s.k {
		s.top = append(s.top, it)
	} else {
		s.top[s.minIdx] = it
	}
	s.findMin()
}

func (s *Sketch) findMin() {
	s.minIdx = 0
	for i := range s.top {
		if s.top[i].Count < s.top[s.minIdx].Count {
			s.minIdx = i
		}
	}
}

// Decay halves every count, so that what was hot long ago fades.
func (s *Sketch) Decay() {
	for i, c := range s.counts {
		s.counts[i] = c >> 1
	}
	kept := s.top[:0]
	for _, it := range s.top {
		if it.Count >>= 1; it.Count > 0 {
			kept = append(kept, it)
		}
	}
	clear(s.top[len(kept):])
	s.top = kept
	s.findMin()
}

// Reset forgets everything.
func (s *Sketch) Reset() {
	clear(s.counts)
	clear(s.top)
	s.top = s.top[:0]
	s.minIdx = 0
}

// AppendTop appends the listed keys to dst; Merge sorts lists of several
// sketches.
func (s *Sketch) AppendTop(dst []Item) []Item { return append(dst, s.top...) }

// Merge sorts items by count, heaviest first (ties by key), and keeps the
// first n. The sketches of disjoint key sets (one per shard) merge this
// way without double counting.
func Merge(items []Item, n int) []Item {
	slices.SortFunc(items, func(a, b Item) int {
		if a.Count != b.Count {
			if a.Count > b.Count {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Key, b.Key)
	})
	return items[:min(n, len(items))]
}
