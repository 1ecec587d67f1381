package coll

import (
	"cmp"
	"fmt"
	"iter"
	"maps"
	"slices"
	"sort"
	"strconv"
)

// Consumer groups of a stream, as Redis 7.0 keeps them: each group has a
// name, the last ID it delivered, its entries-read counter (-1: unknown),
// its pending entries list (PEL: an entry delivered and not yet
// acknowledged, with its consumer, delivery time and delivery count) and
// its consumers (a name, the time it was last seen, and its share of the
// PEL). Times are Unix milliseconds of the server's one clock, given by the
// caller: nothing here reads a clock, so replaying the ops reproduces the
// state exactly.
//
// The ops are primitive: the server decides (which entries a read
// delivers, which a claim takes, how the group's counters move) and
// records the outcome; Apply only executes it. Groups, consumers and PEL
// entries iterate in Redis's order: names in byte order, IDs ascending.

// StreamGroup is one consumer group.
type StreamGroup struct {
	Name        string
	Last        StreamID // the last ID delivered
	EntriesRead int64    // entries the group read, -1 when unknown
	pel         map[StreamID]*StreamNack
	order       idList // the PEL's IDs, ascending
	consumers   map[string]*StreamConsumer
}

// StreamConsumer is a consumer of a group.
type StreamConsumer struct {
	Name string
	Seen int64  // when it was last seen, Unix ms
	pel  idList // its pending IDs, ascending
}

// StreamNack is a pending entry: delivered, not acknowledged.
type StreamNack struct {
	Consumer *StreamConsumer
	Time     int64 // last delivery, Unix ms
	Count    int64 // deliveries
}

// InvalidEntriesRead is a group's entries-read counter when unknown.
const InvalidEntriesRead = -1

// idList is a sorted set of IDs in chunks of at most idChunk, so that a
// deep PEL (a queue's unacknowledged entries) takes an insertion or a
// removal anywhere in time proportional to a chunk, not to the PEL. No
// chunk is empty.
type idList struct {
	chunks [][]StreamID
	n      int
}

const idChunk = 256

// search returns the position (chunk, index) of the first ID >= id, or
// (len(chunks), 0).
func (l *idList) search(id StreamID) (int, int) {
	ci := sort.Search(len(l.chunks), func(ci int) bool {
		ch := l.chunks[ci]
		return !ch[len(ch)-1].Less(id)
	})
	if ci == len(l.chunks) {
		return ci, 0
	}
	ch := l.chunks[ci]
	return ci, sort.Search(len(ch), func(i int) bool { return !ch[i].Less(id) })
}

func (l *idList) insert(id StreamID) {
	ci, i := l.search(id)
	switch {
	case ci < len(l.chunks) && l.chunks[ci][i] == id:
		return
	case ci == len(l.chunks) && ci > 0: // past the last: append to the last chunk
		ci--
		i = len(l.chunks[ci])
	case ci == len(l.chunks):
		l.chunks = append(l.chunks, make([]StreamID, 0, 1))
	}
	l.chunks[ci] = slices.Insert(l.chunks[ci], i, id)
	l.n++
	if ch := l.chunks[ci]; len(ch) > idChunk { // split in two halves
		half := len(ch) / 2
		right := slices.Clone(ch[half:])
		l.chunks[ci] = slices.Clip(ch[:half])
		l.chunks = slices.Insert(l.chunks, ci+1, right)
	}
}

func (l *idList) remove(id StreamID) {
	ci, i := l.search(id)
	if ci == len(l.chunks) || l.chunks[ci][i] != id {
		return
	}
	l.chunks[ci] = slices.Delete(l.chunks[ci], i, i+1)
	l.n--
	if len(l.chunks[ci]) == 0 {
		l.chunks = slices.Delete(l.chunks, ci, ci+1)
	}
}

// push appends id, which must be above every ID held (decoding).
func (l *idList) push(id StreamID) {
	if k := len(l.chunks); k == 0 || len(l.chunks[k-1]) >= idChunk {
		l.chunks = append(l.chunks, make([]StreamID, 0, 1))
	}
	k := len(l.chunks) - 1
	l.chunks[k] = append(l.chunks[k], id)
	l.n++
}

