package server

import (
	"bytes"
	"fmt"
	"math"

	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
	"github.com/turnstile/turnstile/shards"
)

// Keyspace ("generic") commands. Every command with key arguments has its
// shards locked by the dispatcher; KEYS, SCAN and RANDOMKEY walk the whole
// database through the shards iteration methods instead.

func keyCommands() []*Command {
	const g = "generic"
	return []*Command{
		{Name: "del", Docs: "key:key...", Arity: -2, Flags: command.Write, FirstKey: 1, LastKey: -1, Step: 1, Group: g, Since: "1.0.0",
			Summary: "Deletes one or more keys.", Handler: cmdDel},
		{Name: "unlink", Docs: "key:key...", Arity: -2, Flags: command.Write | command.Fast, FirstKey: 1, LastKey: -1, Step: 1, Group: g, Since: "4.0.0",
			Summary: "Asynchronously deletes one or more keys.", Handler: cmdDel},
		{Name: "exists", Access: []command.KeyAccess{command.KeyAny}, Docs: "key:key...", Arity: -2, Flags: command.Readonly | command.Fast, FirstKey: 1, LastKey: -1, Step: 1, Group: g, Since: "1.0.0",
			Summary: "Determines whether one or more keys exist.", Handler: cmdExists},
		{Name: "touch", Access: []command.KeyAccess{command.KeyAny}, Docs: "key:key...", Arity: -2, Flags: command.Readonly | command.Fast, FirstKey: 1, LastKey: -1, Step: 1, Group: g, Since: "3.2.1",
			Summary: "Returns the number of existing keys out of those specified after updating the time they were last accessed.", Handler: cmdExists},
		{Name: "type", Access: []command.KeyAccess{command.KeyAny}, Docs: "key:key", Arity: 2, Flags: command.Readonly | command.Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: g, Since: "1.0.0",
			Summary: "Determines the type of value stored at a key.", Handler: cmdType},
		{Name: "rename", Access: []command.KeyAccess{command.KeyReadWrite, command.KeyWrite}, Docs: "key:key newkey:key", Arity: 3, Flags: command.Write | command.AddsKeys, FirstKey: 1, LastKey: 2, Step: 1, Group: g, Since: "1.0.0",
			Summary: "Renames a key and overwrites the destination.", Handler: cmdRename},
		{Name: "renamenx", Access: []command.KeyAccess{command.KeyReadWrite, command.KeyWrite}, Docs: "key:key newkey:key", Arity: 3, Flags: command.Write | command.AddsKeys | command.Fast, FirstKey: 1, LastKey: 2, Step: 1, Group: g, Since: "1.0.0",
			Summary: "Renames a key only when the target key name doesn't exist.", Handler: cmdRenameNX},
		{Name: "copy", Access: []command.KeyAccess{command.KeyRead, command.KeyWrite}, Docs: "source:key destination:key [DB destination-db:integer] [replace=REPLACE]", Arity: -3, Flags: command.Write | command.DenyOOM | command.AddsKeys, FirstKey: 1, LastKey: 2, Step: 1, Group: g, Since: "6.2.0", Locks: copyLocks,
			Summary: "Copies the value of a key to a new key.", Handler: cmdCopy},
		{Name: "expire", Docs: "key:key seconds:integer condition=[NX|XX|GT|LT]@7.0.0", Arity: -3, Flags: command.Write | command.Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: g, Since: "1.0.0",
			Summary: "Sets the expiration time of a key in seconds.", Handler: cmdExpire},
		{Name: "pexpire", Docs: "key:key milliseconds:integer condition=[NX|XX|GT|LT]@7.0.0", Arity: -3, Flags: command.Write | command.Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: g, Since: "2.6.0",
			Summary: "Sets the expiration time of a key in milliseconds.", Handler: cmdPExpire},
		{Name: "expireat", Docs: "key:key unix-time-seconds:unix-time condition=[NX|XX|GT|LT]@7.0.0", Arity: -3, Flags: command.Write | command.Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: g, Since: "1.2.0",
			Summary: "Sets the expiration time of a key to a Unix timestamp.", Handler: cmdExpireAt},
		{Name: "pexpireat", Docs: "key:key unix-time-milliseconds:unix-time condition=[NX|XX|GT|LT]@7.0.0", Arity: -3, Flags: command.Write | command.Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: g, Since: "2.6.0",
			Summary: "Sets the expiration time of a key to a Unix milliseconds timestamp.", Handler: cmdPExpireAt},
		{Name: "ttl", Docs: "key:key", Arity: 2, Flags: command.Readonly | command.Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: g, Since: "1.0.0",
			Summary: "Returns the expiration time in seconds of a key.", Handler: cmdTTL},
		{Name: "pttl", Docs: "key:key", Arity: 2, Flags: command.Readonly | command.Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: g, Since: "2.6.0",
			Summary: "Returns the expiration time in milliseconds of a key.", Handler: cmdPTTL},
		{Name: "expiretime", Docs: "key:key", Arity: 2, Flags: command.Readonly | command.Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: g, Since: "7.0.0",
			Summary: "Returns the expiration time of a key as a Unix timestamp.", Handler: cmdExpireTime},
		{Name: "pexpiretime", Docs: "key:key", Arity: 2, Flags: command.Readonly | command.Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: g, Since: "7.0.0",
			Summary: "Returns the expiration time of a key as a Unix milliseconds timestamp.", Handler: cmdPExpireTime},
		{Name: "persist", Docs: "key:key", Arity: 2, Flags: command.Write | command.Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: g, Since: "2.2.0",
			Summary: "Removes the expiration time of a key.", Handler: cmdPersist},
		{Name: "keys", Cats: command.CatDangerous, Docs: "pattern:pattern", Arity: 2, Flags: command.Readonly | command.Keyspace, Group: g, Since: "1.0.0",
			Summary: "Returns all key names that match a pattern.", Handler: cmdKeys},
		{Name: "scan", Docs: "cursor:integer [MATCH pattern:pattern] [COUNT count:integer] [TYPE type:string]@6.0.0", Arity: -2, Flags: command.Readonly | command.Keyspace, Group: g, Since: "2.8.0",
			Summary: "Iterates over the key names in the database.", Handler: cmdScan},
		{Name: "randomkey", Arity: 1, Flags: command.Readonly | command.Keyspace, Group: g, Since: "1.0.0",
			Summary: "Returns a random key name from the database.", Handler: cmdRandomKey},
	}
}

