package rdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Streams in Redis's RDB form: RDB_TYPE_STREAM_LISTPACKS_2 (Redis 7.0,
// written and read), RDB_TYPE_STREAM_LISTPACKS (5.0 to 6.2) and
// RDB_TYPE_STREAM_LISTPACKS_3 (7.2 on: consumers also carry an active
// time, read and dropped), as rdb.c saves and loads them:
//
//	nodes (length), then per node: its master ID (16 bytes, ms and seq
//	big-endian) as a string and its listpack as a string;
//	length, last ID; (v2 on) first ID, largest deleted ID, entries added;
//	groups (length), per group: name, last ID, (v2 on) entries read
//	(-1 as 2^64-1), the PEL (length; per entry: ID as 16 bytes, delivery
//	time as 8 bytes little-endian ms, delivery count), its consumers
//	(length; per consumer: name, seen time as 8 bytes, (v3) active time,
//	its PEL IDs as 16 bytes each).
//
// A node's listpack (t_stream.c): the master entry (count of live entries,
// count of deleted ones, the number of master fields, those fields, 0),
// then each entry: flags (1 deleted, 2 same fields as the master), the ID
// as deltas from the master ID, either the values alone or the field count
// and field-value pairs, and the entry's count of listpack elements.
const (
	typeStreamListpacks  = 15
	typeStreamListpacks2 = 19
	typeStreamListpacks3 = 21
)

// streamNodeEntries is how many entries the encoder puts in one node
// (Redis's stream-node-max-entries default; any count loads).
const streamNodeEntries = 100

const (
	streamFlagDeleted    = 1
	streamFlagSameFields = 2
)

// StreamID is a stream entry ID.
type StreamID struct{ Ms, Seq uint64 }

func (id StreamID) less(o StreamID) bool { return id.Ms < o.Ms || id.Ms == o.Ms && id.Seq < o.Seq }

// Stream is a stream value.
type Stream struct {
	Entries      []StreamEntry // ascending IDs
	Last         StreamID
	First        StreamID // as recorded (decoding only; the encoder writes the first entry's)
	MaxDeleted   StreamID
	EntriesAdded uint64
	Groups       []StreamGroup
}

// StreamEntry is one entry: its ID and field, value, field, value, ...
type StreamEntry struct {
	ID     StreamID
	Fields [][]byte
}

// StreamGroup is a consumer group.
type StreamGroup struct {
	Name        []byte
	Last        StreamID
	EntriesRead int64 // -1: unknown
	PEL         []StreamNack
	Consumers   []StreamConsumer
}

// StreamNack is a pending entry of a group's PEL.
type StreamNack struct {
	ID    StreamID
	Time  int64 // delivery time, Unix ms
	Count uint64
}

// StreamConsumer is a consumer and the IDs of its pending entries.
type StreamConsumer struct {
	Name []byte
	Seen int64 // Unix ms
	PEL  []StreamID
}

// EncodeStream returns the DUMP payload of a stream (Redis 7.0's form).
func EncodeStream(s *Stream) []byte {
	e := &Encoder{b: []byte{typeStreamListpacks2}}
	nodes := (len(s.Entries) + streamNodeEntries - 1) / streamNodeEntries
	e.length(uint64(nodes))
	for i := 0; i < len(s.Entries); i += streamNodeEntries {
		node := s.Entries[i:min(i+streamNodeEntries, len(s.Entries))]
		e.Str(appendRawID(nil, node[0].ID))
		e.Str(streamListpack(node))
	}
	first := StreamID{}
	if len(s.Entries) > 0 {
		first = s.Entries[0].ID
	}
	e.length(uint64(len(s.Entries)))
	for _, id := range []StreamID{s.Last, first, s.MaxDeleted} {
		e.length(id.Ms)
		e.length(id.Seq)
	}
	e.length(s.EntriesAdded)
	e.length(uint64(len(s.Groups)))
	for _, g := range s.Groups {
		e.Str(g.Name)
		e.length(g.Last.Ms)
		e.length(g.Last.Seq)
		e.length(uint64(g.EntriesRead))
		e.length(uint64(len(g.PEL)))
		for _, n := range g.PEL {
			e.b = appendRawID(e.b, n.ID)
			e.b = binary.LittleEndian.AppendUint64(e.b, uint64(n.Time))
			e.length(n.Count)
		}
		e.length(uint64(len(g.Consumers)))
		for _, c := range g.Consumers {
			e.Str(c.Name)
			e.b = binary.LittleEndian.AppendUint64(e.b, uint64(c.Seen))
			e.length(uint64(len(c.PEL)))
			for _, id := range c.PEL {
				e.b = appendRawID(e.b, id)
			}
		}
	}
	return e.Finish()
}