// from yields the IDs >= id, ascending. The list must not change while
// they are read.
func (l *idList) from(id StreamID) iter.Seq[StreamID] {
	return func(yield func(StreamID) bool) {
		for ci, i := l.search(id); ci < len(l.chunks); ci, i = ci+1, 0 {
			for _, v := range l.chunks[ci][i:] {
				if !yield(v) {
					return
				}
			}
		}
	}
}

// last returns the largest ID, false when empty.
func (l *idList) last() (StreamID, bool) {
	if len(l.chunks) == 0 {
		return StreamID{}, false
	}
	ch := l.chunks[len(l.chunks)-1]
	return ch[len(ch)-1], true
}

func (l *idList) clone() idList {
	c := idList{chunks: make([][]StreamID, len(l.chunks)), n: l.n}
	for i, ch := range l.chunks {
		c.chunks[i] = slices.Clone(ch)
	}
	return c
}

// Group returns the group named name, or nil.
func (s *Stream) Group(name []byte) *StreamGroup { return s.groups[string(name)] }

// GroupCount returns the number of groups.
func (s *Stream) GroupCount() int { return len(s.groups) }

// Groups returns the groups in name order.
func (s *Stream) Groups() []*StreamGroup {
	return slices.SortedFunc(maps.Values(s.groups), func(a, b *StreamGroup) int { return cmp.Compare(a.Name, b.Name) })
}

// FirstID returns the ID of the first entry, 0-0 for an empty stream
// (Redis's first_id).
func (s *Stream) FirstID() StreamID {
	if s.n == 0 {
		return StreamID{}
	}
	return s.chunks[0][0].ID
}

// Entry returns the entry with id, or nil.
func (s *Stream) Entry(id StreamID) *StreamEntry {
	ci, i := s.search(id)
	if ci < len(s.chunks) && s.chunks[ci][i].ID == id {
		return &s.chunks[ci][i]
	}
	return nil
}

// deletedFrom reports whether an entry was deleted at or after id while
// the stream still holds entries (Redis's streamRangeHasTombstones from id
// on).
func (s *Stream) deletedFrom(id StreamID) bool {
	return s.n > 0 && s.maxDel != (StreamID{}) && !s.maxDel.Less(s.FirstID()) && !s.maxDel.Less(id)
}

// estimateEntriesRead returns id's logical read counter, or
// InvalidEntriesRead when it cannot be known (Redis's
// streamEstimateDistanceFromFirstEverEntry).
func (s *Stream) estimateEntriesRead(id StreamID) int64 {
	if s.added == 0 {
		return 0
	}
	if s.n == 0 && !s.last.Less(id) {
		return int64(s.added)
	}
	switch {
	case id == s.last:
		return int64(s.added)
	case s.last.Less(id):
		return InvalidEntriesRead
	}
	first := s.FirstID()
	if s.maxDel == (StreamID{}) || s.maxDel.Less(first) {
		switch {
		case id.Less(first):
			return int64(s.added) - int64(s.n)
		case id == first:
			return int64(s.added) - int64(s.n) + 1
		}
	}
	return InvalidEntriesRead
}

// Lag returns the number of entries the group has yet to read, and false
// when it cannot be known (Redis's streamReplyWithCGLag).
func (s *Stream) Lag(g *StreamGroup) (int64, bool) {
	if s.added == 0 {
		return 0, true
	}
	if g.EntriesRead != InvalidEntriesRead && !s.deletedFrom(g.Last) {
		return int64(s.added) - g.EntriesRead, true
	}
	if n := s.estimateEntriesRead(g.Last); n != InvalidEntriesRead {
		return int64(s.added) - n, true
	}
	return 0, false
}

