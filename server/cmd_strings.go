package server

import (
	"math"
	"math/big"

	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
	"github.com/turnstile/turnstile/shards"
)

func stringCommands() []*Command {
	const (
		rw     = command.Write | command.DenyOOM | command.AddsKeys
		rwFast = command.Write | command.DenyOOM | command.AddsKeys | command.Fast
		roFast = command.Readonly | command.Fast
	)
	one := func(c *Command) *Command {
		c.FirstKey, c.LastKey, c.Step, c.Group = 1, 1, 1, "string"
		return c
	}
	return []*Command{
		one(&Command{Name: "get", Docs: "key:key", Complexity: "O(1)", Arity: 2, Flags: roFast, Since: "1.0.0",
			Summary: "Returns the string value of a key.", Handler: cmdGet}),
		one(&Command{Name: "set", Access: []command.KeyAccess{command.KeyReadWrite}, AccessOf: setKeyAccess, Docs: "key:key value:string condition=[NX|XX]@2.6.12 [GET]@6.2.0 expiration=[EX seconds:integer@2.6.12|PX milliseconds:integer@2.6.12|EXAT unix-time-seconds:unix-time@6.2.0|PXAT unix-time-milliseconds:unix-time@6.2.0|KEEPTTL@6.0.0]", Complexity: "O(1)", Arity: -3, Flags: rw, Since: "1.0.0",
			Summary: "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", Handler: cmdSet}),
		one(&Command{Name: "setnx", Docs: "key:key value:string", Arity: 3, Flags: rwFast, Since: "1.0.0",
			Summary: "Set the string value of a key only when the key doesn't exist.", Handler: cmdSetNX}),
		one(&Command{Name: "setex", Docs: "key:key seconds:integer value:string", Arity: 4, Flags: rw, Since: "2.0.0",
			Summary: "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.", Handler: cmdSetEX}),
		one(&Command{Name: "psetex", Docs: "key:key milliseconds:integer value:string", Arity: 4, Flags: rw, Since: "2.6.0",
			Summary: "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.", Handler: cmdSetEX}),
		one(&Command{Name: "getset", Access: []command.KeyAccess{command.KeyReadWrite}, Docs: "key:key value:string", Arity: 3, Flags: rwFast, Since: "1.0.0",
			Summary: "Returns the previous string value of a key after setting it to a new value.", Handler: cmdGetSet}),
		one(&Command{Name: "getex", Access: []command.KeyAccess{command.KeyReadWrite}, Docs: "key:key expiration=[EX seconds:integer|PX milliseconds:integer|EXAT unix-time-seconds:unix-time|PXAT unix-time-milliseconds:unix-time|PERSIST]", Arity: -2, Flags: command.Write | command.Fast, Since: "6.2.0",
			Summary: "Returns the string value of a key after setting its expiration time.", Handler: cmdGetEX}),
		one(&Command{Name: "getdel", Access: []command.KeyAccess{command.KeyReadWrite}, Docs: "key:key", Arity: 2, Flags: command.Write | command.Fast, Since: "6.2.0",
			Summary: "Returns the string value of a key after deleting the key.", Handler: cmdGetDel}),
		{Name: "mget", Docs: "key:key...", Arity: -2, Flags: roFast, FirstKey: 1, LastKey: -1, Step: 1, Group: "string", Since: "1.0.0",
			Summary: "Atomically returns the string values of one or more keys.", Handler: cmdMGet},
		{Name: "mset", Docs: "data=(key:key value:string)...", Arity: -3, Flags: rw, FirstKey: 1, LastKey: -1, Step: 2, Group: "string", Since: "1.0.1",
			Summary: "Atomically creates or modifies the string values of one or more keys.", Handler: cmdMSet},
		{Name: "msetnx", Docs: "data=(key:key value:string)...", Arity: -3, Flags: rw, FirstKey: 1, LastKey: -1, Step: 2, Group: "string", Since: "1.0.1",
			Summary: "Atomically modifies the string values of one or more keys only when all keys don't exist.", Handler: cmdMSet},
		one(&Command{Name: "incr", Access: []command.KeyAccess{command.KeyReadWrite}, Docs: "key:key", Arity: 2, Flags: rwFast, Since: "1.0.0",
			Summary: "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", Handler: cmdIncr}),
		one(&Command{Name: "decr", Access: []command.KeyAccess{command.KeyReadWrite}, Docs: "key:key", Arity: 2, Flags: rwFast, Since: "1.0.0",
			Summary: "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", Handler: cmdIncr}),
		one(&Command{Name: "incrby", Access: []command.KeyAccess{command.KeyReadWrite}, Docs: "key:key increment:integer", Arity: 3, Flags: rwFast, Since: "1.0.0",
			Summary: "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.", Handler: cmdIncr}),
		one(&Command{Name: "decrby", Access: []command.KeyAccess{command.KeyReadWrite}, Docs: "key:key decrement:integer", Arity: 3, Flags: rwFast, Since: "1.0.0",
			Summary: "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.", Handler: cmdIncr}),
		one(&Command{Name: "incrbyfloat", Access: []command.KeyAccess{command.KeyReadWrite}, Docs: "key:key increment:double", Arity: 3, Flags: rwFast, Since: "2.6.0",
			Summary: "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.", Handler: cmdIncrByFloat}),
		one(&Command{Name: "append", Docs: "key:key value:string", Arity: 3, Flags: rwFast, Since: "2.0.0",
			Summary: "Appends a string to the value of a key. Creates the key if it doesn't exist.", Handler: cmdAppend}),
		one(&Command{Name: "strlen", Access: []command.KeyAccess{command.KeyAny}, Docs: "key:key", Arity: 2, Flags: roFast, Since: "2.2.0",
			Summary: "Returns the length of a string value.", Handler: cmdStrlen}),
		one(&Command{Name: "setrange", Docs: "key:key offset:integer value:string", Arity: 4, Flags: rw, Since: "2.2.0",
			Summary: "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.", Handler: cmdSetRange}),
		lcsCommand(),
		one(&Command{Name: "getrange", Docs: "key:key start:integer end:integer", Arity: 4, Flags: command.Readonly, Since: "2.4.0",
			Summary: "Returns a substring of the string stored at a key.", Handler: cmdGetRange}),
		one(&Command{Name: "substr", Docs: "key:key start:integer end:integer", Arity: 4, Flags: command.Readonly, Since: "1.0.0",
			Summary: "Returns a substring from a string value.", Handler: cmdGetRange}),
	}
}