func appendRawID(dst []byte, id StreamID) []byte {
	dst = binary.BigEndian.AppendUint64(dst, id.Ms)
	return binary.BigEndian.AppendUint64(dst, id.Seq)
}

// streamListpack builds one node's listpack; the master ID is the first
// entry's, the master fields its fields.
func streamListpack(node []StreamEntry) []byte {
	var lp listpack
	master := node[0]
	nfields := len(master.Fields) / 2
	lp.int(int64(len(node)))
	lp.int(0)
	lp.int(int64(nfields))
	for i := 0; i < len(master.Fields); i += 2 {
		lp.str(master.Fields[i])
	}
	lp.int(0)
	for _, en := range node {
		same := len(en.Fields) == len(master.Fields)
		for i := 0; same && i < len(en.Fields); i += 2 {
			same = string(en.Fields[i]) == string(master.Fields[i])
		}
		flags := int64(0)
		if same {
			flags = streamFlagSameFields
		}
		lp.int(flags)
		lp.int(int64(en.ID.Ms - master.ID.Ms))
		lp.int(int64(en.ID.Seq - master.ID.Seq))
		n := len(en.Fields) / 2
		if same {
			for i := 1; i < len(en.Fields); i += 2 {
				lp.str(en.Fields[i])
			}
			lp.int(int64(n + 3))
			continue
		}
		lp.int(int64(n))
		for _, f := range en.Fields {
			lp.str(f)
		}
		lp.int(int64(2*n + 4))
	}
	return lp.bytes()
}

// listpack builds a listpack: a header (total bytes, element count),
// elements (an encoding, the data, the entry's length backwards) and 0xFF.
type listpack struct {
	b []byte
	n int
}

func (l *listpack) int(v int64) {
	start := len(l.b)
	switch {
	case v >= 0 && v <= 127:
		l.b = append(l.b, byte(v))
	case v >= -4096 && v <= 4095:
		u := uint64(v) & 0x1fff
		l.b = append(l.b, 0xc0|byte(u>>8), byte(u))
	case v >= math.MinInt16 && v <= math.MaxInt16:
		l.b = append(l.b, 0xf1)
		l.b = binary.LittleEndian.AppendUint16(l.b, uint16(v))
	case v >= -1<<23 && v < 1<<23:
		u := uint32(v)
		l.b = append(l.b, 0xf2, byte(u), byte(u>>8), byte(u>>16))
	case v >= math.MinInt32 && v <= math.MaxInt32:
		l.b = append(l.b, 0xf3)
		l.b = binary.LittleEndian.AppendUint32(l.b, uint32(v))
	default:
		l.b = append(l.b, 0xf4)
		l.b = binary.LittleEndian.AppendUint64(l.b, uint64(v))
	}
	l.backlen(len(l.b) - start)
}

func (l *listpack) str(s []byte) {
	start := len(l.b)
	switch n := len(s); {
	case n < 64:
		l.b = append(l.b, 0x80|byte(n))
	case n < 4096:
		l.b = append(l.b, 0xe0|byte(n>>8), byte(n))
	default:
		l.b = append(l.b, 0xf0)
		l.b = binary.LittleEndian.AppendUint32(l.b, uint32(n))
	}
	l.b = append(l.b, s...)
	l.backlen(len(l.b) - start)
}

