package server

import (
	"math/big"
	"math/rand/v2"
	"strconv"

	"github.com/turnstile/turnstile/coll"
	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
)

func hashCommands() []*Command {
	const (
		rwFast = command.Write | command.DenyOOM | command.AddsKeys | command.Fast
		roFast = command.Readonly | command.Fast
	)
	one := func(c *Command) *Command {
		c.FirstKey, c.LastKey, c.Step, c.Group = 1, 1, 1, "hash"
		return c
	}
	return []*Command{
		one(&Command{Name: "hset", Docs: "key:key data=(field:string value:string)...", Arity: -4, Flags: rwFast, Since: "2.0.0",
			Summary: "Creates or modifies the value of a field in a hash.", Handler: cmdHSet}),
		one(&Command{Name: "hsetnx", Docs: "key:key field:string value:string", Arity: 4, Flags: rwFast, Since: "2.0.0",
			Summary: "Sets the value of a field in a hash only when the field doesn't exist.", Handler: cmdHSetNX}),
		one(&Command{Name: "hmset", Docs: "key:key data=(field:string value:string)...", Arity: -4, Flags: rwFast, Since: "2.0.0",
			Summary: "Sets the values of multiple fields.", Handler: cmdHSet}),
		one(&Command{Name: "hget", Docs: "key:key field:string", Arity: 3, Flags: roFast, Since: "2.0.0",
			Summary: "Returns the value of a field in a hash.", Handler: cmdHGet}),
		one(&Command{Name: "hmget", Docs: "key:key field:string...", Arity: -3, Flags: roFast, Since: "2.0.0",
			Summary: "Returns the values of all fields in a hash.", Handler: cmdHMGet}),
		one(&Command{Name: "hgetall", Docs: "key:key", Arity: 2, Flags: command.Readonly, Since: "2.0.0",
			Summary: "Returns all fields and values in a hash.", Handler: cmdHGetAll}),
		one(&Command{Name: "hdel", Docs: "key:key field:string...", Arity: -3, Flags: command.Write | command.Fast, Since: "2.0.0",
			Summary: "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.", Handler: cmdHDel}),
		one(&Command{Name: "hexists", Access: []command.KeyAccess{command.KeyAny}, Docs: "key:key field:string", Arity: 3, Flags: roFast, Since: "2.0.0",
			Summary: "Determines whether a field exists in a hash.", Handler: cmdHExists}),
		one(&Command{Name: "hlen", Access: []command.KeyAccess{command.KeyAny}, Docs: "key:key", Arity: 2, Flags: roFast, Since: "2.0.0",
			Summary: "Returns the number of fields in a hash.", Handler: cmdHLen}),
		one(&Command{Name: "hkeys", Docs: "key:key", Arity: 2, Flags: command.Readonly, Since: "2.0.0",
			Summary: "Returns all fields in a hash.", Handler: cmdHKeys}),
		one(&Command{Name: "hvals", Docs: "key:key", Arity: 2, Flags: command.Readonly, Since: "2.0.0",
			Summary: "Returns all values in a hash.", Handler: cmdHVals}),
		one(&Command{Name: "hstrlen", Access: []command.KeyAccess{command.KeyAny}, Docs: "key:key field:string", Arity: 3, Flags: roFast, Since: "3.2.0",
			Summary: "Returns the length of the value of a field.", Handler: cmdHStrlen}),
		one(&Command{Name: "hincrby", Access: []command.KeyAccess{command.KeyReadWrite}, Docs: "key:key field:string increment:integer", Arity: 4, Flags: rwFast, Since: "2.0.0",
			Summary: "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.", Handler: cmdHIncrBy}),
		one(&Command{Name: "hincrbyfloat", Access: []command.KeyAccess{command.KeyReadWrite}, Docs: "key:key field:string increment:double", Arity: 4, Flags: rwFast, Since: "2.6.0",
			Summary: "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.", Handler: cmdHIncrByFloat}),
		one(&Command{Name: "hrandfield", Docs: "key:key options=[count:integer [withvalues=WITHVALUES]]", Arity: -2, Flags: command.Readonly, Since: "6.2.0",
			Summary: "Returns one or more random fields from a hash.", Handler: cmdHRandField}),
		one(&Command{Name: "hscan", Docs: "key:key cursor:integer [MATCH pattern:pattern] [COUNT count:integer]", Arity: -3, Flags: command.Readonly, Since: "2.8.0",
			Summary: "Iterates over fields and values of a hash.", Handler: cmdHScan}),
	}
}