// getString looks key up for a string command. It reports whether the key
// exists; when it exists with another type it replies WRONGTYPE and
// returns ok false.
func getString(x *Ctx, key []byte) (e shards.Entry, found, ok bool) {
	e, found = x.get(key)
	if found && !e.IsString() {
		x.w.Error(errWrongType)
		return e, true, false
	}
	return e, found, true
}

// replyString writes the value of a string entry as a bulk string.
func replyString(x *Ctx, e shards.Entry) {
	if e.Kind == shards.KindInt {
		x.w.BulkInt(e.Int)
		return
	}
	x.w.Bulk(e.Bytes())
}

// replyGet is Redis's getGenericCommand: nil for a missing key, the value
// of a string, WRONGTYPE otherwise (ok false).
func replyGet(x *Ctx, key []byte) (e shards.Entry, found, ok bool) {
	e, found, ok = getString(x, key)
	switch {
	case !ok:
	case !found:
		x.w.Null()
	default:
		replyString(x, e)
	}
	return e, found, ok
}

// parseInt parses an integer argument as Redis's string2ll does, replying
// the "not an integer" error when it is not one.
func parseInt(x *Ctx, b []byte) (int64, bool) {
	n, ok := resp.ParseInt(b)
	if !ok {
		x.w.Error(errNotInt)
	}
	return n, ok
}

// invalidExpire replies Redis's "invalid expire time" error for the command.
func invalidExpire(x *Ctx) {
	x.w.Error("ERR invalid expire time in '" + x.cmd.Name + "' command")
}

// expireArg converts an EX/PX/EXAT/PXAT argument to absolute ns, replying
// the error when it is not a positive integer or overflows.
func expireArg(x *Ctx, arg []byte, unit int64, abs bool) (int64, bool) {
	n, ok := parseInt(x, arg)
	if !ok {
		return 0, false
	}
	exp, ok := positiveExpiryNs(x.now, n, unit, abs)
	if !ok {
		invalidExpire(x)
	}
	return exp, ok
}

// storeString stores value under key with expiry exp (0: none). An expiry
// at or before now deletes the key instead: a key is never stored dead.
// value must be owned by the keyspace (not a request buffer). Either way
// the key's watchers see a change, as in Redis (which stores, then
// deletes).
func storeString(x *Ctx, key []byte, e shards.Entry) {
	if e.Exp != 0 && e.Exp <= x.now {
		if !x.del(key) {
			x.signal(key)
		}
		return
	}
	x.put(key, e)
}

