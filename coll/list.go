package coll

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/turnstile/turnstile/resp"
)

// List is a Redis list. Its elements live in packed nodes (lnode): one
// node, inline in the List, while the list is small ("listpack"), and a
// chain of nodes of at most listNodeLimit bytes each past that
// ("quicklist"). Pushes and pops at either end are O(1) amortised and
// touch one node; Index walks from the nearer end.
//
// The encoding follows Redis 7.2 and later with list-max-listpack-size -2
// (8 KiB): a list leaves the listpack form when its listpack would grow
// past 8 KiB (estimated as Redis does: the current listpack size plus the
// raw length of the elements being added), and comes back when a shrinking
// change leaves it one node of at most 4 KiB. Sizes are measured in
// Redis's listpack bytes (lpEntrySize), not in this package's own, so the
// encoding changes where Redis's does. (Redis 7.0 reports "quicklist" for
// every list.)
type List struct {
	one   lnode    // the only node while !quick
	nodes []*lnode // the chain while quick; no node is empty
	quick bool
	count int
	mem   int // bytes held by node buffers and node headers
}

// listNodeLimit is list-max-listpack-size -2 in bytes; listNodeOverhead is
// the estimate Redis adds per element when it decides whether a node takes
// one more.
const (
	listNodeLimit    = 8192
	listNodeOverhead = 8
	lpHeader         = 7 // a listpack's header and end byte
	listBaseMem      = 64
	listNodeMem      = 64 // an lnode and its pointer
)

// An lnode holds entries back to back in buf[head:]: each is a uvarint
// length, the element's bytes, and the length of those two as a uvarint
// written backwards, so the node can be walked from either end. The free
// bytes before head take pushes at the front.
type lnode struct {
	buf  []byte
	head int
	n    int
	lp   int // Redis listpack bytes of these entries, header included
}

// NewList returns an empty list.
func NewList() *List {
	return &List{one: lnode{lp: lpHeader}, mem: listBaseMem}
}

// Len returns the number of elements.
func (l *List) Len() int { return l.count }

// Encoding returns "listpack" or "quicklist".
func (l *List) Encoding() string {
	if l.quick {
		return "quicklist"
	}
	return "listpack"
}

// MemoryUsage returns the approximate bytes the list holds.
func (l *List) MemoryUsage() int { return l.mem }

// CloneObject returns a deep copy.
func (l *List) CloneObject() any {
	c := &List{quick: l.quick, count: l.count, mem: l.mem}
	c.one = l.one.clone()
	if l.quick {
		c.nodes = make([]*lnode, len(l.nodes))
		for i, nd := range l.nodes {
			cp := nd.clone()
			c.nodes[i] = &cp
		}
	}
	return c
}

func (nd *lnode) clone() lnode {
	c := lnode{head: nd.head, n: nd.n, lp: nd.lp}
	if nd.buf != nil {
		c.buf = make([]byte, len(nd.buf), cap(nd.buf))
		copy(c.buf[nd.head:], nd.buf[nd.head:])
	}
	return c
}

// ---- entries ----

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// entrySize returns the node bytes an element takes.
func entrySize(e []byte) int {
	f := uvarintLen(uint64(len(e))) + len(e)
	return f + uvarintLen(uint64(f))
}

// putEntry writes e's entry into dst, which is exactly entrySize(e) long.
func putEntry(dst, e []byte) {
	w := binary.PutUvarint(dst, uint64(len(e)))
	w += copy(dst[w:], e)
	f := uint64(w)
	for i := len(dst) - 1; ; i-- {
		if f < 0x80 {
			dst[i] = byte(f)
			return
		}
		dst[i] = byte(f) | 0x80
		f >>= 7
	}
}

// next returns the element whose entry starts at off and the offset after
// the entry.
func (nd *lnode) next(off int) (e []byte, end int) {
	n, w := binary.Uvarint(nd.buf[off:])
	s := off + w
	f := w + int(n)
	return nd.buf[s : s+int(n) : s+int(n)], off + f + uvarintLen(uint64(f))
}

