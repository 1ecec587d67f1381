package ratelimit

import (
	"encoding/binary"
	"fmt"
	"strings"
	"time"
)

// Algo names an algorithm.
type Algo uint8

// The algorithms, as stored (never renumber).
const (
	AlgoGCRA Algo = 1 + iota
	AlgoFixed
	AlgoSliding
	AlgoLog
	AlgoQueue
	AlgoLease
)

var algoNames = [...]string{AlgoGCRA: "gcra", AlgoFixed: "fixed", AlgoSliding: "sliding", AlgoLog: "log", AlgoQueue: "queue", AlgoLease: "lease"}

func (a Algo) String() string {
	if int(a) < len(algoNames) && algoNames[a] != "" {
		return algoNames[a]
	}
	return fmt.Sprintf("algo(%d)", uint8(a))
}

// ParseAlgo reads an algorithm's name, in any case.
func ParseAlgo(s string) (Algo, bool) {
	for a, name := range algoNames { // the usual spellings, ASCII: no folding tables
		if name != "" && len(s) == len(name) && asciiEqualFold(s, name) {
			return Algo(a), true
		}
	}
	for a, name := range algoNames {
		if name != "" && strings.EqualFold(s, name) {
			return Algo(a), true
		}
	}
	return 0, false
}

// asciiEqualFold reports whether s equals lower, a lower-case ASCII
// name of the same length, ignoring the case of ASCII letters.
func asciiEqualFold(s, lower string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != lower[i] && c|0x20 != lower[i] {
			return false
		}
	}
	return true
}

// State is a key's whole value: the algorithm, the rule it last ran with,
// and the algorithm's state (only the field of Algo is meaningful).
type State struct {
	Algo    Algo
	Rule    Rule
	GCRA    GCRAState
	Fixed   FixedState
	Sliding SlidingState
	Log     LogState
	Queue   QueueState
	Lease   LeaseState
}

// Decide applies a request of cost at now with st's algorithm and rule
// (not for AlgoLease: see Rule.Acquire), returning the decision and the
// state after the request (a LOG state shares st's entries' backing
// array: see Rule.Log).
func Decide(st State, now, cost int64) (Decision, State) {
	d := st.Apply(now, cost)
	return d, st
}

// Apply is Decide in place, without copying the state: st becomes the
// state after the request.
func (st *State) Apply(now, cost int64) Decision {
	var d Decision
	switch st.Algo {
	case AlgoGCRA:
		d, st.GCRA = st.Rule.GCRA(st.GCRA, now, cost)
	case AlgoFixed:
		d, st.Fixed = st.Rule.Fixed(st.Fixed, now, cost)
	case AlgoSliding:
		d, st.Sliding = st.Rule.Sliding(st.Sliding, now, cost)
	case AlgoLog:
		d, st.Log = st.Rule.Log(st.Log, now, cost)
	case AlgoQueue:
		d, st.Queue = st.Rule.Queue(st.Queue, now, cost)
	}
	return d
}

// magic starts every encoded state: a NUL (no text value starts with
// one by accident), "RL" and the format version.
const magic = "\x00RL\x01"

// IsState tells whether a stored value is an encoded State (of any
// version this build reads).
func IsState(b []byte) bool { return len(b) > len(magic) && string(b[:len(magic)]) == magic }

// logPad is the multiple of bytes a LOG state's encoding is padded to
// (with zeros after the log; states written unpadded, by earlier builds,
// still decode).
const logPad = 32

// AppendState appends st's encoding to dst: magic, the algorithm, the
// rule (limit, period in ms, burst) and the algorithm's fields, all
// unsigned varints (a LOG state's in the summed layout of logsummed.go,
// then zeros, see logPad). Periods are whole milliseconds (see MinPeriod;
// ParsePeriod only makes such).
func AppendState(dst []byte, st *State) []byte {
	start := len(dst)
	algo := byte(st.Algo)
	if st.Algo == AlgoLog {
		algo = logSummed // logsummed.go
	}
	dst = appendHead(dst, algo, st.Rule)
	switch st.Algo {
	case AlgoGCRA:
		dst = binary.AppendUvarint(dst, uint64(st.GCRA.TAT))
		dst = binary.AppendUvarint(dst, uint64(st.GCRA.Lent))
	case AlgoFixed:
		dst = binary.AppendUvarint(dst, uint64(st.Fixed.Window))
		dst = binary.AppendUvarint(dst, uint64(st.Fixed.Count))
	case AlgoSliding:
		dst = binary.AppendUvarint(dst, uint64(st.Sliding.Window))
		dst = binary.AppendUvarint(dst, uint64(st.Sliding.Cur))
		dst = binary.AppendUvarint(dst, uint64(st.Sliding.Prev))
	case AlgoLog:
		dst = appendLogSummed(dst, st.Log)
		dst = padLog(dst, start)
	case AlgoQueue:
		dst = binary.AppendUvarint(dst, uint64(st.Queue.Free))
	case AlgoLease:
		dst = binary.AppendUvarint(dst, st.Lease.Next)
		dst = binary.AppendUvarint(dst, uint64(len(st.Lease.Leases)))
		for _, l := range st.Lease.Leases {
			dst = binary.AppendUvarint(dst, l.ID)
			dst = binary.AppendUvarint(dst, uint64(l.Exp))
			dst = binary.AppendUvarint(dst, uint64(l.Cost))
		}
	}
	return dst
}

