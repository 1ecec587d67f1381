package coll

import "unsafe"

// zskip is the big form of a sorted set: a member → node map and a
// skiplist ordered by (score, member) whose links carry spans (how many
// nodes they pass), so rank lookups, rank seeks and inserts and deletes
// are O(log n), as Redis's zset. Levels come from a xorshift generator
// seeded per set: deterministic, and they only shape the index.
type zskip struct {
	head   *znode
	tail   *znode
	level  int
	length int
	dict   map[string]*znode
	bytes  int // member bytes + level slots, for MemoryUsage
	rng    uint64
}

type znode struct {
	member string
	score  float64
	back   *znode
	lv     []zlevel
}

type zlevel struct {
	next *znode
	span int
}

const zskipMaxLevel = 32

func newZskip(hint int) *zskip {
	return &zskip{
		head:  &znode{lv: make([]zlevel, zskipMaxLevel)},
		level: 1,
		dict:  make(map[string]*znode, hint),
		rng:   0x9e3779b97f4a7c15,
	}
}

// memory estimates the bytes held: per node its struct, level slots, the
// member and a map slot.
func (z *zskip) memory() int {
	return zskipMaxLevel*16 + z.length*(48+48) + z.bytes
}

func (z *zskip) randomLevel() int {
	lvl := 1
	for lvl < zskipMaxLevel {
		z.rng ^= z.rng << 13
		z.rng ^= z.rng >> 7
		z.rng ^= z.rng << 17
		if z.rng&3 != 0 { // p = 1/4
			break
		}
		lvl++
	}
	return lvl
}

// zless reports whether (s1, m1) orders before (s2, m2).
func zless(s1 float64, m1 string, s2 float64, m2 string) bool {
	return s1 < s2 || (s1 == s2 && m1 < m2)
}

func (z *zskip) insert(score float64, member string) *znode {
	var update [zskipMaxLevel]*znode
	var rank [zskipMaxLevel]int
	x := z.head
	for i := z.level - 1; i >= 0; i-- {
		if i < z.level-1 {
			rank[i] = rank[i+1]
		}
		for x.lv[i].next != nil && zless(x.lv[i].next.score, x.lv[i].next.member, score, member) {
			rank[i] += x.lv[i].span
			x = x.lv[i].next
		}
		update[i] = x
	}
	lvl := z.randomLevel()
	if lvl > z.level {
		for i := z.level; i < lvl; i++ {
			rank[i] = 0
			update[i] = z.head
			update[i].lv[i].span = z.length
		}
		z.level = lvl
	}
	n := &znode{member: member, score: score, lv: make([]zlevel, lvl)}
	for i := 0; i < lvl; i++ {
		n.lv[i].next = update[i].lv[i].next
		update[i].lv[i].next = n
		n.lv[i].span = update[i].lv[i].span - (rank[0] - rank[i])
		update[i].lv[i].span = rank[0] - rank[i] + 1
	}
	for i := lvl; i < z.level; i++ {
		update[i].lv[i].span++
	}
	if update[0] != z.head {
		n.back = update[0]
	}
	if n.lv[0].next != nil {
		n.lv[0].next.back = n
	} else {
		z.tail = n
	}
	z.length++
	z.bytes += len(member) + 16*lvl
	return n
}

// unlink removes x given the last node before it at each level.
func (z *zskip) unlink(x *znode, update *[zskipMaxLevel]*znode) {
	for i := 0; i < z.level; i++ {
		if update[i].lv[i].next == x {
			update[i].lv[i].span += x.lv[i].span - 1
			update[i].lv[i].next = x.lv[i].next
		} else {
			update[i].lv[i].span--
		}
	}
	if x.lv[0].next != nil {
		x.lv[0].next.back = x.back
	} else {
		z.tail = x.back
	}
	for z.level > 1 && z.head.lv[z.level-1].next == nil {
		z.level--
	}
	z.length--
	z.bytes -= len(x.member) + 16*len(x.lv)
}

// remove deletes the node of (score, member), which must be present.
func (z *zskip) remove(score float64, member string) {
	var update [zskipMaxLevel]*znode
	x := z.head
	for i := z.level - 1; i >= 0; i-- {
		for x.lv[i].next != nil && zless(x.lv[i].next.score, x.lv[i].next.member, score, member) {
			x = x.lv[i].next
		}
		update[i] = x
	}
	x = x.lv[0].next
	z.unlink(x, &update)
	delete(z.dict, x.member)
}

// add sets member's score and reports whether it is new and whether
// anything changed.
func (z *zskip) add(score float64, member []byte) (added, changed bool) {
	if n, ok := z.dict[string(member)]; ok {
		if n.score == score { // as Redis: 0 and -0 are the same score
			return false, false
		}
		z.remove(n.score, n.member)
		z.dict[n.member] = z.insert(score, n.member)
		return false, true
	}
	m := string(member)
	z.dict[m] = z.insert(score, m)
	return true, true
}

func (z *zskip) del(member []byte) bool {
	n, ok := z.dict[string(member)]
	if !ok {
		return false
	}
	z.remove(n.score, n.member)
	return true
}

// rank returns the 0-based rank of (score, member), which must be present.
func (z *zskip) rank(score float64, member string) int {
	r := 0
	x := z.head
	for i := z.level - 1; i >= 0; i-- {
		for x.lv[i].next != nil && !zless(score, member, x.lv[i].next.score, x.lv[i].next.member) {
			r += x.lv[i].span
			x = x.lv[i].next
		}
		if x != z.head && x.member == member {
			return r - 1
		}
	}
	return r - 1
}

// byRank returns the node at 0-based rank r (0 <= r < length).
func (z *zskip) byRank(r int) *znode {
	r++
	traversed := 0
	x := z.head
	for i := z.level - 1; i >= 0; i-- {
		for x.lv[i].next != nil && traversed+x.lv[i].span <= r {
			traversed += x.lv[i].span
			x = x.lv[i].next
		}
		if traversed == r {
			return x
		}
	}
	return nil
}

// countBefore returns how many nodes come before the first node for which
// in is true, descending as Redis's range searches do (in must be false
// then true along the order for a meaningful answer).
func (z *zskip) countBefore(in func(n *znode) bool) int {
	r := 0
	x := z.head
	for i := z.level - 1; i >= 0; i-- {
		for x.lv[i].next != nil && !in(x.lv[i].next) {
			r += x.lv[i].span
			x = x.lv[i].next
		}
	}
	return r
}

// removeRanks deletes ranks [start, stop] (0-based, inclusive).
func (z *zskip) removeRanks(start, stop int) int {
	var update [zskipMaxLevel]*znode
	traversed := 0
	x := z.head
	for i := z.level - 1; i >= 0; i-- {
		for x.lv[i].next != nil && traversed+x.lv[i].span <= start {
			traversed += x.lv[i].span
			x = x.lv[i].next
		}
		update[i] = x
	}
	x = x.lv[0].next
	removed := 0
	for x != nil && traversed <= stop {
		next := x.lv[0].next
		z.unlink(x, &update)
		delete(z.dict, x.member)
		removed++
		traversed++
		x = next
	}
	return removed
}

func (z *zskip) clone() *zskip {
	c := newZskip(z.length)
	c.rng = z.rng
	for x := z.head.lv[0].next; x != nil; x = x.lv[0].next {
		// Member strings are immutable and may be shared.
		c.dict[x.member] = c.insert(x.score, x.member)
	}
	return c
}

// memberBytes views a member string as bytes (read-only).
func memberBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