// prev returns the element whose entry ends at end and where it starts.
func (nd *lnode) prev(end int) (e []byte, start int) {
	// The backward length's last byte holds its lowest seven bits; bytes
	// to the left of one with the high bit set hold higher bits.
	i := end - 1
	for nd.buf[i] >= 0x80 {
		i--
	}
	var f uint64
	for j := i; j < end; j++ {
		f = f<<7 | uint64(nd.buf[j]&0x7f)
	}
	start = i - int(f)
	n, w := binary.Uvarint(nd.buf[start:])
	return nd.buf[start+w : start+w+int(n) : start+w+int(n)], start
}

// lpEntrySize returns the bytes Redis's listpack spends on element e.
func lpEntrySize(e []byte) int {
	if len(e) <= 20 {
		if v, ok := resp.ParseInt(e); ok {
			switch {
			case v >= 0 && v <= 127:
				return 2
			case v >= -4096 && v <= 4095:
				return 3
			case v >= math.MinInt16 && v <= math.MaxInt16:
				return 4
			case v >= -1<<23 && v < 1<<23:
				return 5
			case v >= math.MinInt32 && v <= math.MaxInt32:
				return 6
			}
			return 10
		}
	}
	n := len(e)
	switch {
	case n < 64:
		n++
	case n < 4096:
		n += 2
	default:
		n += 5
	}
	switch {
	case n <= 127:
		return n + 1
	case n < 16383:
		return n + 2
	case n < 2097151:
		return n + 3
	case n < 268435455:
		return n + 4
	}
	return n + 5
}

// ---- node edits (each keeps l.mem) ----

// regrow gives nd a new buffer with at least front free bytes before the
// entries and back free bytes after them.
func (l *List) regrow(nd *lnode, front, back int) {
	used := len(nd.buf) - nd.head
	size := used + front + back
	buf := make([]byte, front+used, size)
	copy(buf[front:], nd.buf[nd.head:])
	l.mem += cap(buf) - cap(nd.buf)
	nd.buf, nd.head = buf, front
}

func (l *List) nodePushBack(nd *lnode, e []byte) {
	sz := entrySize(e)
	if cap(nd.buf)-len(nd.buf) < sz {
		used := len(nd.buf) - nd.head
		l.regrow(nd, 0, max(sz, used/2, 32))
	}
	at := len(nd.buf)
	nd.buf = nd.buf[:at+sz]
	putEntry(nd.buf[at:], e)
	nd.n++
	nd.lp += lpEntrySize(e)
}

func (l *List) nodePushFront(nd *lnode, e []byte) {
	sz := entrySize(e)
	if nd.head < sz {
		used := len(nd.buf) - nd.head
		l.regrow(nd, max(sz, used/2, 32), 0)
	}
	nd.head -= sz
	putEntry(nd.buf[nd.head:nd.head+sz], e)
	nd.n++
	nd.lp += lpEntrySize(e)
}

// nodePopFront removes the first entry.
func (l *List) nodePopFront(nd *lnode) {
	e, end := nd.next(nd.head)
	nd.lp -= lpEntrySize(e)
	nd.head = end
	nd.n--
	l.settle(nd)
}

// nodePopBack removes the last entry.
func (l *List) nodePopBack(nd *lnode) {
	e, start := nd.prev(len(nd.buf))
	nd.lp -= lpEntrySize(e)
	nd.buf = nd.buf[:start]
	nd.n--
	l.settle(nd)
}

// settle resets an emptied node. (The space that pops free at the front
// is reclaimed when a push at the back next grows the buffer.)
func (l *List) settle(nd *lnode) {
	if nd.n == 0 {
		nd.head, nd.buf = 0, nd.buf[:0]
		if cap(nd.buf) > 256 {
			l.mem -= cap(nd.buf)
			nd.buf = nil
		}
	}
}