// Delivered returns the group's last ID and entries-read counter after it
// delivers the entries ids (ascending), as Redis's streamReplyWithRange
// moves them.
func (s *Stream) Delivered(g *StreamGroup, ids []StreamID) (StreamID, int64) {
	last, read := g.Last, g.EntriesRead
	for _, id := range ids {
		if !last.Less(id) {
			continue
		}
		if read != InvalidEntriesRead && !s.deletedFrom(id) {
			read++
		} else if s.added != 0 {
			read = s.estimateEntriesRead(id)
		}
		last = id
	}
	return last, read
}

// Consumer returns the consumer named name, or nil.
func (g *StreamGroup) Consumer(name []byte) *StreamConsumer { return g.consumers[string(name)] }

// ConsumerCount returns the number of consumers.
func (g *StreamGroup) ConsumerCount() int { return len(g.consumers) }

// Consumers returns the consumers in name order.
func (g *StreamGroup) Consumers() []*StreamConsumer {
	return slices.SortedFunc(maps.Values(g.consumers), func(a, b *StreamConsumer) int { return cmp.Compare(a.Name, b.Name) })
}

// PendingCount returns the size of the group's PEL.
func (g *StreamGroup) PendingCount() int { return g.order.n }

// Pending returns the PEL entry of id, or nil.
func (g *StreamGroup) Pending(id StreamID) *StreamNack { return g.pel[id] }

// PendingFrom yields the PEL's IDs >= id, ascending. The group must not
// change while they are read.
func (g *StreamGroup) PendingFrom(id StreamID) iter.Seq[StreamID] { return g.order.from(id) }

// LastPending returns the PEL's largest ID, false when it is empty.
func (g *StreamGroup) LastPending() (StreamID, bool) { return g.order.last() }

// PendingCount returns the size of the consumer's share of the PEL.
func (c *StreamConsumer) PendingCount() int { return c.pel.n }

// PendingFrom is StreamGroup.PendingFrom for the consumer's share.
func (c *StreamConsumer) PendingFrom(id StreamID) iter.Seq[StreamID] { return c.pel.from(id) }

const (
	groupMem    = 96
	consumerMem = 64
	nackMem     = 64
)

func (s *Stream) cloneGroups() map[string]*StreamGroup {
	if s.groups == nil {
		return nil
	}
	gs := make(map[string]*StreamGroup, len(s.groups))
	for name, g := range s.groups {
		c := &StreamGroup{Name: g.Name, Last: g.Last, EntriesRead: g.EntriesRead,
			pel: make(map[StreamID]*StreamNack, len(g.pel)), order: g.order.clone(),
			consumers: make(map[string]*StreamConsumer, len(g.consumers))}
		for cn, con := range g.consumers {
			c.consumers[cn] = &StreamConsumer{Name: con.Name, Seen: con.Seen, pel: con.pel.clone()}
		}
		for id, n := range g.pel {
			c.pel[id] = &StreamNack{Consumer: c.consumers[n.Consumer.Name], Time: n.Time, Count: n.Count}
		}
		gs[name] = c
	}
	return gs
}

// appendBytes appends b length-prefixed (reader.bytes reads it).
func appendBytes(dst, b []byte) []byte { return append(appendUvarint(dst, uint64(len(b))), b...) }

// parseOpIDs reads an op's list of "ms-seq" IDs.
func parseOpIDs(args [][]byte) ([]StreamID, bool) {
	ids := make([]StreamID, len(args))
	for i, a := range args {
		var ok bool
		if ids[i], _, ok = ParseStreamID(a, 0, false); !ok {
			return nil, false
		}
	}
	return ids, true
}

// parseGroupInt reads a decimal int64 argument of a group op.
func parseGroupInt(b []byte) (int64, bool) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil
}