// backlen appends an entry's length as Redis's lpEncodeBacklen does: 7
// bits per byte, most significant first, all but the first with the high
// bit set.
func (l *listpack) backlen(n int) {
	size := backlenSize(uint64(n))
	for i := size - 1; i >= 0; i-- {
		c := byte(n>>(7*uint(i))) & 127
		if i < size-1 {
			c |= 128
		}
		l.b = append(l.b, c)
	}
	l.n++
}

func (l *listpack) bytes() []byte {
	out := make([]byte, 6, 6+len(l.b)+1)
	binary.LittleEndian.PutUint32(out, uint32(6+len(l.b)+1))
	binary.LittleEndian.PutUint16(out[4:], uint16(min(l.n, 65535)))
	out = append(out, l.b...)
	return append(out, 0xff)
}

// stream reads a stream of RDB type t.
func (r *reader) stream(t byte) (Value, error) {
	s := &Stream{}
	nodes, err := r.count(2)
	if err != nil {
		return Value{}, err
	}
	for range nodes {
		key, err := r.str()
		if err != nil {
			return Value{}, err
		}
		if len(key) != 16 {
			return Value{}, errors.New("stream node key is not an ID")
		}
		master := StreamID{binary.BigEndian.Uint64(key), binary.BigEndian.Uint64(key[8:])}
		blob, err := r.str()
		if err != nil {
			return Value{}, err
		}
		items, err := listpackItems(blob)
		if err != nil {
			return Value{}, err
		}
		if s.Entries, err = streamNode(s.Entries, master, items); err != nil {
			return Value{}, err
		}
	}
	var meta []uint64
	nmeta := 3
	if t != typeStreamListpacks {
		nmeta = 8
	}
	for range nmeta {
		n, enc, err := r.length()
		if err != nil || enc {
			return Value{}, errors.New("bad stream metadata")
		}
		meta = append(meta, n)
	}
	if meta[0] != uint64(len(s.Entries)) {
		return Value{}, fmt.Errorf("stream length %d, %d entries", meta[0], len(s.Entries))
	}
	s.Last = StreamID{meta[1], meta[2]}
	if t == typeStreamListpacks {
		s.EntriesAdded = uint64(len(s.Entries))
	} else {
		s.First, s.MaxDeleted, s.EntriesAdded = StreamID{meta[3], meta[4]}, StreamID{meta[5], meta[6]}, meta[7]
	}
	if n := len(s.Entries); n > 0 && s.Last.less(s.Entries[n-1].ID) {
		return Value{}, errors.New("stream last ID below its top entry")
	}
	ngroups, err := r.count(4)
	if err != nil {
		return Value{}, err
	}
	for range ngroups {
		g, err := r.streamGroup(t)
		if err != nil {
			return Value{}, err
		}
		s.Groups = append(s.Groups, g)
	}
	return Value{Type: TypeStream, Stream: s}, nil
}