// compact gives back a buffer that is mostly free space.
func (l *List) compact(nd *lnode) {
	l.settle(nd)
	if used := len(nd.buf) - nd.head; cap(nd.buf) > 1024 && used < cap(nd.buf)/4 {
		l.regrow(nd, 0, used/2)
	}
}

// splice replaces the bytes [from, to) of nd.buf by room for size bytes
// and returns the offset where they start (offsets may move).
func (l *List) splice(nd *lnode, from, to, size int) int {
	d := size - (to - from)
	switch {
	case d < 0:
		n := copy(nd.buf[from+size:], nd.buf[to:])
		nd.buf = nd.buf[:from+size+n]
	case d > 0:
		if cap(nd.buf)-len(nd.buf) < d {
			used := len(nd.buf) - nd.head
			h := nd.head
			l.regrow(nd, 0, max(d, used/4))
			from, to = from-h, to-h
		}
		nd.buf = nd.buf[:len(nd.buf)+d]
		copy(nd.buf[to+d:], nd.buf[to:len(nd.buf)-d])
	}
	return from
}

// ---- locating ----

func (l *List) numNodes() int {
	if l.quick {
		return len(l.nodes)
	}
	if l.count == 0 {
		return 0
	}
	return 1
}

func (l *List) node(i int) *lnode {
	if l.quick {
		return l.nodes[i]
	}
	return &l.one
}

// locate returns the node holding element i (0 <= i < count), the node's
// position, and i's index within it.
func (l *List) locate(i int) (nd *lnode, ni, j int) {
	if !l.quick {
		return &l.one, 0, i
	}
	if i < l.count/2 {
		for ni, nd = range l.nodes {
			if i < nd.n {
				return nd, ni, i
			}
			i -= nd.n
		}
	}
	i = l.count - 1 - i // from the tail
	for ni = len(l.nodes) - 1; ; ni-- {
		nd = l.nodes[ni]
		if i < nd.n {
			return nd, ni, nd.n - 1 - i
		}
		i -= nd.n
	}
}

// offset returns the start and end offsets of entry j of nd.
func (nd *lnode) offset(j int) (start, end int) {
	if j < nd.n/2 {
		off := nd.head
		for ; j > 0; j-- {
			_, off = nd.next(off)
		}
		_, end = nd.next(off)
		return off, end
	}
	end = len(nd.buf)
	for k := nd.n - 1; k > j; k-- {
		_, end = nd.prev(end)
	}
	_, start = nd.prev(end)
	return start, end
}

// ---- reads ----

// Index returns element i (negative counts from the tail) and whether it
// exists. The slice is read-only and valid until the next change.
func (l *List) Index(i int64) ([]byte, bool) {
	if i < 0 {
		i += int64(l.count)
	}
	if i < 0 || i >= int64(l.count) {
		return nil, false
	}
	nd, _, j := l.locate(int(i))
	s, _ := nd.offset(j)
	e, _ := nd.next(s)
	return e, true
}

// Range calls fn for elements start..stop (0 <= start <= stop < Len) in
// order, until fn returns false.
func (l *List) Range(start, stop int, fn func(e []byte) bool) {
	l.Each(start, false, func(i int, e []byte) bool {
		return i <= stop && fn(e)
	})
}

// Each calls fn with each element's index and bytes from element from
// (0 <= from < Len) towards the tail, or towards the head if reverse,
// until fn returns false.
func (l *List) Each(from int, reverse bool, fn func(i int, e []byte) bool) {
	if from < 0 || from >= l.count {
		return
	}
	nd, ni, j := l.locate(from)
	start, end := nd.offset(j)
	i := from
	for {
		if !reverse {
			for off := start; off < len(nd.buf); i++ {
				var e []byte
				e, off = nd.next(off)
				if !fn(i, e) {
					return
				}
			}
			if ni++; ni >= l.numNodes() {
				return
			}
			nd = l.node(ni)
			start = nd.head
		} else {
			for off := end; off > nd.head; i-- {
				var e []byte
				e, off = nd.prev(off)
				if !fn(i, e) {
					return
				}
			}
			if ni--; ni < 0 {
				return
			}
			nd = l.node(ni)
			end = len(nd.buf)
		}
	}
}