func (s *Stream) applyGroup(op Op, args [][]byte) (int64, bool, error) {
	if len(args) == 0 {
		return 0, false, badArgs(op, args)
	}
	g := s.groups[string(args[0])]
	if g == nil && op != OpXGroupCreate {
		return 0, false, fmt.Errorf("%w: %s: no group %q", ErrBadOp, op, args[0])
	}
	switch op {
	case OpXGroupCreate, OpXGroupSetID: // group last-id entries-read
		if len(args) != 3 {
			return 0, false, badArgs(op, args)
		}
		last, _, ok1 := ParseStreamID(args[1], 0, false)
		read, ok2 := parseGroupInt(args[2])
		if !ok1 || !ok2 || read < InvalidEntriesRead {
			return 0, false, badArgs(op, args)
		}
		if op == OpXGroupCreate {
			if g != nil {
				return 0, false, fmt.Errorf("%w: group %q exists", ErrBadOp, args[0])
			}
			if s.groups == nil {
				s.groups = make(map[string]*StreamGroup)
			}
			g = &StreamGroup{Name: string(args[0]), pel: make(map[StreamID]*StreamNack), consumers: make(map[string]*StreamConsumer)}
			s.groups[g.Name] = g
			s.mem += groupMem + len(g.Name)
		}
		g.Last, g.EntriesRead = last, read
		return 1, true, nil
	case OpXGroupDestroy: // group
		if len(args) != 1 {
			return 0, false, badArgs(op, args)
		}
		s.mem -= groupMem + len(g.Name) + g.order.n*nackMem
		for _, c := range g.consumers {
			s.mem -= consumerMem + len(c.Name)
		}
		delete(s.groups, g.Name)
		return 1, true, nil
	case OpXGroupConsumer: // group consumer seen-ms: created, or seen
		if len(args) != 3 {
			return 0, false, badArgs(op, args)
		}
		seen, ok := parseGroupInt(args[2])
		if !ok {
			return 0, false, badArgs(op, args)
		}
		c := g.consumers[string(args[1])]
		created := int64(0)
		if c == nil {
			c = &StreamConsumer{Name: string(args[1])}
			g.consumers[c.Name] = c
			s.mem += consumerMem + len(c.Name)
			created = 1
		}
		c.Seen = seen
		return created, true, nil
	case OpXGroupDelConsumer: // group consumer; n = its pending entries
		if len(args) != 2 {
			return 0, false, badArgs(op, args)
		}
		c := g.consumers[string(args[1])]
		if c == nil {
			return 0, false, fmt.Errorf("%w: no consumer %q", ErrBadOp, args[1])
		}
		for id := range c.pel.from(StreamID{}) {
			delete(g.pel, id)
			g.order.remove(id)
		}
		s.mem -= consumerMem + len(c.Name) + c.pel.n*nackMem
		delete(g.consumers, c.Name)
		return int64(c.pel.n), true, nil
	case OpXGroupClaim: // group consumer time-ms count-mode id...
		if len(args) < 5 {
			return 0, false, badArgs(op, args)
		}
		c := g.consumers[string(args[1])]
		t, okTime := parseGroupInt(args[2])
		mode := string(args[3])
		var set int64
		switch mode {
		case "one", "incr", "keep":
		default:
			var ok bool
			if set, ok = parseGroupInt(args[3]); !ok || set < 0 {
				return 0, false, badArgs(op, args)
			}
		}
		ids, okIDs := parseOpIDs(args[4:])
		if c == nil || !okTime || !okIDs {
			return 0, false, badArgs(op, args)
		}
		for _, id := range ids {
			n := g.pel[id]
			if n == nil {
				n = &StreamNack{Count: 1}
				g.pel[id] = n
				g.order.insert(id)
				s.mem += nackMem
			}
			if n.Consumer != c {
				if n.Consumer != nil {
					n.Consumer.pel.remove(id)
				}
				c.pel.insert(id)
				n.Consumer = c
			}
			n.Time = t
			switch mode {
			case "one":
				n.Count = 1
			case "incr":
				n.Count++
			case "keep":
			default:
				n.Count = set
			}
		}
		return int64(len(ids)), true, nil
	case OpXGroupAck: // group id...; n = entries acknowledged
		if len(args) < 2 {
			return 0, false, badArgs(op, args)
		}
		ids, ok := parseOpIDs(args[1:])
		if !ok {
			return 0, false, badArgs(op, args)
		}
		var n int64
		for _, id := range ids {
			if nk := g.pel[id]; nk != nil {
				nk.Consumer.pel.remove(id)
				delete(g.pel, id)
				g.order.remove(id)
				s.mem -= nackMem
				n++
			}
		}
		return n, n > 0, nil
	}
	return 0, false, fmt.Errorf("%w: %s on a stream", ErrBadOp, op)
}

