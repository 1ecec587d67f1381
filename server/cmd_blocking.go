package server

import (
	"math"

	"github.com/turnstile/turnstile/coll"
	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
	"github.com/turnstile/turnstile/shards"
)

// The blocking list and sorted-set commands (see blocking.go for how a
// client blocks), and LMPOP and ZMPOP, the non-blocking forms of BLMPOP and
// BZMPOP.

func blockingCommands() []*Command {
	const (
		w  = command.Write
		bl = command.Write | command.NoScript | command.Blocking
	)
	keys := func(c *Command, first, last int) *Command {
		c.FirstKey, c.LastKey, c.Step = first, last, 1
		return c
	}
	return []*Command{
		keys(&Command{Name: "blpop", Access: []command.KeyAccess{command.KeyReadWrite}, Docs: "key:key... timeout:double", Arity: -3, Flags: bl, Group: "list", Since: "2.0.0",
			Summary: "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", Handler: cmdBPop}, 1, -2),
		keys(&Command{Name: "brpop", Access: []command.KeyAccess{command.KeyReadWrite}, Docs: "key:key... timeout:double", Arity: -3, Flags: bl, Group: "list", Since: "2.0.0",
			Summary: "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", Handler: cmdBPop}, 1, -2),
		keys(&Command{Name: "brpoplpush", Access: []command.KeyAccess{command.KeyReadWrite, command.KeyWrite}, Docs: "source:key destination:key timeout:double", Arity: 4, Flags: bl | command.DenyOOM | command.AddsKeys, Group: "list", Since: "2.2.0",
			Summary: "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped.", Handler: cmdBLMove}, 1, 2),
		keys(&Command{Name: "blmove", Access: []command.KeyAccess{command.KeyReadWrite, command.KeyWrite}, Docs: "source:key destination:key wherefrom=(LEFT|RIGHT) whereto=(LEFT|RIGHT) timeout:double", Arity: 6, Flags: bl | command.DenyOOM | command.AddsKeys, Group: "list", Since: "6.2.0",
			Summary: "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved.", Handler: cmdBLMove}, 1, 2),
		{Name: "lmpop", Access: []command.KeyAccess{command.KeyReadWrite}, Docs: "numkeys:integer key:key... where=(LEFT|RIGHT) [COUNT count:integer]", Arity: -4, Flags: w, Group: "list", Since: "7.0.0", Locks: numKeysLocks(1),
			Summary: "Returns multiple elements from a list after removing them. Deletes the list if the last element was popped.", Handler: cmdMPop},
		{Name: "blmpop", Access: []command.KeyAccess{command.KeyReadWrite}, Docs: "timeout:double numkeys:integer key:key... where=(LEFT|RIGHT) [COUNT count:integer]", Arity: -5, Flags: w | command.Blocking, Group: "list", Since: "7.0.0", Locks: numKeysLocks(2),
			Summary: "Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", Handler: cmdMPop},
		keys(&Command{Name: "bzpopmin", Access: []command.KeyAccess{command.KeyReadWrite}, Docs: "key:key... timeout:double", Arity: -3, Flags: bl | command.Fast, Group: "sorted-set", Since: "5.0.0",
			Summary: "Removes and returns the member with the lowest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", Handler: cmdBZPop}, 1, -2),
		keys(&Command{Name: "bzpopmax", Access: []command.KeyAccess{command.KeyReadWrite}, Docs: "key:key... timeout:double", Arity: -3, Flags: bl | command.Fast, Group: "sorted-set", Since: "5.0.0",
			Summary: "Removes and returns the member with the highest score from one or more sorted sets. Blocks until a member available otherwise.  Deletes the sorted set if the last element was popped.", Handler: cmdBZPop}, 1, -2),
		{Name: "zmpop", Access: []command.KeyAccess{command.KeyReadWrite}, Docs: "numkeys:integer key:key... where=(MIN|MAX) [COUNT count:integer]", Arity: -4, Flags: w, Group: "sorted-set", Since: "7.0.0", Locks: numKeysLocks(1),
			Summary: "Returns the highest- or lowest-scoring members from one or more sorted sets after removing them. Deletes the sorted set if the last member was popped.", Handler: cmdMPop},
		{Name: "bzmpop", Access: []command.KeyAccess{command.KeyReadWrite}, Docs: "timeout:double numkeys:integer key:key... where=(MIN|MAX) [COUNT count:integer]", Arity: -5, Flags: w | command.Blocking, Group: "sorted-set", Since: "7.0.0", Locks: numKeysLocks(2),
			Summary: "Removes and returns a member by score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", Handler: cmdMPop},
	}
}