// Error replies of the key commands (Redis's exact texts).
const (
	errExpireNXOpts  = "ERR NX and XX, GT or LT options at the same time are not compatible"
	errExpireGTLT    = "ERR GT and LT options at the same time are not compatible"
	errSameObject    = "ERR source and destination objects are the same"
	errInvalidCursor = "ERR invalid cursor"
	errIntRange      = "ERR value is out of range, value must between -2147483648 and 2147483647"
	// Turnstile's own: see cmdCopy.
)

// cmdDel is DEL and UNLINK: the number of keys removed. A key named twice
// counts once; an expired key does not count.
func cmdDel(x *Ctx) {
	var n int64
	for _, k := range x.args[1:] {
		if x.del(k) {
			n++
		}
	}
	x.w.Int(n)
}

// cmdExists is EXISTS and TOUCH: the number of arguments naming a live key,
// so a key named twice counts twice.
func cmdExists(x *Ctx) {
	var n int64
	for _, k := range x.args[1:] {
		if _, ok := x.get(k); ok {
			n++
		}
	}
	x.w.Int(n)
}

func cmdType(x *Ctx) {
	e, ok := x.get(x.args[1])
	if !ok {
		x.w.Status("none")
		return
	}
	x.w.Status(e.TypeName())
}

func cmdRename(x *Ctx)   { renameKey(x, false) }
func cmdRenameNX(x *Ctx) { renameKey(x, true) }