// appendGroups appends the groups' persistent form: their count, then
// each group (in name order): its name, last ID, entries-read + 1, its
// consumers (name, seen time) in name order, and its PEL (ID, the index
// of its consumer in that order, delivery time, delivery count).
func (s *Stream) appendGroups(dst []byte) []byte {
	dst = appendUvarint(dst, uint64(len(s.groups)))
	for _, g := range s.Groups() {
		dst = appendBytes(dst, []byte(g.Name))
		dst = appendUvarint(appendUvarint(dst, g.Last.Ms), g.Last.Seq)
		dst = appendUvarint(dst, uint64(g.EntriesRead+1))
		cs := g.Consumers()
		index := make(map[*StreamConsumer]int, len(cs))
		dst = appendUvarint(dst, uint64(len(cs)))
		for i, c := range cs {
			index[c] = i
			dst = appendBytes(dst, []byte(c.Name))
			dst = appendUvarint(dst, uint64(c.Seen))
		}
		dst = appendUvarint(dst, uint64(g.order.n))
		for id := range g.order.from(StreamID{}) {
			n := g.pel[id]
			dst = appendUvarint(appendUvarint(dst, id.Ms), id.Seq)
			dst = appendUvarint(dst, uint64(index[n.Consumer]))
			dst = appendUvarint(dst, uint64(n.Time))
			dst = appendUvarint(dst, uint64(n.Count))
		}
	}
	return dst
}

// decodeGroups reads what appendGroups wrote into s.
func (s *Stream) decodeGroups(r *reader) error {
	ng := r.count(4)
	if r.err == nil && ng == 0 {
		return fmt.Errorf("%w: an empty groups section", ErrBadOp)
	}
	prevName := ""
	for gi := range ng {
		if r.err != nil {
			break
		}
		name := string(r.bytes())
		last := StreamID{r.uvarint(), r.uvarint()}
		read := int64(r.uvarint()) - 1
		if r.err != nil {
			break
		}
		if gi > 0 && name <= prevName || read < InvalidEntriesRead || read > 1<<62 {
			return fmt.Errorf("%w: stream group %q out of order or malformed", ErrBadOp, name)
		}
		prevName = name
		if _, _, err := s.applyGroup(OpXGroupCreate, [][]byte{[]byte(name), last.AppendText(nil), strconv.AppendInt(nil, read, 10)}); err != nil {
			return err
		}
		g := s.groups[name]
		nc := r.count(2)
		cs := make([]*StreamConsumer, 0, nc)
		for range nc {
			cname := r.bytes()
			seen := r.uvarint()
			if r.err != nil {
				break
			}
			if len(cs) > 0 && string(cname) <= cs[len(cs)-1].Name || seen > 1<<62 {
				return fmt.Errorf("%w: stream consumer %q out of order or malformed", ErrBadOp, cname)
			}
			s.applyGroup(OpXGroupConsumer, [][]byte{[]byte(name), cname, strconv.AppendInt(nil, int64(seen), 10)})
			cs = append(cs, g.consumers[string(cname)])
		}
		np := r.count(5)
		var prev StreamID
		for i := range np {
			id := StreamID{r.uvarint(), r.uvarint()}
			ci, t, count := r.uvarint(), r.uvarint(), r.uvarint()
			if r.err != nil {
				break
			}
			if ci >= uint64(len(cs)) || t > 1<<62 || count > 1<<62 || i > 0 && !prev.Less(id) {
				return fmt.Errorf("%w: stream PEL entry %s malformed or out of order", ErrBadOp, id)
			}
			prev = id
			c := cs[ci]
			g.pel[id] = &StreamNack{Consumer: c, Time: int64(t), Count: int64(count)}
			g.order.push(id)
			c.pel.push(id)
			s.mem += nackMem
		}
	}
	return r.err
}