// cmdHSet is HSET (replies the fields added) and HMSET (replies OK).
func cmdHSet(x *Ctx) {
	if len(x.args)%2 != 0 {
		x.w.Error(arityError(x.cmd.Name))
		return
	}
	n, ok := x.change(x.args[1], coll.OpHSet, x.args[2:])
	if !ok {
		return
	}
	if x.cmd.Name == "hmset" {
		x.w.OK()
		return
	}
	x.w.Int(n)
}

func cmdHSetNX(x *Ctx) {
	h, found, ok := x.readHash(x.args[1])
	if !ok {
		return
	}
	if found {
		if _, exists := h.Get(x.args[2]); exists {
			x.w.Int(0)
			return
		}
	}
	if _, ok := x.change(x.args[1], coll.OpHSet, x.args[2:4]); ok {
		x.w.Int(1)
	}
}

func cmdHGet(x *Ctx) {
	h, found, ok := x.readHash(x.args[1])
	if !ok {
		return
	}
	if found {
		if v, exists := h.Get(x.args[2]); exists {
			x.w.Bulk(v)
			return
		}
	}
	x.w.Null()
}

func cmdHMGet(x *Ctx) {
	h, found, ok := x.readHash(x.args[1])
	if !ok {
		return
	}
	x.w.Array(len(x.args) - 2)
	for _, f := range x.args[2:] {
		if found {
			if v, exists := h.Get(f); exists {
				x.w.Bulk(v)
				continue
			}
		}
		x.w.Null()
	}
}

// replyHash replies a hash's fields and/or values: a map of both, or an
// array of either.
func replyHash(x *Ctx, fields, values bool) {
	h, found, ok := x.readHash(x.args[1])
	if !ok {
		return
	}
	n := 0
	if found {
		n = h.Len()
	}
	if fields && values {
		x.w.Map(n)
	} else {
		x.w.Array(n)
	}
	if !found {
		return
	}
	h.Each(func(f, v []byte) bool {
		if fields {
			x.w.Bulk(f)
		}
		if values {
			x.w.Bulk(v)
		}
		return true
	})
}

func cmdHGetAll(x *Ctx) { replyHash(x, true, true) }
func cmdHKeys(x *Ctx)   { replyHash(x, true, false) }
func cmdHVals(x *Ctx)   { replyHash(x, false, true) }

func cmdHDel(x *Ctx) {
	_, found, ok := x.readHash(x.args[1])
	if !ok {
		return
	}
	if !found {
		x.w.Int(0)
		return
	}
	if n, ok := x.change(x.args[1], coll.OpHDel, x.args[2:]); ok {
		x.w.Int(n)
	}
}

func cmdHExists(x *Ctx) {
	h, found, ok := x.readHash(x.args[1])
	if !ok {
		return
	}
	exists := false
	if found {
		_, exists = h.Get(x.args[2])
	}
	x.w.Int(b2i(exists))
}

func cmdHLen(x *Ctx) {
	h, found, ok := x.readHash(x.args[1])
	if !ok {
		return
	}
	if !found {
		x.w.Int(0)
		return
	}
	x.w.Int(int64(h.Len()))
}

func cmdHStrlen(x *Ctx) {
	h, found, ok := x.readHash(x.args[1])
	if !ok {
		return
	}
	var n int
	if found {
		v, _ := h.Get(x.args[2])
		n = len(v)
	}
	x.w.Int(int64(n))
}

// cmdHIncrBy logs the new value as an OpHSet.
func cmdHIncrBy(x *Ctx) {
	inc, ok := parseInt(x, x.args[3])
	if !ok {
		return
	}
	h, found, ok := x.readHash(x.args[1])
	if !ok {
		return
	}
	var cur int64
	if found {
		if v, exists := h.Get(x.args[2]); exists {
			if cur, ok = resp.ParseInt(v); !ok {
				x.w.Error("ERR hash value is not an integer")
				return
			}
		}
	}
	if addOverflows(cur, inc) {
		x.w.Error(errOverflow)
		return
	}
	cur += inc
	var buf [20]byte
	val := x.opBytes(strconv.AppendInt(buf[:0], cur, 10))
	if _, ok := x.change(x.args[1], coll.OpHSet, x.opArgs(x.args[2], val)); ok {
		x.w.Int(cur)
	}
}