// Pos returns the indexes of element e as LPOS finds them: rank r (not 0)
// is the r-th match from the head (negative: from the tail), count is the
// most matches to return (0: all), maxlen the most elements to compare
// (0: all).
func (l *List) Pos(e []byte, rank, count, maxlen int64) []int64 {
	var out []int64
	if l.count == 0 {
		return nil
	}
	reverse, from := rank < 0, 0
	if reverse {
		rank, from = -rank, l.count-1
	}
	var seen, matched int64
	l.Each(from, reverse, func(i int, x []byte) bool {
		if maxlen > 0 && seen >= maxlen {
			return false
		}
		seen++
		if string(x) == string(e) {
			if matched++; matched >= rank {
				out = append(out, int64(i))
				if count > 0 && int64(len(out)) >= count {
					return false
				}
			}
		}
		return true
	})
	return out
}

// ---- changes ----

// growCheck leaves the packed form before args are added if Redis would:
// when the listpack's size plus the raw length of args passes the limit.
func (l *List) growCheck(args [][]byte) {
	if l.quick {
		return
	}
	add := 0
	for _, a := range args {
		add += len(a)
	}
	if l.one.lp+add > listNodeLimit {
		l.toQuick()
	}
}

func (l *List) toQuick() {
	nd := new(lnode)
	*nd = l.one
	l.one = lnode{lp: lpHeader}
	l.quick = true
	l.nodes = l.nodes[:0]
	if nd.n > 0 {
		l.nodes = append(l.nodes, nd)
		l.mem += listNodeMem
	} else {
		l.mem -= cap(nd.buf)
	}
}

// shrinkCheck returns to the packed form when a quicklist is down to one
// node of at most half the limit (as Redis after a shrinking change).
func (l *List) shrinkCheck() {
	if !l.quick || len(l.nodes) > 1 || (len(l.nodes) == 1 && l.nodes[0].lp > listNodeLimit/2) {
		return
	}
	if len(l.nodes) == 1 {
		l.one = *l.nodes[0]
		l.mem -= listNodeMem
	} else {
		l.one = lnode{lp: lpHeader}
	}
	l.nodes, l.quick = nil, false
}

// fits reports whether node nd takes one more element of n bytes.
func fits(nd *lnode, n int) bool {
	return n <= listNodeLimit && nd.lp+n+listNodeOverhead <= listNodeLimit
}

func (l *List) newNode(e []byte, front bool) *lnode {
	sz := entrySize(e)
	c := listNodeLimit // a new node in a quicklist will most likely fill
	if sz > listNodeLimit/2 {
		c = sz
	}
	nd := &lnode{lp: lpHeader, buf: make([]byte, 0, c)}
	if front {
		nd.buf, nd.head = nd.buf[:c], c
	}
	l.mem += c + listNodeMem
	return nd
}

func (l *List) pushBack(e []byte) {
	l.count++
	if !l.quick {
		l.nodePushBack(&l.one, e)
		return
	}
	if n := len(l.nodes); n > 0 && fits(l.nodes[n-1], len(e)) {
		l.nodePushBack(l.nodes[n-1], e)
		return
	}
	nd := l.newNode(e, false)
	l.nodePushBack(nd, e)
	l.nodes = append(l.nodes, nd)
}

func (l *List) pushFront(e []byte) {
	l.count++
	if !l.quick {
		l.nodePushFront(&l.one, e)
		return
	}
	if len(l.nodes) > 0 && fits(l.nodes[0], len(e)) {
		l.nodePushFront(l.nodes[0], e)
		return
	}
	nd := l.newNode(e, true)
	l.nodePushFront(nd, e)
	l.nodes = append(l.nodes, nil)
	copy(l.nodes[1:], l.nodes)
	l.nodes[0] = nd
}

