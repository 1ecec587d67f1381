package server

import (
	"fmt"

	"github.com/turnstile/turnstile/coll"
	"github.com/turnstile/turnstile/persistence"
	"github.com/turnstile/turnstile/shards"
)

// Collections (hashes, lists, sets, sorted sets, streams): the Ctx methods
// through which every family's handlers read and change them, and the one
// function that applies a change, live or in replay.
//
// The rules (see also coll's package documentation):
//
//   - A handler reads a collection with readValue (read-only: it must not
//     change what it gets) and changes it only with change, which applies
//     a coll.Op and logs that same op as the effect. Replay calls the same
//     applyOp, so memory and the log cannot disagree.
//   - A collection that an op empties is deleted, live and in replay, by
//     the same rule in applyOp; no delete effect is logged for it. A
//     stream is the exception: Redis keeps an empty stream (its last ID
//     still bounds the next XADD).
//   - Creating a collection key logs a delete of the key first. The key may
//     have expired without a logged delete (expiry is decided by the clock
//     and is not logged), and replay must not apply the new key's changes
//     to the old value that it still holds until dropExpired.
//   - A whole new value (the STORE commands, RENAME, COPY) is an OpSet
//     effect carrying the value; a new expiry alone is an OpExpire effect.

// readValue returns the live collection at key in the selected database,
// read-only, if it is of kind k. found is false if there is no such key;
// ok is false if the key holds another type, in which case WRONGTYPE has
// been replied.
func readValue[T coll.Value](x *Ctx, key []byte, k shards.Kind) (v T, found, ok bool) {
	e, found := x.get(key)
	if !found {
		return v, false, true
	}
	if e.Kind != k {
		x.w.Error(errWrongType)
		return v, true, false
	}
	return e.Obj.(T), true, true
}

// Typed readers, for handlers.
func (x *Ctx) readHash(key []byte) (*coll.Hash, bool, bool) {
	return readValue[*coll.Hash](x, key, shards.KindHash)
}
func (x *Ctx) readSet(key []byte) (*coll.Set, bool, bool) {
	return readValue[*coll.Set](x, key, shards.KindSet)
}
func (x *Ctx) readZSet(key []byte) (*coll.ZSet, bool, bool) {
	return readValue[*coll.ZSet](x, key, shards.KindZSet)
}
func (x *Ctx) readList(key []byte) (*coll.List, bool, bool) {
	return readValue[*coll.List](x, key, shards.KindList)
}
func (x *Ctx) readStream(key []byte) (*coll.Stream, bool, bool) {
	return readValue[*coll.Stream](x, key, shards.KindStream)
}

// change applies op with args to the collection at key in the selected
// database, creating the key (empty, of op's kind) if there is no live
// one, and returns the op's n. ok is false if the key holds another type:
// WRONGTYPE has then been replied and nothing changed. args may alias the
// request: the effect is encoded before the request buffer is reused.
//
// A command that may create a key has the AddsKeys flag, so that the
// execution checked the shard's room before the handler ran. A handler
// calls change only for an op that changes something or for a key that
// exists (creating a key for an op that changes nothing would mark its
// watchers for nothing).
func (x *Ctx) change(key []byte, op coll.Op, args [][]byte) (n int64, ok bool) {
	return x.changeDB(x.c.db, key, op, args)
}

// changeDB is change in database db.
func (x *Ctx) changeDB(db int, key []byte, op coll.Op, args [][]byte) (n int64, ok bool) {
	m := x.keyspace(db, key)
	e, r, found := m.Find(key)
	live := found && (e.Exp == 0 || e.Exp > x.now)
	if live && e.Kind != op.Kind() {
		x.w.Error(errWrongType)
		return 0, false
	}
	if !live {
		if found {
			m.Delete(key, x.now) // expired: counts as an expiry
			found = false
		}
		x.logOnly(persistence.Effect{Op: persistence.OpDel, DB: db, Key: key})
	}
	n, changed, err := applyOpAt(m, key, r, found, e, op, args)
	if err != nil {
		// The server built op and args: this is a bug, not bad input.
		panic(fmt.Sprintf("%s on %q: %v", op, key, err))
	}
	if changed {
		x.record(&persistence.Effect{Op: persistence.OpField, DB: db, Key: key, Field: op, Args: args})
	}
	return n, true
}

