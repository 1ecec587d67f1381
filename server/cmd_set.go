package server

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/turnstile/turnstile/coll"
	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
	"github.com/turnstile/turnstile/shards"
)

func setCommands() []*Command {
	const (
		rw     = command.Write | command.DenyOOM | command.AddsKeys
		rwFast = rw | command.Fast
		roFast = command.Readonly | command.Fast
		g      = "set"
	)
	one := func(c *Command) *Command {
		c.FirstKey, c.LastKey, c.Step, c.Group = 1, 1, 1, g
		return c
	}
	all := func(c *Command) *Command {
		c.FirstKey, c.LastKey, c.Step, c.Group = 1, -1, 1, g
		return c
	}
	return []*Command{
		one(&Command{Name: "sadd", Docs: "key:key member:string...", Arity: -3, Flags: rwFast, Since: "1.0.0",
			Summary: "Adds one or more members to a set. Creates the key if it doesn't exist.", Handler: cmdSAdd}),
		one(&Command{Name: "srem", Docs: "key:key member:string...", Arity: -3, Flags: command.Write | command.Fast, Since: "1.0.0",
			Summary: "Removes one or more members from a set. Deletes the set if the last member was removed.", Handler: cmdSRem}),
		one(&Command{Name: "smembers", Docs: "key:key", Arity: 2, Flags: command.Readonly, Since: "1.0.0",
			Summary: "Returns all members of a set.", Handler: cmdSMembers}),
		one(&Command{Name: "sismember", Access: []command.KeyAccess{command.KeyAny}, Docs: "key:key member:string", Arity: 3, Flags: roFast, Since: "1.0.0",
			Summary: "Determines whether a member belongs to a set.", Handler: cmdSIsMember}),
		one(&Command{Name: "smismember", Docs: "key:key member:string...", Arity: -3, Flags: roFast, Since: "6.2.0",
			Summary: "Determines whether multiple members belong to a set.", Handler: cmdSMIsMember}),
		one(&Command{Name: "scard", Access: []command.KeyAccess{command.KeyAny}, Docs: "key:key", Arity: 2, Flags: roFast, Since: "1.0.0",
			Summary: "Returns the number of members in a set.", Handler: cmdSCard}),
		one(&Command{Name: "spop", Access: []command.KeyAccess{command.KeyReadWrite}, Docs: "key:key [count:integer]@3.2.0", Arity: -2, Flags: command.Write | command.Fast, Since: "1.0.0",
			Summary: "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped.", Handler: cmdSPop}),
		one(&Command{Name: "srandmember", Docs: "key:key [count:integer]@2.6.0", Arity: -2, Flags: command.Readonly, Since: "1.0.0",
			Summary: "Get one or multiple random members from a set", Handler: cmdSRandMember}),
		all(&Command{Name: "sinter", Docs: "key:key...", Arity: -2, Flags: command.Readonly, Since: "1.0.0",
			Summary: "Returns the intersect of multiple sets.", Handler: cmdSInter}),
		all(&Command{Name: "sunion", Docs: "key:key...", Arity: -2, Flags: command.Readonly, Since: "1.0.0",
			Summary: "Returns the union of multiple sets.", Handler: cmdSUnion}),
		all(&Command{Name: "sdiff", Docs: "key:key...", Arity: -2, Flags: command.Readonly, Since: "1.0.0",
			Summary: "Returns the difference of multiple sets.", Handler: cmdSDiff}),
		all(&Command{Name: "sinterstore", Access: []command.KeyAccess{command.KeyWrite, command.KeyRead}, Docs: "destination:key key:key...", Arity: -3, Flags: rw, Since: "1.0.0",
			Summary: "Stores the intersect of multiple sets in a key.", Handler: cmdSInterStore}),
		all(&Command{Name: "sunionstore", Access: []command.KeyAccess{command.KeyWrite, command.KeyRead}, Docs: "destination:key key:key...", Arity: -3, Flags: rw, Since: "1.0.0",
			Summary: "Stores the union of multiple sets in a key.", Handler: cmdSUnionStore}),
		all(&Command{Name: "sdiffstore", Access: []command.KeyAccess{command.KeyWrite, command.KeyRead}, Docs: "destination:key key:key...", Arity: -3, Flags: rw, Since: "1.0.0",
			Summary: "Stores the difference of multiple sets in a key.", Handler: cmdSDiffStore}),
		{Name: "sintercard", Docs: "numkeys:integer key:key... [LIMIT limit:integer]", Arity: -3, Flags: command.Readonly, Group: g, Since: "7.0.0", Locks: sinterCardLocks,
			Summary: "Returns the number of members of the intersect of multiple sets.", Handler: cmdSInterCard},
		{Name: "smove", Access: []command.KeyAccess{command.KeyReadWrite, command.KeyWrite}, Docs: "source:key destination:key member:string", Arity: 4, Flags: command.Write | command.Fast | command.AddsKeys, FirstKey: 1, LastKey: 2, Step: 1, Group: g, Since: "1.0.0",
			Summary: "Moves a member from one set to another.", Handler: cmdSMove},
		one(&Command{Name: "sscan", Docs: "key:key cursor:integer [MATCH pattern:pattern] [COUNT count:integer]", Arity: -3, Flags: command.Readonly, Since: "2.8.0",
			Summary: "Iterates over members of a set.", Handler: cmdSScan}),
	}
}

