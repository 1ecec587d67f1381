package server

import (
	"bytes"
	"strconv"

	"github.com/turnstile/turnstile/coll"
	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
)

func listCommands() []*Command {
	const (
		rwFast = command.Write | command.DenyOOM | command.AddsKeys | command.Fast
		rw     = command.Write | command.DenyOOM | command.AddsKeys
		wFast  = command.Write | command.Fast
		roFast = command.Readonly | command.Fast
	)
	one := func(c *Command) *Command {
		c.FirstKey, c.LastKey, c.Step, c.Group = 1, 1, 1, "list"
		return c
	}
	two := func(c *Command) *Command {
		c.FirstKey, c.LastKey, c.Step, c.Group = 1, 2, 1, "list"
		return c
	}
	return []*Command{
		one(&Command{Name: "lpush", Docs: "key:key element:string...", Arity: -3, Flags: rwFast, Since: "1.0.0",
			Summary: "Prepends one or more elements to a list. Creates the key if it doesn't exist.", Handler: cmdPush}),
		one(&Command{Name: "rpush", Docs: "key:key element:string...", Arity: -3, Flags: rwFast, Since: "1.0.0",
			Summary: "Appends one or more elements to a list. Creates the key if it doesn't exist.", Handler: cmdPush}),
		one(&Command{Name: "lpushx", Docs: "key:key element:string...", Arity: -3, Flags: command.Write | command.DenyOOM | command.Fast, Since: "2.2.0",
			Summary: "Prepends one or more elements to a list only when the list exists.", Handler: cmdPush}),
		one(&Command{Name: "rpushx", Docs: "key:key element:string...", Arity: -3, Flags: command.Write | command.DenyOOM | command.Fast, Since: "2.2.0",
			Summary: "Appends an element to a list only when the list exists.", Handler: cmdPush}),
		one(&Command{Name: "lpop", Access: []command.KeyAccess{command.KeyReadWrite}, Docs: "key:key [count:integer]@6.2.0", Arity: -2, Flags: wFast, Since: "1.0.0",
			Summary: "Returns the first elements in a list after removing it. Deletes the list if the last element was popped.", Handler: cmdPop}),
		one(&Command{Name: "rpop", Access: []command.KeyAccess{command.KeyReadWrite}, Docs: "key:key [count:integer]@6.2.0", Arity: -2, Flags: wFast, Since: "1.0.0",
			Summary: "Returns and removes the last elements of a list. Deletes the list if the last element was popped.", Handler: cmdPop}),
		one(&Command{Name: "lrange", Docs: "key:key start:integer stop:integer", Arity: 4, Flags: command.Readonly, Since: "1.0.0",
			Summary: "Returns a range of elements from a list.", Handler: cmdLRange}),
		one(&Command{Name: "ltrim", Docs: "key:key start:integer stop:integer", Arity: 4, Flags: command.Write, Since: "1.0.0",
			Summary: "Removes elements from both ends a list. Deletes the list if all elements were trimmed.", Handler: cmdLTrim}),
		one(&Command{Name: "lindex", Docs: "key:key index:integer", Arity: 3, Flags: command.Readonly, Since: "1.0.0",
			Summary: "Returns an element from a list by its index.", Handler: cmdLIndex}),
		one(&Command{Name: "lset", Docs: "key:key index:integer element:string", Arity: 4, Flags: command.Write | command.DenyOOM, Since: "1.0.0",
			Summary: "Sets the value of an element in a list by its index.", Handler: cmdLSet}),
		one(&Command{Name: "llen", Access: []command.KeyAccess{command.KeyAny}, Docs: "key:key", Arity: 2, Flags: roFast, Since: "1.0.0",
			Summary: "Returns the length of a list.", Handler: cmdLLen}),
		one(&Command{Name: "lrem", Docs: "key:key count:integer element:string", Arity: 4, Flags: command.Write, Since: "1.0.0",
			Summary: "Removes elements from a list. Deletes the list if the last element was removed.", Handler: cmdLRem}),
		one(&Command{Name: "linsert", Docs: "key:key where=(BEFORE|AFTER) pivot:string element:string", Arity: 5, Flags: command.Write | command.DenyOOM, Since: "2.2.0",
			Summary: "Inserts an element before or after another element in a list.", Handler: cmdLInsert}),
		one(&Command{Name: "lpos", Docs: "key:key element:string [RANK rank:integer] [COUNT num-matches:integer] [MAXLEN len:integer]", Arity: -3, Flags: command.Readonly, Since: "6.0.6",
			Summary: "Returns the index of matching elements in a list.", Handler: cmdLPos}),
		two(&Command{Name: "lmove", Access: []command.KeyAccess{command.KeyReadWrite, command.KeyWrite}, Docs: "source:key destination:key wherefrom=(LEFT|RIGHT) whereto=(LEFT|RIGHT)", Arity: 5, Flags: rw, Since: "6.2.0",
			Summary: "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved.", Handler: cmdLMove}),
		two(&Command{Name: "rpoplpush", Access: []command.KeyAccess{command.KeyReadWrite, command.KeyWrite}, Docs: "source:key destination:key", Arity: 3, Flags: rw, Since: "1.2.0",
			Summary: "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped.", Handler: cmdLMove}),
	}
}