// renameKey moves the entry, expiry included, from the first key to the
// second; RENAME overwrites the destination, RENAMENX leaves it alone.
func renameKey(x *Ctx, nx bool) {
	src, dst := x.args[1], x.args[2]
	e, ok := x.get(src)
	if !ok {
		x.w.Error(errNoSuchKey)
		return
	}
	if bytes.Equal(src, dst) {
		if nx {
			x.w.Int(0)
		} else {
			x.w.OK()
		}
		return
	}
	if nx {
		if _, exists := x.get(dst); exists {
			x.w.Int(0)
			return
		}
	}
	x.del(src)
	x.put(dst, x.owned(e))
	if nx {
		x.w.Int(1)
	} else {
		x.w.OK()
	}
}

// cmdCopy is COPY source destination [DB index] [REPLACE]. The destination
// keeps the source's expiry.
//
// A DB naming another database than the selected one is refused: the
// dispatcher locks only the selected database's shards, and a handler may
// not take more locks.
func cmdCopy(x *Ctx) {
	replace := false
	db := x.c.db
	for j := 3; j < len(x.args); j++ {
		a := x.args[j]
		switch {
		case isKeyword(a, "replace"):
			replace = true
		case isKeyword(a, "db") && j+1 < len(x.args):
			j++
			n, ok := resp.ParseInt(x.args[j])
			if !ok {
				x.w.Error(errNotInt)
				return
			}
			if n < math.MinInt32 || n > math.MaxInt32 {
				x.w.Error(errIntRange)
				return
			}
			if n < 0 || n >= int64(x.s.numDBs()) {
				x.w.Error(errDBRange)
				return
			}
			db = int(n)
		default:
			x.w.Error(errSyntax)
			return
		}
	}
	src, dst := x.args[1], x.args[2]
	if db == x.c.db && bytes.Equal(src, dst) {
		x.w.Error(errSameObject)
		return
	}
	e, ok := x.get(src)
	if !ok {
		x.w.Int(0)
		return
	}
	if _, exists := x.getDB(db, dst); exists && !replace {
		x.w.Int(0)
		return
	}
	if v, ok := e.Obj.(shards.Object); ok {
		e.Obj = v.CloneObject() // Put copies string bytes, not collections
	}
	x.putDB(db, dst, x.owned(e))
	x.w.Int(1)
}

// copyLocks names COPY's keys: the source in the selected database, the
// destination in the DB option's database (when valid; otherwise the
// command fails before touching it).
func copyLocks(args [][]byte, db, ndb int, add func(int, []byte)) {
	add(db, args[1])
	if len(args) < 3 {
		return
	}
	dst := db
	for j := 3; j+1 < len(args); j++ {
		if isKeyword(args[j], "db") {
			if n, ok := resp.ParseInt(args[j+1]); ok && n >= 0 && n < int64(ndb) {
				dst = int(n)
			}
		}
	}
	add(dst, args[2])
}

func cmdExpire(x *Ctx)    { expireGeneric(x, unitSeconds, false) }
func cmdPExpire(x *Ctx)   { expireGeneric(x, unitMillis, false) }
func cmdExpireAt(x *Ctx)  { expireGeneric(x, unitSeconds, true) }
func cmdPExpireAt(x *Ctx) { expireGeneric(x, unitMillis, true) }

// Conditions of the EXPIRE family.
const (
	expNX = 1 << iota // only when the key has no expiry
	expXX             // only when the key has an expiry
	expGT             // only when the new expiry is later (no expiry = infinite)
	expLT             // only when the new expiry is earlier (no expiry = infinite)
)