// opArgs returns args as a slice that lives until the execution ends, for
// an op a handler builds (the effect keeps it until end). The argument
// bytes must live as long: request arguments do, and opBytes makes any
// other bytes do.
func (x *Ctx) opArgs(args ...[]byte) [][]byte {
	ex := x.ex
	if cap(ex.opArgs)-len(ex.opArgs) < len(args) {
		ex.opArgs = make([][]byte, 0, max(len(args), 2*cap(ex.opArgs), 16))
	}
	start := len(ex.opArgs)
	ex.opArgs = append(ex.opArgs, args...)
	return ex.opArgs[start:len(ex.opArgs):len(ex.opArgs)]
}

// opBytes returns a copy of b that lives until the execution ends (see
// opArgs).
func (x *Ctx) opBytes(b []byte) []byte {
	return x.opAppend(func(d []byte) []byte { return append(d, b...) })
}

// opAppend is opBytes of what fn appends to the slice it is given,
// appended in place: the bytes live until the execution ends.
func (x *Ctx) opAppend(fn func([]byte) []byte) []byte {
	ex := x.ex
	start := len(ex.opBytes)
	ex.opBytes = fn(ex.opBytes)
	return ex.opBytes[start:len(ex.opBytes):len(ex.opBytes)]
}

// storeValue stores v, a whole new value of kind k, at key in the
// selected database (with no expiry), or deletes key when v is empty. For
// the STORE commands.
func (x *Ctx) storeValue(key []byte, k shards.Kind, v coll.Value) {
	if v.Len() == 0 {
		x.del(key)
		return
	}
	x.put(key, shards.Entry{Kind: k, Obj: v})
}

// setExpiry changes the expiry of the live key (whose entry is e) to exp
// (0: none), keeping its value, and logs it as an OpExpire effect.
func (x *Ctx) setExpiry(key []byte, e shards.Entry, exp int64) {
	e.Exp = exp
	x.selected(key).Put(key, e)
	x.record(&persistence.Effect{Op: persistence.OpExpire, DB: x.c.db, Key: key, Entry: shards.Entry{Exp: exp}})
}

// logOnly queues e for the durability log, like record, but does not
// count it as a change (the delete that precedes a new collection key).
func (x *Ctx) logOnly(e persistence.Effect) {
	if x.s.dur.Load() != nil {
		x.ex.effects = append(x.ex.effects, e)
	}
}

// applyOp applies op to the collection at key in m, creating the key if it
// is absent, and deletes the key if the op leaves it empty. It reads no
// clock: live commands (through change) and replay (ApplyEffect) share it.
// The key's shard is locked by the caller; a present key must be of op's
// kind.
func applyOp(m *shards.Map, key []byte, op coll.Op, args [][]byte) (n int64, changed bool, err error) {
	e, r, found := m.Find(key)
	return applyOpAt(m, key, r, found, e, op, args)
}

// applyOpAt is applyOp for a key already looked up with Find (r, found
// and e are what Find returned; nothing changed the shard since).
func applyOpAt(m *shards.Map, key []byte, r shards.Ref, found bool, e shards.Entry, op coll.Op, args [][]byte) (n int64, changed bool, err error) {
	k := op.Kind()
	if k == 0 {
		return 0, false, fmt.Errorf("%w: unknown op %d", coll.ErrBadOp, op)
	}
	if found && e.Kind != k {
		return 0, false, fmt.Errorf("%s on a key holding a %s", op, e.TypeName())
	}
	if !found {
		var err error
		if r, err = m.AddObject(key, shards.Entry{Kind: k, Obj: coll.New(k)}); err != nil {
			return 0, false, err
		}
	}
	v := m.Mutable(r).(coll.Value)
	n, changed, err = coll.Apply(v, op, args)
	if changed {
		m.Touched(r)
	}
	if v.Len() == 0 && k != shards.KindStream { // Redis keeps an empty stream
		m.Remove(key)
	}
	return n, changed, err
}