func cmdSAdd(x *Ctx) {
	if n, ok := x.change(x.args[1], coll.OpSAdd, x.args[2:]); ok {
		x.w.Int(n)
	}
}

func cmdSRem(x *Ctx) {
	_, found, ok := x.readSet(x.args[1])
	if !ok {
		return
	}
	if !found {
		x.w.Int(0)
		return
	}
	if n, ok := x.change(x.args[1], coll.OpSRem, x.args[2:]); ok {
		x.w.Int(n)
	}
}

// replySet replies the members of s (nil: empty) as a set.
func replySet(x *Ctx, s *coll.Set) {
	if s == nil {
		x.w.Set(0)
		return
	}
	x.w.Set(s.Len())
	s.Each(func(m []byte) bool { x.w.Bulk(m); return true })
}

func cmdSMembers(x *Ctx) {
	s, _, ok := x.readSet(x.args[1])
	if ok {
		replySet(x, s)
	}
}

func cmdSIsMember(x *Ctx) {
	s, found, ok := x.readSet(x.args[1])
	if ok {
		x.w.Int(b2i(found && s.IsMember(x.args[2])))
	}
}

func cmdSMIsMember(x *Ctx) {
	s, found, ok := x.readSet(x.args[1])
	if !ok {
		return
	}
	x.w.Array(len(x.args) - 2)
	for _, m := range x.args[2:] {
		x.w.Int(b2i(found && s.IsMember(m)))
	}
}

