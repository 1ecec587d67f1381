package server

import (
	"errors"
	"math"
	"strconv"

	"github.com/turnstile/turnstile/coll"
	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/rdb"
	"github.com/turnstile/turnstile/shards"
)

// DUMP and RESTORE, in Redis's payload format (package rdb), so values
// move between Turnstile and redis-server both ways. RESTORE builds the
// value apart from the keyspace and stores it with one put: the log gets
// the whole value (an OpSet effect), as for RENAME, so replay never
// decodes a payload.

func dumpCommands() []*Command {
	const g = "generic"
	return []*Command{
		{Name: "dump", Docs: "key:key", Arity: 2, Flags: command.Readonly, FirstKey: 1, LastKey: 1, Step: 1, Group: g, Since: "2.6.0",
			Summary: "Returns a serialized representation of the value stored at a key.", Handler: cmdDump},
		{Name: "restore", Cats: command.CatDangerous, Docs: "key:key ttl:integer serialized-value:string [replace=REPLACE]@3.0.0 [absttl=ABSTTL]@5.0.0 [IDLETIME seconds:integer]@5.0.0 [FREQ frequency:integer]@5.0.0", Arity: -4, Flags: command.Write | command.DenyOOM | command.AddsKeys, FirstKey: 1, LastKey: 1, Step: 1, Group: g, Since: "2.6.0",
			Summary: "Creates a key from the serialized representation of a value.", Handler: cmdRestore},
	}
}

// Error replies of DUMP and RESTORE (Redis's texts).
const (
	errBusyKey    = "BUSYKEY Target key name already exists."
	errDumpFooter = "ERR DUMP payload version or checksum are wrong"
	errBadData    = "ERR Bad data format"
)

// cmdDump is DUMP key: the payload, or nil for a missing key.
func cmdDump(x *Ctx) {
	e, ok := x.get(x.args[1])
	if !ok {
		x.w.Null()
		return
	}
	p, err := dumpPayload(e)
	if err != nil {
		x.w.Error("ERR " + err.Error())
		return
	}
	x.w.Bulk(p)
}

// errDumpStream refuses DUMP of a stream (its RDB form is not written).
var errDumpStream = errors.New("DUMP of a stream is not supported")

// dumpPayload serializes an entry's value (not its expiry).
func dumpPayload(e shards.Entry) ([]byte, error) {
	var enc rdb.Encoder
	switch v := e.Obj.(type) {
	case *coll.Hash:
		enc.Begin(rdb.Hash, v.Len())
		v.Each(func(f, val []byte) bool {
			enc.Str(f)
			enc.Str(val)
			return true
		})
	case *coll.Set:
		enc.Begin(rdb.Set, v.Len())
		v.Each(func(m []byte) bool {
			enc.Str(m)
			return true
		})
	case *coll.ZSet:
		enc.Begin(rdb.ZSet, v.Len())
		v.Each(func(m []byte, sc float64) bool {
			enc.Str(m)
			enc.Score(sc)
			return true
		})
	case *coll.List:
		enc.Begin(rdb.List, v.Len())
		v.Each(0, false, func(_ int, el []byte) bool {
			enc.Str(el)
			return true
		})
	case nil:
		return rdb.EncodeString(e.AppendString(nil)), nil
	default:
		return nil, errDumpStream
	}
	return enc.Finish(), nil
}

// cmdRestore is RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s]
// [FREQ f], with Redis's checks in Redis's order. IDLETIME and FREQ are
// checked and otherwise ignored (access times start afresh).
func cmdRestore(x *Ctx) {
	replace, absTTL := false, false
	idle, freq := int64(-1), int64(-1)
	for j := 4; j < len(x.args); j++ {
		a, more := x.args[j], j+1 < len(x.args)
		switch {
		case isKeyword(a, "replace"):
			replace = true
		case isKeyword(a, "absttl"):
			absTTL = true
		case isKeyword(a, "idletime") && more && freq == -1:
			j++
			n, ok := parseInt(x, x.args[j])
			if !ok {
				return
			}
			if n < 0 {
				x.w.Error("ERR Invalid IDLETIME value, must be >= 0")
				return
			}
			idle = n
		case isKeyword(a, "freq") && more && idle == -1:
			j++
			n, ok := parseInt(x, x.args[j])
			if !ok {
				return
			}
			if n < 0 || n > 255 {
				x.w.Error("ERR Invalid FREQ value, must be >= 0 and <= 255")
				return
			}
			freq = n
		default:
			x.w.Error(errSyntax)
			return
		}
	}
	key := x.args[1]
	if _, exists := x.get(key); exists && !replace {
		x.w.Error(errBusyKey)
		return
	}
	ttl, ok := parseInt(x, x.args[2])
	if !ok {
		return
	}
	if ttl < 0 {
		x.w.Error("ERR Invalid TTL value, must be >= 0")
		return
	}
	v, err := rdb.Decode(x.args[3])
	switch {
	case errors.Is(err, rdb.ErrChecksum):
		x.w.Error(errDumpFooter)
		return
	case err != nil:
		x.w.Error(errBadData)
		return
	}
	e, err := entryOf(v)
	if err != nil {
		x.w.Error(errBadData)
		return
	}
	if ttl != 0 {
		e.Exp = restoreExpiry(x.now, ttl, absTTL)
	}
	if replace {
		x.del(key)
	}
	if e.Exp != 0 && e.Exp <= x.now { // already expired: only the delete
		x.w.OK()
		return
	}
	x.put(key, e)
	x.w.OK()
}

// restoreExpiry converts RESTORE's ttl (ms, relative or a Unix time) to
// absolute ns, saturating instead of overflowing.
func restoreExpiry(now, ttl int64, abs bool) int64 {
	if ttl > math.MaxInt64/int64(1e6) {
		return math.MaxInt64
	}
	ns := ttl * 1e6
	if abs {
		return max(ns, 1) // a time in the past still counts as expired
	}
	if ns > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + ns
}

// entryOf builds a keyspace entry from a decoded value, through the same
// collection ops commands apply.
func entryOf(v rdb.Value) (shards.Entry, error) {
	var (
		kind shards.Kind
		op   coll.Op
		args [][]byte
	)
	switch v.Type {
	case rdb.String:
		return shards.BytesEntry(append([]byte(nil), v.Str...), 0), nil
	case rdb.List:
		kind, op, args = shards.KindList, coll.OpRPush, v.Elems
	case rdb.Set:
		kind, op, args = shards.KindSet, coll.OpSAdd, v.Elems
	case rdb.Hash:
		kind, op = shards.KindHash, coll.OpHSet
		args = make([][]byte, 0, 2*len(v.Pairs))
		for _, p := range v.Pairs {
			args = append(args, p[0], p[1])
		}
	case rdb.ZSet:
		kind, op = shards.KindZSet, coll.OpZAdd
		args = make([][]byte, 0, 2*len(v.ZMembers))
		for _, m := range v.ZMembers {
			args = append(args, strconv.AppendFloat(nil, m.Score, 'g', -1, 64), m.Member)
		}
	default:
		return shards.Entry{}, errors.New("unknown value type")
	}
	val := coll.New(kind)
	if _, _, err := coll.Apply(val, op, args); err != nil {
		return shards.Entry{}, err
	}
	return shards.Entry{Kind: kind, Obj: val}, nil
}