// Redis's list errors.
const (
	errMustBePositive = "ERR value is out of range, must be positive"
	errIndexRange     = "ERR index out of range"
	errRankZero       = "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"
	errCountNegative  = "ERR COUNT can't be negative"
	errMaxlenNegative = "ERR MAXLEN can't be negative"
)

// decimal returns n in decimal in buf's storage (an op argument).
func decimal(buf []byte, n int64) []byte { return strconv.AppendInt(buf[:0], n, 10) }

// LPUSH RPUSH LPUSHX RPUSHX key element [element ...]
func cmdPush(x *Ctx) {
	args := x.args
	name := x.cmd.Name
	op := coll.OpRPush
	if name[0] == 'l' {
		op = coll.OpLPush
	}
	if name[len(name)-1] == 'x' {
		_, found, ok := x.readList(args[1])
		if !ok {
			return
		}
		if !found {
			x.w.Int(0)
			return
		}
	}
	if n, ok := x.change(args[1], op, args[2:]); ok {
		x.w.Int(n)
	}
}

// LPOP RPOP key [count]
func cmdPop(x *Ctx) {
	args := x.args
	if len(args) > 3 {
		x.w.Error(arityError(x.cmd.Name))
		return
	}
	withCount := len(args) == 3
	count := int64(1)
	if withCount {
		n, ok := resp.ParseInt(args[2])
		if !ok || n < 0 {
			x.w.Error(errMustBePositive)
			return
		}
		count = n
	}
	l, found, ok := x.readList(args[1])
	if !ok {
		return
	}
	if !found {
		if withCount {
			x.w.NullArray()
		} else {
			x.w.Null()
		}
		return
	}
	if withCount && count == 0 {
		x.w.Array(0)
		return
	}
	popList(x, args[1], l, x.cmd.Name[0] == 'l', count, withCount)
}

// popList replies up to count elements of the list l at key, from the head
// (head) or the tail, as an array when array, else as bulk strings without
// a header, and removes them.
func popList(x *Ctx, key []byte, l *coll.List, head bool, count int64, array bool) {
	count = min(count, int64(l.Len()))
	if array {
		x.w.Array(int(count))
	}
	from := 0
	if !head {
		from = l.Len() - 1
	}
	k := int64(0)
	l.Each(from, !head, func(_ int, e []byte) bool {
		x.w.Bulk(e)
		k++
		return k < count
	})
	op := coll.OpLPop
	if !head {
		op = coll.OpRPop
	}
	var buf [20]byte
	x.change(key, op, x.opArgs(x.opBytes(decimal(buf[:], count))))
}

// listRange normalises start and stop as Redis's LRANGE does; ok is false
// for an empty range.
func listRange(start, stop int64, n int) (int, int, bool) {
	ln := int64(n)
	if start < 0 {
		start += ln
	}
	if stop < 0 {
		stop += ln
	}
	if start < 0 {
		start = 0
	}
	if start > stop || start >= ln {
		return 0, 0, false
	}
	if stop >= ln {
		stop = ln - 1
	}
	return int(start), int(stop), true
}