// appendHead appends what every encoded state starts with: magic, the
// algorithm byte, and the rule (limit, period in ms, burst).
func appendHead(dst []byte, algo byte, r Rule) []byte {
	dst = append(dst, magic...)
	dst = append(dst, algo)
	dst = binary.AppendUvarint(dst, uint64(r.Limit))
	dst = binary.AppendUvarint(dst, uint64(r.Period/int64(time.Millisecond)))
	return binary.AppendUvarint(dst, uint64(r.Burst))
}

// padLog appends zeros to the LOG state encoded from dst[start:] up to a
// multiple of logPad bytes: a log's length changes with nearly every
// request, and a state of unchanged length is rewritten in place in the
// keyspace (no new record, no garbage).
func padLog(dst []byte, start int) []byte {
	return append(dst, make([]byte, (logPad-(len(dst)-start)%logPad)%logPad)...)
}

// trimPad returns b without its trailing zero bytes (a LOG state's
// padding: its entries end in a cost of at least 1, whose varint's last
// byte is not zero), eight at a time while it can.
func trimPad(b []byte) []byte {
	for len(b) >= 8 && binary.LittleEndian.Uint64(b[len(b)-8:]) == 0 {
		b = b[:len(b)-8]
	}
	for len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	return b
}

// reader reads unsigned varints that must fit in a non-negative int64.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) next() int64 {
	v, k := binary.Uvarint(r.b)
	if k <= 0 || v > 1<<62 {
		r.bad = true
		return 0
	}
	r.b = r.b[k:]
	return int64(v)
}

// DecodeState parses AppendState's encoding; a log's entries go into
// entries' backing array (pass nil or a reused buffer).
func DecodeState(b []byte, entries []Entry) (State, error) {
	var st State
	err := st.Decode(b, entries)
	return st, err
}

// Decode is DecodeState into *st, which it sets whole (to the zero State
// on error), without copying a State.
func (st *State) Decode(b []byte, entries []Entry) error {
	*st = State{}
	if err := st.decode(b, entries); err != nil {
		*st = State{}
		return err
	}
	return nil
}

func (st *State) decode(b []byte, entries []Entry) error {
	if !IsState(b) {
		return ErrCorrupt
	}
	st.Algo = Algo(b[len(magic)])
	summed := b[len(magic)] == logSummed // a LOG state's layout (logsummed.go)
	if summed {
		st.Algo = AlgoLog
	}
	r := reader{b: b[len(magic)+1:]}
	limit, periodMs, burst := r.next(), r.next(), r.next()
	if r.bad || periodMs > MaxPeriod/int64(time.Millisecond) {
		return ErrCorrupt
	}
	rule, err := NewRule(limit, periodMs*int64(time.Millisecond), burst)
	if err != nil {
		return ErrCorrupt
	}
	st.Rule = rule
	switch st.Algo {
	case AlgoGCRA:
		st.GCRA = GCRAState{TAT: r.next(), Lent: r.next()}
	case AlgoFixed:
		st.Fixed = FixedState{Window: r.next(), Count: r.next()}
	case AlgoSliding:
		st.Sliding = SlidingState{Window: r.next(), Cur: r.next(), Prev: r.next()}
	case AlgoLog:
		var pad []byte
		decode := decodeLog
		if summed {
			decode = decodeLogSummed
		}
		if st.Log, pad, err = decode(r.b, entries); err != nil {
			return err
		}
		if len(pad) != 0 && (len(pad) >= logPad || len(b)%logPad != 0) {
			return ErrCorrupt // not the padding AppendState writes
		}
		for _, z := range pad {
			if z != 0 {
				return ErrCorrupt
			}
		}
		r.b = nil
	case AlgoQueue:
		st.Queue.Free = r.next()
	case AlgoLease:
		next := r.next()
		n := r.next()
		if r.bad || n > int64(len(r.b)) { // every lease takes at least 3 bytes
			return ErrCorrupt
		}
		st.Lease = LeaseState{Next: uint64(next)}
		for range n {
			l := Lease{ID: uint64(r.next()), Exp: r.next(), Cost: r.next()}
			if l.Cost < 1 || l.Cost > MaxLimit {
				return ErrCorrupt
			}
			st.Lease.Leases = append(st.Lease.Leases, l)
		}
	default:
		return ErrCorrupt
	}
	if r.bad || len(r.b) != 0 {
		return ErrCorrupt
	}
	return nil
}