// dropNode removes the empty node at ni.
func (l *List) dropNode(ni int) {
	l.mem -= cap(l.nodes[ni].buf) + listNodeMem
	copy(l.nodes[ni:], l.nodes[ni+1:])
	l.nodes[len(l.nodes)-1] = nil
	l.nodes = l.nodes[:len(l.nodes)-1]
}

func (l *List) popFront() {
	l.count--
	if !l.quick {
		l.nodePopFront(&l.one)
		return
	}
	l.nodePopFront(l.nodes[0])
	if l.nodes[0].n == 0 {
		l.dropNode(0)
	}
}

func (l *List) popBack() {
	l.count--
	if !l.quick {
		l.nodePopBack(&l.one)
		return
	}
	n := len(l.nodes) - 1
	l.nodePopBack(l.nodes[n])
	if l.nodes[n].n == 0 {
		l.dropNode(n)
	}
}

// splitIfBig halves node ni of a quicklist while it is over the limit.
func (l *List) splitIfBig(ni int) {
	nd := l.nodes[ni]
	if nd.lp <= listNodeLimit || nd.n < 2 {
		return
	}
	right := &lnode{lp: lpHeader}
	l.mem += listNodeMem
	for right.n < nd.n {
		e, _ := nd.prev(len(nd.buf))
		l.nodePushFront(right, e)
		l.nodePopBack(nd)
	}
	l.nodes = append(l.nodes, nil)
	copy(l.nodes[ni+2:], l.nodes[ni+1:])
	l.nodes[ni+1] = right
	l.splitIfBig(ni + 1)
	l.splitIfBig(ni)
}

// set replaces element i.
func (l *List) set(i int, e []byte) {
	nd, ni, j := l.locate(i)
	s, end := nd.offset(j)
	old, _ := nd.next(s)
	nd.lp += lpEntrySize(e) - lpEntrySize(old)
	at := l.splice(nd, s, end, entrySize(e))
	putEntry(nd.buf[at:at+entrySize(e)], e)
	if l.quick {
		l.splitIfBig(ni)
	}
}

// insert puts e before element i (0 <= i < count).
func (l *List) insert(i int, e []byte) {
	nd, ni, j := l.locate(i)
	s, _ := nd.offset(j)
	at := l.splice(nd, s, s, entrySize(e))
	putEntry(nd.buf[at:at+entrySize(e)], e)
	nd.n++
	nd.lp += lpEntrySize(e)
	l.count++
	if l.quick {
		l.splitIfBig(ni)
	}
}

// remove deletes the matches of e after skipping the first skip, at most
// limit of them (0: all), and returns how many it removed.
func (l *List) remove(e []byte, skip, limit int) int {
	removed := 0
	for ni := 0; ni < l.numNodes(); ni++ {
		nd := l.node(ni)
		w := nd.head // write offset: entries are kept by moving them down
		for off := nd.head; off < len(nd.buf); {
			x, end := nd.next(off)
			drop := false
			if string(x) == string(e) && (limit == 0 || removed < limit) {
				if skip > 0 {
					skip--
				} else {
					drop = true
				}
			}
			if drop {
				removed++
				nd.n--
				nd.lp -= lpEntrySize(x)
			} else {
				w += copy(nd.buf[w:], nd.buf[off:end])
			}
			off = end
		}
		nd.buf = nd.buf[:w]
		l.compact(nd)
		if l.quick && nd.n == 0 {
			l.dropNode(ni)
			ni--
		}
	}
	l.count -= removed
	return removed
}