// LRANGE key start stop
func cmdLRange(x *Ctx) {
	args := x.args
	start, ok1 := resp.ParseInt(args[2])
	stop, ok2 := resp.ParseInt(args[3])
	if !ok1 || !ok2 {
		x.w.Error(errNotInt)
		return
	}
	l, found, ok := x.readList(args[1])
	if !ok {
		return
	}
	if !found {
		x.w.Array(0)
		return
	}
	s, e, ok := listRange(start, stop, l.Len())
	if !ok {
		x.w.Array(0)
		return
	}
	x.w.Array(e - s + 1)
	l.Range(s, e, func(b []byte) bool {
		x.w.Bulk(b)
		return true
	})
}

// LTRIM key start stop
func cmdLTrim(x *Ctx) {
	args := x.args
	start, ok1 := resp.ParseInt(args[2])
	stop, ok2 := resp.ParseInt(args[3])
	if !ok1 || !ok2 {
		x.w.Error(errNotInt)
		return
	}
	l, found, ok := x.readList(args[1])
	if !ok {
		return
	}
	if !found {
		x.w.OK()
		return
	}
	var b1, b2 [20]byte
	s, e, keep := listRange(start, stop, l.Len())
	switch {
	case !keep:
		x.change(args[1], coll.OpLTrim, [][]byte{decimal(b1[:], 1), decimal(b2[:], 0)})
	case s > 0 || e < l.Len()-1:
		x.change(args[1], coll.OpLTrim, [][]byte{decimal(b1[:], int64(s)), decimal(b2[:], int64(e))})
	}
	x.w.OK()
}

// LINDEX key index
func cmdLIndex(x *Ctx) {
	args := x.args
	l, found, ok := x.readList(args[1])
	if !ok {
		return
	}
	if !found {
		x.w.Null()
		return
	}
	i, ok := resp.ParseInt(args[2])
	if !ok {
		x.w.Error(errNotInt)
		return
	}
	if e, ok := l.Index(i); ok {
		x.w.Bulk(e)
	} else {
		x.w.Null()
	}
}

// LSET key index element
func cmdLSet(x *Ctx) {
	args := x.args
	l, found, ok := x.readList(args[1])
	if !ok {
		return
	}
	if !found {
		x.w.Error(errNoSuchKey)
		return
	}
	i, ok := resp.ParseInt(args[2])
	if !ok {
		x.w.Error(errNotInt)
		return
	}
	if i < 0 {
		i += int64(l.Len())
	}
	if i < 0 || i >= int64(l.Len()) {
		x.w.Error(errIndexRange)
		return
	}
	var buf [20]byte
	if _, ok := x.change(args[1], coll.OpLSet, [][]byte{decimal(buf[:], i), args[3]}); ok {
		x.w.OK()
	}
}

// LLEN key
func cmdLLen(x *Ctx) {
	args := x.args
	l, found, ok := x.readList(args[1])
	if !ok {
		return
	}
	if !found {
		x.w.Int(0)
		return
	}
	x.w.Int(int64(l.Len()))
}

// LREM key count element
func cmdLRem(x *Ctx) {
	args := x.args
	if _, ok := resp.ParseInt(args[2]); !ok {
		x.w.Error(errNotInt)
		return
	}
	_, found, ok := x.readList(args[1])
	if !ok {
		return
	}
	if !found {
		x.w.Int(0)
		return
	}
	if n, ok := x.change(args[1], coll.OpLRem, args[2:4]); ok {
		x.w.Int(n)
	}
}

// LINSERT key BEFORE|AFTER pivot element
func cmdLInsert(x *Ctx) {
	args := x.args
	var after bool
	switch {
	case isKeyword(args[2], "after"):
		after = true
	case isKeyword(args[2], "before"):
	default:
		x.w.Error(errSyntax)
		return
	}
	l, found, ok := x.readList(args[1])
	if !ok {
		return
	}
	if !found {
		x.w.Int(0)
		return
	}
	pos := l.Pos(args[3], 1, 1, 0)
	if len(pos) == 0 {
		x.w.Int(-1)
		return
	}
	i := pos[0]
	if after {
		i++
	}
	var buf [20]byte
	if n, ok := x.change(args[1], coll.OpLInsert, [][]byte{decimal(buf[:], i), args[4]}); ok {
		x.w.Int(n)
	}
}

// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]
func cmdLPos(x *Ctx) {
	args := x.args
	rank, count, maxlen := int64(1), int64(-1), int64(0)
	for j := 3; j < len(args); j++ {
		more := j+1 < len(args)
		opt := args[j]
		switch {
		case more && isKeyword(opt, "rank"):
			j++
			n, ok := resp.ParseInt(args[j])
			if !ok {
				x.w.Error(errNotInt)
				return
			}
			if n == 0 {
				x.w.Error(errRankZero)
				return
			}
			rank = n
		case more && isKeyword(opt, "count"):
			j++
			n, ok := resp.ParseInt(args[j])
			if !ok || n < 0 {
				x.w.Error(errCountNegative)
				return
			}
			count = n
		case more && isKeyword(opt, "maxlen"):
			j++
			n, ok := resp.ParseInt(args[j])
			if !ok || n < 0 {
				x.w.Error(errMaxlenNegative)
				return
			}
			maxlen = n
		default:
			x.w.Error(errSyntax)
			return
		}
	}
	l, found, ok := x.readList(args[1])
	if !ok {
		return
	}
	if !found {
		if count >= 0 {
			x.w.Array(0)
		} else {
			x.w.Null()
		}
		return
	}
	want := count
	if count < 0 {
		want = 1
	}
	pos := l.Pos(args[2], rank, want, maxlen)
	if count < 0 {
		if len(pos) == 0 {
			x.w.Null()
		} else {
			x.w.Int(pos[0])
		}
		return
	}
	x.w.Array(len(pos))
	for _, p := range pos {
		x.w.Int(p)
	}
}

// LMOVE source destination LEFT|RIGHT LEFT|RIGHT; RPOPLPUSH source destination
func cmdLMove(x *Ctx) {
	args := x.args
	fromLeft, toLeft := false, true // RPOPLPUSH
	if len(args) == 5 {
		var ok1, ok2 bool
		fromLeft, ok1 = side(args[3])
		toLeft, ok2 = side(args[4])
		if !ok1 || !ok2 {
			x.w.Error(errSyntax)
			return
		}
	}
	src, dst := args[1], args[2]
	l, found, ok := x.readList(src)
	if !ok {
		return
	}
	if !found {
		x.w.Null()
		return
	}
	moveList(x, src, dst, l, fromLeft, toLeft)
}

// moveList moves an element of the list l at src, its head when fromLeft,
// to the head (toLeft) or tail of the list at dst, and replies it; or
// replies WRONGTYPE when dst holds another type.
func moveList(x *Ctx, src, dst []byte, l *coll.List, fromLeft, toLeft bool) {
	if _, _, ok := x.readList(dst); !ok {
		return
	}
	i := int64(0)
	if !fromLeft {
		i = -1
	}
	e, _ := l.Index(i)
	// A copy: popping and pushing may reuse the bytes e points at.
	var buf [64]byte
	elem := append(buf[:0], e...)
	pop, push := coll.OpRPop, coll.OpRPush
	if fromLeft {
		pop = coll.OpLPop
	}
	if toLeft {
		push = coll.OpLPush
	}
	if bytes.Equal(src, dst) && l.Len() == 1 {
		// Rotating a one-element list leaves it as it is, but popping first
		// would empty (delete) the key and lose its TTL: record the move as
		// a write of the element in place (watchers and the log see a
		// change, as Redis signals one).
		x.change(src, coll.OpLSet, [][]byte{[]byte("0"), elem})
	} else {
		x.change(src, pop, [][]byte{[]byte("1")})
		x.change(dst, push, [][]byte{elem})
	}
	x.w.Bulk(elem)
}

// side reads LEFT or RIGHT (true for LEFT).
func side(b []byte) (left, ok bool) {
	switch {
	case isKeyword(b, "left"):
		return true, true
	case isKeyword(b, "right"):
		return false, true
	}
	return false, false
}