func cmdGet(x *Ctx) { replyGet(x, x.args[1]) }

// Options of SET and GETEX.
const (
	optNX = 1 << iota
	optXX
	optGet
	optKeepTTL
	optPersist
	optEX
	optPX
	optEXAT
	optPXAT

	optExpire = optEX | optPX | optEXAT | optPXAT
)

// setOptions holds parsed SET/GETEX options.
type setOptions struct {
	flags  int
	expire []byte // argument of the expire option, nil if none
}

// parseSetOptions parses the options of SET (isSet) or GETEX from
// args[3:] or args[2:], replying a syntax error when they are invalid. An
// option may repeat; conflicting options are a syntax error.
func parseSetOptions(x *Ctx, args [][]byte, isSet bool) (setOptions, bool) {
	var o setOptions
	for i := 0; i < len(args); i++ {
		a := args[i]
		hasNext := i+1 < len(args)
		var exp int
		switch {
		case isSet && optIs(a, "nx") && o.flags&optXX == 0:
			o.flags |= optNX
		case isSet && optIs(a, "xx") && o.flags&optNX == 0:
			o.flags |= optXX
		case isSet && optIs(a, "get"):
			o.flags |= optGet
		case isSet && optIs(a, "keepttl") && o.flags&(optPersist|optExpire) == 0:
			o.flags |= optKeepTTL
		case !isSet && optIs(a, "persist") && o.flags&(optKeepTTL|optExpire) == 0:
			o.flags |= optPersist
		case optIs(a, "ex"):
			exp = optEX
		case optIs(a, "px"):
			exp = optPX
		case optIs(a, "exat"):
			exp = optEXAT
		case optIs(a, "pxat"):
			exp = optPXAT
		default:
			x.w.Error(errSyntax)
			return o, false
		}
		if exp != 0 {
			if !hasNext || o.flags&(optKeepTTL|optPersist|(optExpire&^exp)) != 0 {
				x.w.Error(errSyntax)
				return o, false
			}
			o.flags |= exp
			o.expire = args[i+1]
			i++
		}
	}
	return o, true
}

// expireOf converts the parsed expire option to absolute ns, replying the
// error when it is invalid. ok is true and exp 0 when there is none.
func (o setOptions) expireOf(x *Ctx) (exp int64, ok bool) {
	switch {
	case o.flags&optEX != 0:
		return expireArg(x, o.expire, unitSeconds, false)
	case o.flags&optPX != 0:
		return expireArg(x, o.expire, unitMillis, false)
	case o.flags&optEXAT != 0:
		return expireArg(x, o.expire, unitSeconds, true)
	case o.flags&optPXAT != 0:
		return expireArg(x, o.expire, unitMillis, true)
	}
	return 0, true
}

// cmdSet implements SET key value [NX|XX] [GET] [EX|PX|EXAT|PXAT n|KEEPTTL].
func cmdSet(x *Ctx) {
	o, ok := parseSetOptions(x, x.args[3:], true)
	if !ok {
		return
	}
	exp, ok := o.expireOf(x)
	if !ok {
		return
	}
	setGeneric(x, x.args[1], x.args[2], o.flags, exp, false)
}

// setGeneric is the common end of SET, SETNX, SETEX and PSETEX: it applies
// GET, NX/XX and KEEPTTL, stores a copy of val (or deletes the key when exp
// has already passed) and replies OK or nil, or 1 or 0 when intReply
// (SETNX).
func setGeneric(x *Ctx, key, val []byte, flags int, exp int64, intReply bool) {
	var (
		old   shards.Entry
		found bool
	)
	if flags&optGet != 0 {
		var ok bool
		if old, found, ok = replyGet(x, key); !ok {
			return
		}
	} else {
		old, found = x.get(key)
	}
	if (flags&optNX != 0 && found) || (flags&optXX != 0 && !found) {
		if flags&optGet != 0 {
			return
		}
		if intReply {
			x.w.Int(0)
		} else {
			x.w.Null()
		}
		return
	}
	if flags&optKeepTTL != 0 && found {
		exp = old.Exp
	}
	storeString(x, key, shards.BytesEntry(val, exp))
	if flags&optGet != 0 {
		return
	}
	if intReply {
		x.w.Int(1)
	} else {
		x.w.OK()
	}
}

func cmdSetNX(x *Ctx) {
	setGeneric(x, x.args[1], x.args[2], optNX, 0, true)
}

