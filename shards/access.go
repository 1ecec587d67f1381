package shards

import "math"

// Access tracking for the eviction policies (evict.go), like Redis's LRU
// and LFU fields of an object.
//
// While the Map tracks accesses, every table keeps one 16-bit stamp per
// slot in a parallel array (table.access), allocated on the first touch
// after tracking began (every key then counts as accessed at that moment)
// and moved with its slot. A lookup that finds a key
// touches it; so does storing a new key. Find (replay) and iteration do
// not. The meaning of a stamp depends on the mode, and a stamp written
// under one mode is read, as it is, under the other (Redis does the same
// when the policy changes at run time):
//
//   - TrackLRU: the access clock in seconds (SetAccessClock), modulo 2^16.
//     A key's idle time is the clock minus its stamp, so idle times wrap
//     after about 18 hours (Redis keeps 24 bits: 194 days). Resolution: 1 s.
//   - TrackLFU: the high byte is the access clock in minutes modulo 256,
//     the low byte a logarithmic access counter (Redis's, with its
//     lfu-log-factor and lfu-decay-time): a new key starts at 5; an access
//     first takes one off per lfu-decay-time minutes since the last
//     access (so elapsed minutes wrap after 4 h 16 min), then adds one
//     with probability 1/((counter-5)*factor+1).
//
// With tracking off (TrackNone, the default) nothing is stored and a
// lookup pays nothing; this is the mode for the policies that need no
// stamps (noeviction, *-random, volatile-ttl).
//
// The clock is set from outside (the server sets it a few times a second
// from its own clock), so the package still never reads a clock.

// Tracking is what a Map records about accesses.
type Tracking uint32

const (
	TrackNone Tracking = iota
	TrackLRU
	TrackLFU
)

// lfuInit is the counter of a new key (Redis's LFU_INIT_VAL).
const lfuInit = 5

// SetTracking sets what accesses record from now on.
func (m *Map) SetTracking(t Tracking) { m.tracking.Store(uint32(t)) }

// SetAccessClock sets the clock that access stamps read, from now in Unix
// nanoseconds. Call it often enough for its resolution (a second).
func (m *Map) SetAccessClock(now int64) { m.lruClock.Store(uint32(now / 1e9)) }

// SetLFUParams sets Redis's lfu-log-factor and lfu-decay-time (minutes;
// 0: counters never decay).
func (m *Map) SetLFUParams(logFactor, decayMinutes int) {
	m.lfuFactor.Store(uint32(logFactor))
	m.lfuDecay.Store(uint32(decayMinutes))
}

// touch records an access to slot i of s (fresh: a key just stored).
// Requires s locked.
func (m *Map) touch(s *shard, i int, fresh bool) {
	mode := Tracking(m.tracking.Load())
	if mode == TrackNone {
		return
	}
	t := &s.t
	clock := m.lruClock.Load()
	if t.access == nil {
		// Keys stored before tracking began count as accessed now (LRU)
		// or as new (LFU), not as idle since 1970 or never used.
		t.access = make([]uint16, len(t.slots))
		first := uint16(clock)
		if mode == TrackLFU {
			first = uint16(uint8(clock/60))<<8 | lfuInit
		}
		for j := range t.access {
			t.access[j] = first
		}
	}
	switch mode {
	case TrackLRU:
		t.access[i] = uint16(clock)
	case TrackLFU:
		minutes := uint8(clock / 60)
		n := uint8(lfuInit)
		if !fresh {
			n = lfuIncr(m.lfuDecr(t.access[i], minutes), m.lfuFactor.Load(), s.random())
		}
		t.access[i] = uint16(minutes)<<8 | uint16(n)
	}
}

// lfuDecr returns the counter of stamp after the decay due at minutes.
func (m *Map) lfuDecr(stamp uint16, minutes uint8) uint8 {
	n := uint8(stamp)
	decay := m.lfuDecay.Load()
	if decay == 0 {
		return n
	}
	periods := uint32(minutes-uint8(stamp>>8)) / decay
	if periods >= uint32(n) {
		return 0
	}
	return n - uint8(periods)
}

// lfuIncr adds one to counter n with probability 1/((n-5)*factor+1); r is
// a random 64-bit number.
func lfuIncr(n uint8, factor uint32, r uint64) uint8 {
	if n == math.MaxUint8 {
		return n
	}
	base := float64(0)
	if n > lfuInit {
		base = float64(n - lfuInit)
	}
	if float64(r>>11)/(1<<53) < 1/(base*float64(factor)+1) {
		n++
	}
	return n
}

// random returns the next number of s's xorshift generator. Requires s
// locked.
func (s *shard) random() uint64 {
	x := s.rng
	if x == 0 {
		x = 0x9e3779b97f4a7c15 ^ uint64(s.t.n+1)
	}
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	s.rng = x
	return x
}

// AccessInfo returns what the access stamp of key says without touching
// it: its idle time in seconds (TrackLRU) or its decayed LFU counter
// (TrackLFU), for OBJECT IDLETIME and OBJECT FREQ. It returns 0 for a key
// never stamped, and ok false if the key is absent or expired at now.
// Requires key's shard locked.
func (m *Map) AccessInfo(key []byte, now int64) (idle int64, freq int, ok bool) {
	s, tag := m.locate(key)
	i := s.t.find(key, tag)
	if i < 0 {
		return 0, 0, false
	}
	if exp := s.t.expAt(i); exp != 0 && exp <= now {
		return 0, 0, false
	}
	if s.t.access == nil {
		return 0, 0, true
	}
	stamp := s.t.access[i]
	clock := m.lruClock.Load()
	idle = int64(uint16(uint16(clock) - stamp))
	freq = int(m.lfuDecr(stamp, uint8(clock/60)))
	return idle, freq, true
}