// numKeysArg reads a numkeys argument for naming keys the way Redis's key
// extraction does (COMMAND GETKEYS, ACL key checks): C's atoi, which reads
// "1.5" or " 1x" as 1 and "abc" as 0. The command itself reads it strictly
// and refuses such a value, so at worst a key is named for a command that
// then fails, as in Redis.
func numKeysArg(b []byte) int64 {
	i := 0
	for i < len(b) && (b[i] == ' ' || (b[i] >= '\t' && b[i] <= '\r')) {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	var n int64
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if n = n*10 + int64(b[i]-'0'); n > math.MaxInt32 {
			return math.MaxInt32 // more keys than any command has
		}
	}
	if neg {
		return -n
	}
	return n
}

// numKeysLocks names the keys of a command whose numkeys argument is at
// position at, read as numKeysArg does.
func numKeysLocks(at int) func(args [][]byte, db, ndb int, add func(int, []byte)) {
	return func(args [][]byte, db, _ int, add func(int, []byte)) {
		n := numKeysArg(args[at])
		if n < 1 || n > int64(len(args)-at-1) {
			return
		}
		for _, k := range args[at+1 : at+1+int(n)] {
			add(db, k)
		}
	}
}

// readWaited is readValue for a blocking command: when it runs again for a
// blocked client, a key holding another type counts as missing (Redis 7.0
// keeps the client blocked) instead of being WRONGTYPE.
func readWaited[T coll.Value](x *Ctx, key []byte, k shards.Kind) (v T, found, ok bool) {
	if x.retrying() {
		e, found := x.get(key)
		if !found || e.Kind != k {
			return v, false, true
		}
		return e.Obj.(T), true, true
	}
	return readValue[T](x, key, k)
}

// cmdBPop is BLPOP and BRPOP key [key ...] timeout.
func cmdBPop(x *Ctx) {
	popFirstOrBlock(x, shards.KindList, func(key []byte, l *coll.List) {
		x.w.Array(2)
		x.w.Bulk(key)
		popList(x, key, l, x.cmd.Name == "blpop", 1, false)
	})
}

// popFirstOrBlock is BLPOP's and BZPOPMIN's shape: key [key ...] timeout;
// serve answers from the first key (of kind k) that has an element and
// may be served now, else the client blocks on every key.
func popFirstOrBlock[T coll.Value](x *Ctx, k shards.Kind, serve func(key []byte, v T)) {
	args := x.args
	timeout, ok := parseTimeout(x, args[len(args)-1])
	if !ok {
		return
	}
	keys := args[1 : len(args)-1]
	for _, key := range keys {
		v, found, ok := readWaited[T](x, key, k)
		if !ok {
			return
		}
		if found && x.mayServe(key, k) {
			serve(key, v)
			return
		}
	}
	x.block(keys, k, timeout, false)
}