func (l *List) apply(op Op, args [][]byte) (int64, bool, error) {
	switch op {
	case OpLPush, OpRPush:
		if len(args) == 0 {
			return 0, false, badArgs(op, args)
		}
		l.growCheck(args)
		for _, a := range args {
			if op == OpLPush {
				l.pushFront(a)
			} else {
				l.pushBack(a)
			}
		}
		return int64(l.count), true, nil
	case OpLPop, OpRPop:
		if len(args) != 1 {
			return 0, false, badArgs(op, args)
		}
		n, ok := parseCount(args[0])
		if !ok {
			return 0, false, badArgs(op, args)
		}
		n = min(n, int64(l.count))
		for k := int64(0); k < n; k++ {
			if op == OpLPop {
				l.popFront()
			} else {
				l.popBack()
			}
		}
		l.shrinkCheck()
		return n, n > 0, nil
	case OpLSet:
		if len(args) != 2 {
			return 0, false, badArgs(op, args)
		}
		i, ok := parseCount(args[0])
		if !ok || i >= int64(l.count) {
			return 0, false, fmt.Errorf("%w: lset index %q out of range", ErrBadOp, args[0])
		}
		l.growCheck(args[1:])
		l.set(int(i), args[1])
		l.shrinkCheck()
		return 1, true, nil
	case OpLTrim:
		if len(args) != 2 {
			return 0, false, badArgs(op, args)
		}
		start, ok1 := parseCount(args[0])
		stop, ok2 := parseCount(args[1])
		if !ok1 || !ok2 || (start <= stop && stop >= int64(l.count)) {
			return 0, false, fmt.Errorf("%w: ltrim %q %q out of range", ErrBadOp, args[0], args[1])
		}
		before := l.count
		if start > stop {
			for l.count > 0 {
				l.popBack()
			}
		} else {
			for k := int64(0); k < start; k++ {
				l.popFront()
			}
			for int64(l.count) > stop-start+1 {
				l.popBack()
			}
		}
		l.shrinkCheck()
		removed := before - l.count
		return int64(removed), removed > 0, nil
	case OpLInsert:
		if len(args) != 2 {
			return 0, false, badArgs(op, args)
		}
		i, ok := parseCount(args[0])
		if !ok || i > int64(l.count) {
			return 0, false, fmt.Errorf("%w: linsert index %q out of range", ErrBadOp, args[0])
		}
		l.growCheck(args[1:])
		if int(i) == l.count {
			l.pushBack(args[1])
		} else {
			l.insert(int(i), args[1])
		}
		return int64(l.count), true, nil
	case OpLRem:
		if len(args) != 2 {
			return 0, false, badArgs(op, args)
		}
		c, err := parseInt(args[0])
		if err != nil {
			return 0, false, badArgs(op, args)
		}
		skip, limit := 0, 0
		if c != 0 {
			limit = int(min(absInt64(c), int64(l.count)))
		}
		if c < 0 {
			// The last limit matches: skip all the others.
			total := 0
			l.Each(0, false, func(_ int, x []byte) bool {
				if string(x) == string(args[1]) {
					total++
				}
				return true
			})
			skip = max(total-limit, 0)
		}
		n := l.remove(args[1], skip, limit)
		l.shrinkCheck()
		return int64(n), n > 0, nil
	}
	return 0, false, fmt.Errorf("%w: %s on a list", ErrBadOp, op)
}

func absInt64(v int64) int64 {
	if v < 0 {
		if v == math.MinInt64 {
			return math.MaxInt64
		}
		return -v
	}
	return v
}

// parseInt reads a canonical decimal integer argument.
func parseInt(b []byte) (int64, error) {
	v, ok := resp.ParseInt(b)
	if !ok {
		return 0, fmt.Errorf("%w: %q is not an integer", ErrBadOp, b)
	}
	return v, nil
}

// AppendBinary appends the persistent form: a uvarint element count, then
// each element as a uvarint length and bytes, head first.
func (l *List) AppendBinary(dst []byte) []byte {
	dst = appendUvarint(dst, uint64(l.count))
	l.Each(0, false, func(_ int, e []byte) bool {
		dst = packedAppend(dst, e)
		return true
	})
	return dst
}

func decodeList(b []byte) (*List, error) {
	r := reader{b: b}
	n := r.count(1)
	l := NewList()
	for i := 0; i < n && r.err == nil; i++ {
		e := r.bytes()
		if r.err == nil {
			l.growCheck([][]byte{e})
			l.pushBack(e)
		}
	}
	if err := r.done(); err != nil {
		return nil, err
	}
	return l, nil
}