// cmdSetEX implements SETEX key seconds value and PSETEX key ms value.
func cmdSetEX(x *Ctx) {
	unit := int64(unitSeconds)
	if x.cmd.Name == "psetex" {
		unit = unitMillis
	}
	exp, ok := expireArg(x, x.args[2], unit, false)
	if !ok {
		return
	}
	setGeneric(x, x.args[1], x.args[3], 0, exp, false)
}

func cmdGetSet(x *Ctx) {
	if _, _, ok := replyGet(x, x.args[1]); !ok {
		return
	}
	x.put(x.args[1], shards.BytesEntry(x.args[2], 0))
}

// cmdGetEX implements GETEX key [EX|PX|EXAT|PXAT n|PERSIST].
func cmdGetEX(x *Ctx) {
	o, ok := parseSetOptions(x, x.args[2:], false)
	if !ok {
		return
	}
	key := x.args[1]
	e, found, ok := getString(x, key)
	if !ok {
		return
	}
	if !found {
		x.w.Null()
		return
	}
	exp, ok := o.expireOf(x)
	if !ok {
		return
	}
	replyString(x, e)
	switch {
	case o.flags&optExpire != 0:
		e.Exp = exp
		storeString(x, key, x.owned(e))
	case o.flags&optPersist != 0 && e.Exp != 0:
		e.Exp = 0
		x.put(key, x.owned(e))
	}
}

func cmdGetDel(x *Ctx) {
	if _, found, ok := replyGet(x, x.args[1]); ok && found {
		x.del(x.args[1])
	}
}

func cmdMGet(x *Ctx) {
	keys := x.args[1:]
	x.w.Array(len(keys))
	for _, k := range keys {
		e, found := x.get(k)
		if !found || !e.IsString() {
			x.w.Null()
			continue
		}
		replyString(x, e)
	}
}

// cmdMSet implements MSET and MSETNX.
func cmdMSet(x *Ctx) {
	if len(x.args)%2 == 0 {
		x.w.Error(arityError(x.cmd.Name))
		return
	}
	nx := x.cmd.Name == "msetnx"
	if nx {
		for i := 1; i < len(x.args); i += 2 {
			if _, found := x.get(x.args[i]); found {
				x.w.Int(0)
				return
			}
		}
	}
	for i := 1; i < len(x.args); i += 2 {
		x.put(x.args[i], shards.BytesEntry(x.args[i+1], 0))
	}
	if nx {
		x.w.Int(1)
	} else {
		x.w.OK()
	}
}

// cmdIncr implements INCR, DECR, INCRBY and DECRBY. The key keeps its TTL.
func cmdIncr(x *Ctx) {
	var by int64 = 1
	if len(x.args) == 3 {
		var ok bool
		if by, ok = parseInt(x, x.args[2]); !ok {
			return
		}
	}
	switch x.cmd.Name {
	case "decr":
		by = -1
	case "decrby":
		if by == math.MinInt64 {
			x.w.Error("ERR decrement would overflow")
			return
		}
		by = -by
	}
	key := x.args[1]
	e, found, ok := getString(x, key)
	if !ok {
		return
	}
	var n int64
	if found {
		if n, ok = entryInt(e); !ok {
			x.w.Error(errNotInt)
			return
		}
	}
	if addOverflows(n, by) {
		x.w.Error(errOverflow)
		return
	}
	n += by
	x.put(key, shards.IntEntry(n, e.Exp))
	x.w.Int(n)
}

// addOverflows reports whether n+by leaves the int64 range (INCRBY,
// HINCRBY: Redis refuses the increment rather than wrap).
func addOverflows(n, by int64) bool {
	return (by < 0 && n < 0 && by < math.MinInt64-n) || (by > 0 && n > 0 && by > math.MaxInt64-n)
}

// entryInt returns the integer value of a string entry, if it is one.
func entryInt(e shards.Entry) (int64, bool) {
	if e.Kind == shards.KindInt {
		return e.Int, true
	}
	return resp.ParseInt(e.Bytes())
}

// cmdIncrByFloat adds in long double precision (see incrfloat.go). The key
// keeps its TTL.
func cmdIncrByFloat(x *Ctx) {
	key := x.args[1]
	e, found, ok := getString(x, key)
	if !ok {
		return
	}
	cur := longDouble{f: new(big.Float).SetPrec(ldPrec)}
	if found {
		if e.Kind == shards.KindInt {
			cur.f.SetInt64(e.Int)
		} else if cur, ok = parseLongDouble(e.Bytes()); !ok {
			x.w.Error(errNotFloat)
			return
		}
	}
	inc, ok := parseLongDouble(x.args[2])
	if !ok {
		x.w.Error(errNotFloat)
		return
	}
	sum, ok := addLongDouble(cur, inc)
	if !ok {
		x.w.Error("ERR increment would produce NaN or Infinity")
		return
	}
	b := formatLongDouble(sum)
	x.put(key, shards.BytesEntry(b, e.Exp))
	x.w.Bulk(b)
}