// cmdBLMove is BRPOPLPUSH source destination timeout and BLMOVE source
// destination LEFT|RIGHT LEFT|RIGHT timeout.
func cmdBLMove(x *Ctx) {
	args := x.args
	fromLeft, toLeft := false, true // BRPOPLPUSH
	if x.cmd.Name == "blmove" {
		var ok1, ok2 bool
		fromLeft, ok1 = side(args[3])
		toLeft, ok2 = side(args[4])
		if !ok1 || !ok2 {
			x.w.Error(errSyntax)
			return
		}
	}
	timeout, ok := parseTimeout(x, args[len(args)-1])
	if !ok {
		return
	}
	src, dst := args[1], args[2]
	l, found, ok := readWaited[*coll.List](x, src, shards.KindList)
	if !ok {
		return
	}
	if !found || !x.mayServe(src, shards.KindList) {
		x.block(args[1:2], shards.KindList, timeout, true)
		return
	}
	moveList(x, src, dst, l, fromLeft, toLeft)
}

// cmdBZPop is BZPOPMIN and BZPOPMAX key [key ...] timeout.
func cmdBZPop(x *Ctx) {
	popFirstOrBlock(x, shards.KindZSet, func(key []byte, z *coll.ZSet) {
		x.w.Array(3)
		x.w.Bulk(key)
		popZSet(x, key, z, x.cmd.Name == "bzpopmax", 1, func(m []byte, s float64) {
			x.w.Bulk(m)
			replyScore(x, s)
		})
	})
}

// cmdMPop is LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count], ZMPOP
// numkeys key [key ...] MIN|MAX [COUNT count], and their blocking forms
// BLMPOP and BZMPOP, which take a timeout first. The reply names the first
// key that has elements and lists those popped from it: the elements, or
// the (member, score) pairs.
func cmdMPop(x *Ctx) {
	args := x.args
	blocking := x.cmd.Name[0] == 'b'
	list := x.cmd.Name == "lmpop" || x.cmd.Name == "blmpop"
	at := 1 // numkeys
	if blocking {
		at = 2
	}
	n, ok := resp.ParseInt(args[at])
	if !ok || n < 1 {
		x.w.Error("ERR numkeys should be greater than 0")
		return
	}
	if n >= int64(len(args)-at-1) { // no room for the direction
		x.w.Error(errSyntax)
		return
	}
	keys := args[at+1 : at+1+int(n)]
	where := args[at+1+int(n)]
	var first bool // LEFT or MIN
	switch {
	case list:
		first, ok = side(where)
	case isKeyword(where, "min"):
		first, ok = true, true
	case isKeyword(where, "max"):
		first, ok = false, true
	default:
		ok = false
	}
	if !ok {
		x.w.Error(errSyntax)
		return
	}
	count := int64(-1)
	for j := at + 2 + int(n); j < len(args); j++ {
		if count != -1 || !isKeyword(args[j], "count") || j+1 >= len(args) {
			x.w.Error(errSyntax)
			return
		}
		j++
		if count, ok = resp.ParseInt(args[j]); !ok || count < 1 {
			x.w.Error("ERR count should be greater than 0")
			return
		}
	}
	count = max(count, 1)
	var timeout int64
	if blocking {
		if timeout, ok = parseTimeout(x, args[1]); !ok {
			return
		}
	}
	kind := shards.KindZSet
	if list {
		kind = shards.KindList
	}
	for _, key := range keys {
		var (
			l           *coll.List
			z           *coll.ZSet
			found, good bool
		)
		switch {
		case list && blocking:
			l, found, good = readWaited[*coll.List](x, key, kind)
		case list:
			l, found, good = x.readList(key)
		case blocking:
			z, found, good = readWaited[*coll.ZSet](x, key, kind)
		default:
			z, found, good = x.readZSet(key)
		}
		if !good {
			return
		}
		if !found || (blocking && !x.mayServe(key, kind)) {
			continue
		}
		x.w.Array(2)
		x.w.Bulk(key)
		if list {
			popList(x, key, l, first, count, true)
			return
		}
		k := int(min(count, int64(z.Len())))
		x.w.Array(k)
		popZSet(x, key, z, !first, k, func(m []byte, s float64) {
			x.w.Array(2)
			x.w.Bulk(m)
			replyScore(x, s)
		})
		return
	}
	if blocking {
		x.block(keys, kind, timeout, false)
		return
	}
	x.w.NullArray()
}
