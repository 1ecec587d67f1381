package server

import (
	"errors"
	"fmt"

	"github.com/turnstile/turnstile/persistence"
	"github.com/turnstile/turnstile/shards"
)

// Changes to part of a string value (APPEND, SETRANGE) are logged as range
// effects (persistence.OpRange: these bytes at this offset, the value now
// this long), not as the whole value: twenty one-byte APPENDs to a 50 MB
// value log twenty small records, not a gigabyte. The effect is what
// reaches the log and, on a cluster, the followers, which apply it with
// applyRange, like replay. In memory, APPEND grows a big value in place
// (shards.Map.AppendBytes); SETRANGE, which may change bytes already
// handed out, stores a new value. Only a key
// that is live gets a range effect; a new key is a whole value (OpSet), so
// an effect never lands on a value that expired without a logged delete.

// putRange stores e, the whole new string value of the live string key in
// the selected database, and logs only the change: data written at off,
// the value then e.StrLen() bytes long. data may alias the request: the
// effect is encoded before the request buffer is reused.
func (x *Ctx) putRange(key []byte, e shards.Entry, off int64, data []byte) {
	x.selected(key).Put(key, e)
	x.recordRange(x.c.db, key, off, int64(e.StrLen()), data)
}

// newRange stores e, a new string value made of zeros and data at off, at
// key in the selected database, where no live key is. With off > 0 it logs
// a delete of the key (it may hold a value that expired without a logged
// delete, which a range would land on) and the range, so that the zeros
// are not logged; otherwise the value itself.
func (x *Ctx) newRange(key []byte, e shards.Entry, off int64, data []byte) {
	if off == 0 {
		x.put(key, e)
		return
	}
	x.logOnly(persistence.Effect{Op: persistence.OpDel, DB: x.c.db, Key: key})
	x.putRange(key, e, off, data)
}

// storeRange stores b as key's new string value and logs only data, the
// bytes the command wrote at off: putRange over e, the old value (whose
// expiry b keeps), or newRange where no live key was (found false).
func (x *Ctx) storeRange(key []byte, e shards.Entry, found bool, b []byte, off int64, data []byte) {
	if !found {
		x.newRange(key, shards.BytesEntry(b, 0), off, data)
		return
	}
	x.putRange(key, shards.BytesEntry(b, e.Exp), off, data)
}

// appendString appends add to e, the value of the live string key in the
// selected database, which r (from lookup) refers to, keeps its expiry,
// logs the appended bytes alone, and returns the new length. A big value
// grows in place (shards.Map.AppendBytes), so a run of appends does not
// copy it each time; any other gets a new value. Even an empty append
// counts as a change (WATCH, changes since the last save), as in Redis.
func (x *Ctx) appendString(r shards.Ref, key []byte, e shards.Entry, add []byte) int {
	m := x.selected(key)
	old := e.StrLen()
	if _, inPlace := m.AppendBytes(r, add); !inPlace { // a short value or an integer
		b := make([]byte, 0, old+len(add))
		b = e.AppendString(b)
		b = append(b, add...)
		m.Set(r, shards.BytesEntry(b, e.Exp))
	}
	x.recordRange(x.c.db, key, int64(old), int64(old+len(add)), add)
	return old + len(add)
}

func (x *Ctx) recordRange(db int, key []byte, off, n int64, data []byte) {
	x.record(&persistence.Effect{Op: persistence.OpRange, DB: db, Key: key, Off: off, Len: n,
		Entry: shards.Entry{Kind: shards.KindBytes, Str: data}})
}

// applyRange applies a range effect to key in db, whose shard the caller
// holds (ApplyEffect): the string value (an integer's decimal text; none
// for an absent key) is cut or zero-padded to n bytes, data is written at
// off, and the key keeps its expiry. Another type is an error, and so is
// a range that does not fit in n bytes or a value longer than the format
// allows.
func applyRange(db *shards.Map, key []byte, off, n int64, data []byte) error {
	if off < 0 || n > persistence.MaxPayload || off > n-int64(len(data)) {
		return fmt.Errorf("range of %d bytes at %d in a value of %d bytes", len(data), off, n)
	}
	cur, r, found := db.Find(key)
	var exp int64
	var old []byte
	if found {
		if !cur.IsString() {
			return errors.New(errWrongType)
		}
		if cur.Kind == shards.KindBytes && off == int64(len(cur.Str)) && n == off+int64(len(data)) {
			if _, ok := db.AppendBytes(r, data); ok { // an append: in place, as the leader did
				return nil
			}
		}
		exp = cur.Exp
		old = cur.Str
		if cur.Kind == shards.KindInt {
			old = cur.AppendString(nil)
		}
	}
	b := make([]byte, n)
	copy(b, old)
	copy(b[off:], data)
	return db.PutChecked(key, shards.BytesEntry(b, exp))
}