func cmdSCard(x *Ctx) {
	s, found, ok := x.readSet(x.args[1])
	if !ok {
		return
	}
	if !found {
		x.w.Int(0)
		return
	}
	x.w.Int(int64(s.Len()))
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

const errNotPositive = "ERR value is out of range, must be positive"

// cmdSPop is SPOP key [count]. The members are chosen here and their
// removal is logged as an OpSRem (a pop of the whole set as a delete).
func cmdSPop(x *Ctx) {
	key := x.args[1]
	if len(x.args) > 3 {
		x.w.Error(errSyntax)
		return
	}
	if len(x.args) == 2 {
		s, found, ok := x.readSet(key)
		if !ok {
			return
		}
		if !found {
			x.w.Null()
			return
		}
		var scratch [24]byte
		m := append([]byte(nil), s.At(rand.IntN(s.Len()), scratch[:0])...)
		x.change(key, coll.OpSRem, [][]byte{m})
		x.w.Bulk(m)
		return
	}
	count, ok := resp.ParseInt(x.args[2])
	if !ok || count < 0 {
		x.w.Error(errNotPositive)
		return
	}
	s, found, ok := x.readSet(key)
	if !ok {
		return
	}
	if !found || count == 0 {
		x.w.Set(0)
		return
	}
	n := s.Len()
	if count >= int64(n) {
		replySet(x, s)
		x.del(key)
		return
	}
	var picked memberList
	ix := newSetIndex(s, int(count))
	for _, i := range pickDistinct(n, int(count)) {
		picked.add(ix.at(i))
	}
	x.change(key, coll.OpSRem, picked.args())
	x.w.Set(picked.len())
	for i := range picked.len() {
		x.w.Bulk(picked.at(i))
	}
}

// cmdSRandMember is SRANDMEMBER key [count]: distinct members for a
// positive count, count picks with repetition for a negative one.
func cmdSRandMember(x *Ctx) {
	key := x.args[1]
	if len(x.args) > 3 {
		x.w.Error(errSyntax)
		return
	}
	if len(x.args) == 2 {
		s, found, ok := x.readSet(key)
		if !ok {
			return
		}
		if !found {
			x.w.Null()
			return
		}
		var scratch [24]byte
		x.w.Bulk(s.At(rand.IntN(s.Len()), scratch[:0]))
		return
	}
	count, ok := parseRandomCount(x, x.args[2])
	if !ok {
		return
	}
	s, found, ok := x.readSet(key)
	if !ok {
		return
	}
	if !found || count == 0 {
		x.w.Array(0)
		return
	}
	n := s.Len()
	switch {
	case count < 0:
		if -count > maxRandomCount {
			x.w.Error(errRandomCount)
			return
		}
		ix := newSetIndex(s, int(-count))
		x.w.Array(int(-count))
		for range -count {
			x.w.Bulk(ix.at(rand.IntN(n)))
		}
	case count >= int64(n):
		x.w.Array(n)
		s.Each(func(m []byte) bool { x.w.Bulk(m); return true })
	default:
		ix := newSetIndex(s, int(count))
		x.w.Array(int(count))
		for _, i := range pickDistinct(n, int(count)) {
			x.w.Bulk(ix.at(i))
		}
	}
}

// readSets reads every key of a multi-set command (nil for a missing
// one). ok is false after WRONGTYPE was replied for any of them: Redis
// checks every key before it computes anything.
func readSets(x *Ctx, keys [][]byte) (sets []*coll.Set, ok bool) {
	sets = make([]*coll.Set, len(keys))
	for i, k := range keys {
		s, _, ok := x.readSet(k)
		if !ok {
			return nil, false
		}
		sets[i] = s
	}
	return sets, true
}

// interSets calls fn for each member of the intersection of sets, in the
// order of the smallest set, until fn returns false. A nil set is empty.
func interSets(sets []*coll.Set, fn func(m []byte) bool) {
	if slices.Contains(sets, nil) {
		return
	}
	sorted := slices.Clone(sets)
	slices.SortStableFunc(sorted, func(a, b *coll.Set) int { return cmp.Compare(a.Len(), b.Len()) })
	sorted[0].Each(func(m []byte) bool {
		for _, o := range sorted[1:] {
			if o != sorted[0] && !o.IsMember(m) {
				return true
			}
		}
		return fn(m)
	})
}

// unionSets returns the union of sets as a new set, built member by member
// as Redis does (so it takes the encoding Redis's would).
func unionSets(sets []*coll.Set) *coll.Set {
	u := coll.NewSet()
	one := make([][]byte, 1)
	for _, s := range sets {
		if s == nil {
			continue
		}
		s.Each(func(m []byte) bool {
			one[0] = m
			coll.Apply(u, coll.OpSAdd, one)
			return true
		})
	}
	return u
}

// redisDiffCopies reports whether Redis computes this difference by
// copying the first set and removing the other sets' members from the
// copy (its second algorithm, chosen when the first set is big next to
// the others) rather than by keeping the first set's members that no
// other set has. The stored result's encoding shows which: an encoding
// never shrinks, so the copy keeps the one the whole first set needed.
func redisDiffCopies(sets []*coll.Set) bool {
	if sets[0] == nil {
		return false
	}
	var keep, copyAll int64 // the two algorithms' work, as Redis weighs it
	for _, s := range sets {
		if s != nil {
			keep += int64(sets[0].Len())
			copyAll += int64(s.Len())
		}
	}
	return keep/2 > copyAll
}

// diffByRemoval is the difference of sets computed as Redis's second
// algorithm does: every member of the first set added one by one to a
// new set, then the members of the others removed.
func diffByRemoval(sets []*coll.Set) *coll.Set {
	d := unionSets(sets[:1])
	one := make([][]byte, 1)
	for _, s := range sets[1:] {
		if s == nil {
			continue
		}
		s.Each(func(m []byte) bool {
			one[0] = m
			coll.Apply(d, coll.OpSRem, one)
			return d.Len() > 0
		})
	}
	return d
}

// diffSets calls fn for each member of the first set that is in none of
// the others, in the first set's order.
func diffSets(sets []*coll.Set, fn func(m []byte)) {
	if sets[0] == nil {
		return
	}
	sets[0].Each(func(m []byte) bool {
		for _, o := range sets[1:] {
			if o != nil && o.IsMember(m) {
				return true
			}
		}
		fn(m)
		return true
	})
}

// The set algebra commands, with or without a destination.
const (
	setInter = iota
	setUnion
	setDiff
)

func cmdSInter(x *Ctx)      { setAlgebra(x, setInter, nil, x.args[1:]) }
func cmdSUnion(x *Ctx)      { setAlgebra(x, setUnion, nil, x.args[1:]) }
func cmdSDiff(x *Ctx)       { setAlgebra(x, setDiff, nil, x.args[1:]) }
func cmdSInterStore(x *Ctx) { setAlgebra(x, setInter, x.args[1], x.args[2:]) }
func cmdSUnionStore(x *Ctx) { setAlgebra(x, setUnion, x.args[1], x.args[2:]) }
func cmdSDiffStore(x *Ctx)  { setAlgebra(x, setDiff, x.args[1], x.args[2:]) }

// setAlgebra replies the intersection, union or difference of the sets at
// keys, or stores it at dst (replacing any value and expiry; an empty
// result deletes dst) and replies its size.
func setAlgebra(x *Ctx, op int, dst []byte, keys [][]byte) {
	sets, ok := readSets(x, keys)
	if !ok {
		return
	}
	var result *coll.Set
	switch {
	case op == setUnion:
		result = unionSets(sets)
	case op == setDiff && dst != nil && redisDiffCopies(sets):
		result = diffByRemoval(sets)
	default:
		var l memberList
		if op == setInter {
			interSets(sets, func(m []byte) bool { l.add(m); return true })
		} else {
			diffSets(sets, l.add)
		}
		if dst == nil {
			x.w.Set(l.len())
			for i := range l.len() {
				x.w.Bulk(l.at(i))
			}
			return
		}
		result = coll.NewSet()
		if l.len() > 0 {
			coll.Apply(result, coll.OpSAdd, l.args())
		}
	}
	if dst == nil {
		replySet(x, result)
		return
	}
	x.storeValue(dst, shards.KindSet, result)
	x.w.Int(int64(result.Len()))
}

// sinterCardLocks names SINTERCARD's keys: numkeys of them after it, when
// numkeys is valid (otherwise the command fails before reading any).
var sinterCardLocks = numKeysLocks(1)

// cmdSInterCard is SINTERCARD numkeys key [key ...] [LIMIT limit].
func cmdSInterCard(x *Ctx) {
	n, ok := resp.ParseInt(x.args[1])
	if !ok || n < 1 {
		x.w.Error("ERR numkeys should be greater than 0")
		return
	}
	if n > int64(len(x.args)-2) {
		x.w.Error("ERR Number of keys can't be greater than number of args")
		return
	}
	keys := x.args[2 : 2+n]
	var limit int64
	for i := 2 + int(n); i < len(x.args); i++ {
		if !isKeyword(x.args[i], "limit") || i+1 >= len(x.args) {
			x.w.Error(errSyntax)
			return
		}
		i++
		l, ok := resp.ParseInt(x.args[i])
		if !ok || l < 0 {
			x.w.Error("ERR LIMIT can't be negative")
			return
		}
		limit = l
	}
	sets, ok := readSets(x, keys)
	if !ok {
		return
	}
	var card int64
	interSets(sets, func([]byte) bool {
		card++
		return limit == 0 || card < limit
	})
	x.w.Int(card)
}

// cmdSMove is SMOVE source destination member.
func cmdSMove(x *Ctx) {
	srcKey, dstKey, m := x.args[1], x.args[2], x.args[3]
	src, found, ok := x.readSet(srcKey)
	if !ok {
		return
	}
	if !found {
		x.w.Int(0) // as Redis: before the destination's type is checked
		return
	}
	if _, _, ok := x.readSet(dstKey); !ok {
		return
	}
	if string(srcKey) == string(dstKey) {
		x.w.Int(b2i(src.IsMember(m)))
		return
	}
	if !src.IsMember(m) {
		x.w.Int(0)
		return
	}
	one := [][]byte{m}
	x.change(srcKey, coll.OpSRem, one)
	x.change(dstKey, coll.OpSAdd, one)
	x.w.Int(1)
}

// cmdSScan is SSCAN key cursor [MATCH pattern] [COUNT count]. A set in
// its intset or listpack encoding is returned whole with cursor 0, as
// Redis does; a hashtable set is walked with coll.Set.Scan's cursor.
func cmdSScan(x *Ctx) {
	cursor, ok := parseScanCursor(x.args[2])
	if !ok {
		x.w.Error(errInvalidCursor)
		return
	}
	s, found, ok := x.readSet(x.args[1])
	if !ok {
		return
	}
	if !found {
		replyEmptyScan(x)
		return
	}
	pat, count, ok := scanOptions(x)
	if !ok {
		return
	}
	var l memberList
	next := s.Scan(cursor, count, func(m []byte) {
		if pat == nil || globMatch(pat, m, false) {
			l.add(m)
		}
	})
	x.w.Array(2)
	x.w.BulkString(strconv.FormatUint(next, 10))
	x.w.Array(l.len())
	for i := range l.len() {
		x.w.Bulk(l.at(i))
	}
}