// maxStringLen is the longest string APPEND and SETRANGE may build (Redis's
// proto-max-bulk-len).
func maxStringLen(x *Ctx) int64 { return x.s.cfg.Limits.MaxBulkLen }

// checkStringLength replies Redis's error when a string of size+add bytes
// would exceed the limit.
func checkStringLength(x *Ctx, size, add int64) bool {
	if size > maxStringLen(x)-add {
		x.w.Error("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
		return false
	}
	return true
}

// cmdAppend appends to a string and keeps its TTL. An existing value's
// change is logged as the appended bytes alone (Ctx.appendString).
func cmdAppend(x *Ctx) {
	key, add := x.args[1], x.args[2]
	e, ref, found := x.lookup(key)
	if found && !e.IsString() {
		x.w.Error(errWrongType)
		return
	}
	if !found {
		x.put(key, shards.BytesEntry(add, 0))
		x.w.Int(int64(len(add)))
		return
	}
	if !checkStringLength(x, int64(e.StrLen()), int64(len(add))) {
		return
	}
	x.w.Int(int64(x.appendString(ref, key, e, add)))
}

func cmdStrlen(x *Ctx) {
	e, found, ok := getString(x, x.args[1])
	if !ok {
		return
	}
	if !found {
		x.w.Int(0)
		return
	}
	x.w.Int(int64(e.StrLen()))
}

// cmdSetRange implements SETRANGE key offset value; the key keeps its TTL.
func cmdSetRange(x *Ctx) {
	key, val := x.args[1], x.args[3]
	off, ok := parseInt(x, x.args[2])
	if !ok {
		return
	}
	if off < 0 {
		x.w.Error("ERR offset is out of range")
		return
	}
	e, found, ok := getString(x, key)
	if !ok {
		return
	}
	if !found {
		if len(val) == 0 {
			x.w.Int(0)
			return
		}
		if !checkStringLength(x, off, int64(len(val))) {
			return
		}
		b := make([]byte, int(off)+len(val))
		copy(b[off:], val)
		x.storeRange(key, e, false, b, off, val) // logs val at off, not the zeros before it
		x.w.Int(int64(len(b)))
		return
	}
	olen := e.StrLen()
	if len(val) == 0 {
		x.w.Int(int64(olen))
		return
	}
	if !checkStringLength(x, off, int64(len(val))) {
		return
	}
	n := max(olen, int(off)+len(val))
	b := make([]byte, n) // a new value: stored values are immutable
	e.AppendString(b[:0])
	copy(b[off:], val)
	x.storeRange(key, e, true, b, off, val) // logs val at off, not the value
	x.w.Int(int64(n))
}

// cmdGetRange implements GETRANGE and SUBSTR key start end (inclusive,
// negative counting from the end).
func cmdGetRange(x *Ctx) {
	start, ok := parseInt(x, x.args[2])
	if !ok {
		return
	}
	end, ok := parseInt(x, x.args[3])
	if !ok {
		return
	}
	e, found, ok := getString(x, x.args[1])
	if !ok {
		return
	}
	if !found {
		x.w.BulkString("")
		return
	}
	var s []byte
	if e.Kind == shards.KindInt {
		var buf [20]byte
		s = e.AppendString(buf[:0])
	} else {
		s = e.Bytes()
	}
	n := int64(len(s))
	if start < 0 && end < 0 && start > end {
		x.w.BulkString("")
		return
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start = max(start, 0)
	end = max(end, 0)
	if end >= n {
		end = n - 1
	}
	if n == 0 || start > end {
		x.w.BulkString("")
		return
	}
	x.w.Bulk(s[start : end+1])
}

// setKeyAccess is what a SET call does with its key, as Redis decides it:
// it reads the old value only with GET (compared as a C string, as Redis
// does), else it only writes.
func setKeyAccess(args [][]byte, _ int) command.KeyAccess {
	for _, a := range args[min(3, len(args)):] {
		if len(a) >= 3 && (len(a) == 3 || a[3] == 0) && equalFold("get", a[:3]) {
			return command.KeyReadWrite
		}
	}
	return command.KeyWrite
}
