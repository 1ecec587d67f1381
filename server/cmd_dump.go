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

// errDumpStream refuses DUMP of a value of no known type (none is made).
var errDumpStream = errors.New("DUMP of this value is not supported")

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
	case *coll.Stream:
		return rdb.EncodeStream(rdbStream(v)), nil
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
	case rdb.TypeStream:
		st, err := streamOf(v.Stream)
		if err != nil {
			return shards.Entry{}, err
		}
		return shards.Entry{Kind: shards.KindStream, Obj: st}, nil
	default:
		return shards.Entry{}, errors.New("unknown value type")
	}
	val := coll.New(kind)
	if _, _, err := coll.Apply(val, op, args); err != nil {
		return shards.Entry{}, err
	}
	return shards.Entry{Kind: kind, Obj: val}, nil
}

// rdbStream is a stream's RDB form.
func rdbStream(s *coll.Stream) *rdb.Stream {
	id := func(v coll.StreamID) rdb.StreamID { return rdb.StreamID{Ms: v.Ms, Seq: v.Seq} }
	out := &rdb.Stream{Last: id(s.LastID()), MaxDeleted: id(s.MaxDeletedID()), EntriesAdded: s.EntriesAdded()}
	s.Range(coll.StreamID{}, coll.MaxStreamID, false, func(e *coll.StreamEntry) bool {
		en := rdb.StreamEntry{ID: id(e.ID)}
		e.Each(func(b []byte) { en.Fields = append(en.Fields, b) })
		out.Entries = append(out.Entries, en)
		return true
	})
	for _, g := range s.Groups() {
		rg := rdb.StreamGroup{Name: []byte(g.Name), Last: id(g.Last), EntriesRead: g.EntriesRead}
		for pid := range g.PendingFrom(coll.StreamID{}) {
			n := g.Pending(pid)
			rg.PEL = append(rg.PEL, rdb.StreamNack{ID: id(pid), Time: n.Time, Count: uint64(n.Count)})
		}
		for _, c := range g.Consumers() {
			rc := rdb.StreamConsumer{Name: []byte(c.Name), Seen: c.Seen}
			for pid := range c.PendingFrom(coll.StreamID{}) {
				rc.PEL = append(rc.PEL, id(pid))
			}
			rg.Consumers = append(rg.Consumers, rc)
		}
		out.Groups = append(out.Groups, rg)
	}
	return out
}

// streamOf builds a stream from its RDB form through the ops commands
// apply, refusing what Redis's loader refuses (a group or consumer named
// twice, a pending entry listed twice or owned by no consumer, or owned
// by one and not in the group's list) and what the ops cannot hold.
func streamOf(r *rdb.Stream) (*coll.Stream, error) {
	s := coll.NewStream()
	text := func(id rdb.StreamID) []byte { return coll.StreamID{Ms: id.Ms, Seq: id.Seq}.AppendText(nil) }
	apply := func(op coll.Op, args ...[]byte) error {
		_, _, err := coll.Apply(s, op, args)
		return err
	}
	for _, e := range r.Entries {
		if err := apply(coll.OpXAdd, append([][]byte{text(e.ID)}, e.Fields...)...); err != nil {
			return nil, err
		}
	}
	if r.EntriesAdded < uint64(len(r.Entries)) {
		return nil, errors.New("stream entries added below its length")
	}
	if err := apply(coll.OpXSetID, text(r.Last), strconv.AppendUint(nil, r.EntriesAdded, 10), text(r.MaxDeleted)); err != nil {
		return nil, err
	}
	for _, g := range r.Groups {
		if s.Group(g.Name) != nil {
			return nil, errors.New("stream group named twice")
		}
		if g.EntriesRead < coll.InvalidEntriesRead {
			g.EntriesRead = coll.InvalidEntriesRead // a count past 2^63: unknown
		}
		if err := apply(coll.OpXGroupCreate, g.Name, text(g.Last), strconv.AppendInt(nil, g.EntriesRead, 10)); err != nil {
			return nil, err
		}
		nacks := make(map[rdb.StreamID]rdb.StreamNack, len(g.PEL))
		for _, n := range g.PEL {
			if _, dup := nacks[n.ID]; dup || n.Count > math.MaxInt64 {
				return nil, errors.New("stream PEL entry listed twice or malformed")
			}
			nacks[n.ID] = n
		}
		owned := 0
		for _, c := range g.Consumers {
			grp := s.Group(g.Name)
			if grp.Consumer(c.Name) != nil {
				return nil, errors.New("stream consumer named twice")
			}
			if err := apply(coll.OpXGroupConsumer, g.Name, c.Name, strconv.AppendInt(nil, c.Seen, 10)); err != nil {
				return nil, err
			}
			for _, pid := range c.PEL {
				n, ok := nacks[pid]
				if !ok || s.Group(g.Name).Pending(coll.StreamID{Ms: pid.Ms, Seq: pid.Seq}) != nil {
					return nil, errors.New("stream consumer PEL entry not in its group's, or owned twice")
				}
				if err := apply(coll.OpXGroupClaim, g.Name, c.Name, strconv.AppendInt(nil, n.Time, 10),
					strconv.AppendUint(nil, n.Count, 10), text(pid)); err != nil {
					return nil, err
				}
				owned++
			}
		}
		if owned != len(nacks) {
			return nil, errors.New("stream PEL entry without a consumer")
		}
	}
	return s, nil
}