// expireGeneric is EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT with their NX,
// XX, GT and LT conditions. It replies 1 when the expiry was set, 0 when the
// key is missing or a condition failed. An expiry at or before now deletes
// the key (and replies 1). Checks run in Redis's order: options, then the
// number, then overflow, then the key.
func expireGeneric(x *Ctx, unit int64, abs bool) {
	flags := 0
	for _, a := range x.args[3:] {
		switch {
		case isKeyword(a, "nx"):
			flags |= expNX
		case isKeyword(a, "xx"):
			flags |= expXX
		case isKeyword(a, "gt"):
			flags |= expGT
		case isKeyword(a, "lt"):
			flags |= expLT
		default:
			x.w.Error("ERR Unsupported option " + cstring(a))
			return
		}
	}
	if flags&expNX != 0 && flags&(expXX|expGT|expLT) != 0 {
		x.w.Error(errExpireNXOpts)
		return
	}
	if flags&expGT != 0 && flags&expLT != 0 {
		x.w.Error(errExpireGTLT)
		return
	}
	n, ok := resp.ParseInt(x.args[2])
	if !ok {
		x.w.Error(errNotInt)
		return
	}
	whenMs, ok := absExpiryMs(nsToMs(x.now), n, unit, abs)
	if !ok {
		x.w.Error(fmt.Sprintf(errInvalidExp, x.cmd.Name))
		return
	}
	key := x.args[1]
	e, ok := x.get(key)
	if !ok {
		x.w.Int(0)
		return
	}
	// Conditions compare Unix ms, the unit clients see (PEXPIRETIME).
	hasExp := e.Exp != 0
	curMs := nsToMs(e.Exp)
	if (flags&expNX != 0 && hasExp) ||
		(flags&expXX != 0 && !hasExp) ||
		(flags&expGT != 0 && (!hasExp || whenMs <= curMs)) ||
		(flags&expLT != 0 && hasExp && whenMs >= curMs) {
		x.w.Int(0)
		return
	}
	exp := msToNs(whenMs)
	if exp <= x.now || exp <= 0 {
		x.del(key)
	} else {
		x.setExpiry(key, e, exp)
	}
	x.w.Int(1)
}

// ttlReply writes -2 for a missing key, -1 for a key without expiry, or
// f(expiry) otherwise.
func ttlReply(x *Ctx, f func(exp int64) int64) {
	e, ok := x.get(x.args[1])
	switch {
	case !ok:
		x.w.Int(-2)
	case e.Exp == 0:
		x.w.Int(-1)
	default:
		x.w.Int(f(e.Exp))
	}
}

func cmdTTL(x *Ctx) {
	ttlReply(x, func(exp int64) int64 { return remainingSeconds(exp, x.now) })
}

func cmdPTTL(x *Ctx) {
	ttlReply(x, func(exp int64) int64 { return remainingMs(exp, x.now) })
}

func cmdExpireTime(x *Ctx)  { ttlReply(x, unixSeconds) }
func cmdPExpireTime(x *Ctx) { ttlReply(x, nsToMs) }

func cmdPersist(x *Ctx) {
	key := x.args[1]
	e, ok := x.get(key)
	if !ok || e.Exp == 0 {
		x.w.Int(0)
		return
	}
	x.setExpiry(key, e, 0)
	x.w.Int(1)
}

// matchesAll reports whether pattern is exactly "*", which KEYS and SCAN
// treat as no filter at all (so it also returns the empty key, which the
// glob "*" does not match).
func matchesAll(pattern []byte) bool { return len(pattern) == 1 && pattern[0] == '*' }

func cmdKeys(x *Ctx) {
	pat := x.args[1]
	all := matchesAll(pat)
	var keys []string
	x.forEach(func(k string, _ shards.Entry) bool {
		if all || globMatch(pat, k, false) {
			keys = append(keys, k)
		}
		return true
	})
	x.w.Array(len(keys))
	for _, k := range keys {
		x.w.BulkString(k)
	}
}

func cmdRandomKey(x *Ctx) {
	k, ok := x.randomKey()
	if !ok {
		x.w.Null()
		return
	}
	x.w.BulkString(k)
}