// streamNode appends a node's live entries to out.
func streamNode(out []StreamEntry, master StreamID, items [][]byte) ([]StreamEntry, error) {
	p := 0
	next := func() (int64, error) {
		if p >= len(items) {
			return 0, errShort
		}
		v, err := strconv.ParseInt(string(items[p]), 10, 64)
		p++
		if err != nil {
			return 0, errors.New("stream listpack: integer expected")
		}
		return v, nil
	}
	take := func(n int64) ([][]byte, error) {
		if n < 0 || n > int64(len(items)-p) {
			return nil, errShort
		}
		s := items[p : p+int(n)]
		p += int(n)
		return s, nil
	}
	count, err := next()
	if err != nil {
		return nil, err
	}
	deleted, err := next()
	if err != nil {
		return nil, err
	}
	nmaster, err := next()
	if err != nil {
		return nil, err
	}
	masterFields, err := take(nmaster)
	if err != nil {
		return nil, err
	}
	if zero, err := next(); err != nil || zero != 0 {
		return nil, errors.New("stream listpack: bad master entry")
	}
	live := int64(0)
	for total := int64(0); total < count+deleted; total++ {
		flags, err1 := next()
		dms, err2 := next()
		dseq, err3 := next()
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, err
		}
		id := StreamID{master.Ms + uint64(dms), master.Seq + uint64(dseq)}
		var fields [][]byte
		if flags&streamFlagSameFields != 0 {
			values, err := take(nmaster)
			if err != nil {
				return nil, err
			}
			for i, f := range masterFields {
				fields = append(fields, f, values[i])
			}
		} else {
			n, err := next()
			if err != nil {
				return nil, err
			}
			if fields, err = take(2 * n); err != nil {
				return nil, err
			}
		}
		if _, err := next(); err != nil { // the entry's element count
			return nil, err
		}
		if flags&streamFlagDeleted != 0 {
			continue
		}
		if len(fields) == 0 {
			return nil, errors.New("stream entry without fields")
		}
		if k := len(out); k > 0 && !out[k-1].ID.less(id) {
			return nil, errors.New("stream entries out of order")
		}
		out = append(out, StreamEntry{ID: id, Fields: fields})
		live++
	}
	if live != count || p != len(items) {
		return nil, errors.New("stream listpack: counts do not match")
	}
	return out, nil
}

func (r *reader) rawID() (StreamID, error) {
	p, err := r.take(16)
	if err != nil {
		return StreamID{}, err
	}
	return StreamID{binary.BigEndian.Uint64(p), binary.BigEndian.Uint64(p[8:])}, nil
}

func (r *reader) msTime() (int64, error) {
	p, err := r.take(8)
	if err != nil {
		return 0, err
	}
	return int64(binary.LittleEndian.Uint64(p)), nil
}

func (r *reader) plainLength() (uint64, error) {
	n, enc, err := r.length()
	if err == nil && enc {
		err = errors.New("bad length")
	}
	return n, err
}

func (r *reader) streamGroup(t byte) (StreamGroup, error) {
	var g StreamGroup
	var err error
	if g.Name, err = r.str(); err != nil {
		return g, err
	}
	ms, err1 := r.plainLength()
	seq, err2 := r.plainLength()
	if err := errors.Join(err1, err2); err != nil {
		return g, err
	}
	g.Last, g.EntriesRead = StreamID{ms, seq}, -1
	if t != typeStreamListpacks {
		n, err := r.plainLength()
		if err != nil {
			return g, err
		}
		g.EntriesRead = int64(n)
	}
	npel, err := r.count(17)
	if err != nil {
		return g, err
	}
	for range npel {
		id, err1 := r.rawID()
		tm, err2 := r.msTime()
		count, err3 := r.plainLength()
		if err := errors.Join(err1, err2, err3); err != nil {
			return g, err
		}
		g.PEL = append(g.PEL, StreamNack{ID: id, Time: tm, Count: count})
	}
	nc, err := r.count(10)
	if err != nil {
		return g, err
	}
	for range nc {
		var c StreamConsumer
		if c.Name, err = r.str(); err != nil {
			return g, err
		}
		if c.Seen, err = r.msTime(); err != nil {
			return g, err
		}
		if t == typeStreamListpacks3 {
			if _, err = r.msTime(); err != nil { // active time: not kept
				return g, err
			}
		}
		n, err := r.count(16)
		if err != nil {
			return g, err
		}
		for range n {
			id, err := r.rawID()
			if err != nil {
				return g, err
			}
			c.PEL = append(c.PEL, id)
		}
		g.Consumers = append(g.Consumers, c)
	}
	return g, nil
}