// cmdHIncrByFloat computes as INCRBYFLOAT does (long double arithmetic,
// the same formatting) and logs the new value as an OpHSet.
func cmdHIncrByFloat(x *Ctx) {
	inc, ok := parseLongDouble(x.args[3])
	if !ok {
		x.w.Error(errNotFloat)
		return
	}
	if inc.inf {
		x.w.Error("ERR value is NaN or Infinity")
		return
	}
	h, found, ok := x.readHash(x.args[1])
	if !ok {
		return
	}
	cur := longDouble{f: new(big.Float).SetPrec(ldPrec)}
	if found {
		if v, exists := h.Get(x.args[2]); exists {
			if cur, ok = parseLongDouble(v); !ok {
				x.w.Error("ERR hash value is not a float")
				return
			}
		}
	}
	sum, ok := addLongDouble(cur, inc)
	if !ok {
		x.w.Error("ERR increment would produce NaN or Infinity")
		return
	}
	b := formatLongDouble(sum)
	if _, ok := x.change(x.args[1], coll.OpHSet, [][]byte{x.args[2], b}); ok {
		x.w.Bulk(b)
	}
}

// cmdHRandField is HRANDFIELD key [count [WITHVALUES]]: distinct fields
// for a positive count, count picks with repetition for a negative one.
// WITHVALUES pairs are flat in RESP2 and two-element arrays in RESP3.
func cmdHRandField(x *Ctx) {
	key := x.args[1]
	if len(x.args) == 2 {
		h, found, ok := x.readHash(key)
		if !ok {
			return
		}
		if !found {
			x.w.Null()
			return
		}
		f, _ := h.At(rand.IntN(h.Len()))
		x.w.Bulk(f)
		return
	}
	count, ok := parseRandomCount(x, x.args[2])
	if !ok {
		return
	}
	withValues := false
	if len(x.args) > 4 || (len(x.args) == 4 && !isKeyword(x.args[3], "withvalues")) {
		x.w.Error(errSyntax)
		return
	} else if len(x.args) == 4 {
		withValues = true
		if count < -1<<62 || count > 1<<62-1 {
			x.w.Error("ERR value is out of range")
			return
		}
	}
	h, found, ok := x.readHash(key)
	if !ok {
		return
	}
	if !found || count == 0 {
		x.w.Array(0)
		return
	}
	resp3 := x.w.RESP3()
	pair := func(f, v []byte) {
		if !withValues {
			x.w.Bulk(f)
			return
		}
		if resp3 {
			x.w.Array(2)
		}
		x.w.Bulk(f)
		x.w.Bulk(v)
	}
	header := func(n int) {
		if withValues && !resp3 {
			n *= 2
		}
		x.w.Array(n)
	}
	n := h.Len()
	switch {
	case count < 0:
		if -count > maxRandomCount {
			x.w.Error(errRandomCount)
			return
		}
		ix := newHashIndex(h, int(-count))
		header(int(-count))
		for range -count {
			pair(ix.at(rand.IntN(n)))
		}
	case count >= int64(n):
		header(n)
		h.Each(func(f, v []byte) bool { pair(f, v); return true })
	default:
		ix := newHashIndex(h, int(count))
		header(int(count))
		for _, i := range pickDistinct(n, int(count)) {
			pair(ix.at(i))
		}
	}
}

// cmdHScan is HSCAN key cursor [MATCH pattern] [COUNT count], with
// coll.Hash.Scan's cursor (a listpack hash whole, cursor 0, as Redis).
func cmdHScan(x *Ctx) {
	cursor, ok := parseScanCursor(x.args[2])
	if !ok {
		x.w.Error(errInvalidCursor)
		return
	}
	h, found, ok := x.readHash(x.args[1])
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
	next := h.Scan(cursor, count, func(f, v []byte) {
		if pat == nil || globMatch(pat, f, false) {
			l.add(f)
			l.add(v)
		}
	})
	x.w.Array(2)
	x.w.BulkString(strconv.FormatUint(next, 10))
	x.w.Array(l.len())
	for i := range l.len() {
		x.w.Bulk(l.at(i))
	}
}
