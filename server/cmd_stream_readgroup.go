package server

import (
	"slices"

	"github.com/turnstile/turnstile/coll"
	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/shards"
)

// XREADGROUP GROUP group consumer [COUNT count] [BLOCK milliseconds]
// [NOACK] STREAMS key [key ...] id [id ...]
//
// As Redis 7.0's xreadCommand with a group: options in any order until
// STREAMS; then, per stream, its type, its group (NOGROUP) and its ID ("$"
// is refused, ">" means new entries, anything else reads the consumer's
// own pending entries after it). A stream is answered when it is read by
// ID (always) or when it holds an entry past the group's last delivered
// ID; only answered streams see their consumer created or refreshed. New
// entries move the group's last ID and counter and, without NOACK, become
// pending for the consumer (taken from another consumer if one had
// them); history re-delivers (delivery time now, count + 1), and a
// pending entry whose stream entry was deleted comes back as [id, nil].
// Without anything to answer: BLOCK blocks (see blocking.go) until a
// change to a stream; a woken client is answered with the first stream
// that has entries past its group's last ID (at most COUNT, 1000 without
// COUNT), or an error when the key is gone ("UNBLOCKED ...") or its group
// is ("NOGROUP ...").
func xreadgroupCommand() *Command {
	return &Command{Name: "xreadgroup", Docs: "GROUP group:string consumer:string [COUNT count:integer] [BLOCK milliseconds:integer] [NOACK] streams=(STREAMS key:key... id:string...)",
		Access: []command.KeyAccess{command.KeyRead}, Arity: -7, Flags: command.Write | command.Blocking, Since: "5.0.0", Group: "stream",
		Locks:   xreadLocks,
		Summary: "Return new entries from a stream using a consumer group, or access the history of the pending entries for a given consumer. Can block.", Handler: cmdXReadGroup}
}

const (
	errXReadGroupMissing = "ERR Missing GROUP option for XREADGROUP"
	errXReadGroupDollar  = "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set."
	errXReadGroupGone    = "NOGROUP the consumer group this client was blocked on no longer exists"
	errXReadGroupNoKey   = "UNBLOCKED the stream key no longer exists"
)

func cmdXReadGroup(x *Ctx) {
	args := x.args
	o, ok := parseXRead(x, true)
	if !ok {
		return
	}
	timeout, count, noAck, group, consumer, first, n := o.timeout, o.count, o.noAck, o.group, o.consumer, o.first, o.n
	keys, idArgs := args[first:first+n], args[first+n:]
	if x.retrying() {
		xreadgroupWoken(x, keys, group, consumer, count, noAck, timeout)
		return
	}
	ids := make([]coll.StreamID, n)
	history := make([]bool, n)
	for i, key := range keys {
		s, found, ok := x.readStream(key)
		if !ok {
			return
		}
		if !found || s.Group(group) == nil {
			x.w.Error(errNoGroup(key, group, " in XREADGROUP with GROUP option"))
			return
		}
		switch a := idArgs[i]; {
		case len(a) == 1 && a[0] == '$':
			x.w.Error(errXReadGroupDollar)
			return
		case len(a) == 1 && a[0] == '>':
		default:
			id, _, ok := parseStreamIDArg(a, 0, false)
			if !ok {
				x.w.Error(errStreamID)
				return
			}
			// The largest ID is Redis's own mark for ">": it reads as ">".
			ids[i], history[i] = id, id != coll.MaxStreamID
		}
	}
	// Which streams answer: every history read, and a ">" read of a
	// stream with an entry past the group's last ID, decided one stream
	// at a time after the streams before it were served (a key given
	// twice is read twice, the second time past what the first took).
	// The reply's length comes first: the parts are written, then moved
	// behind it.
	mark := x.w.Len()
	ready := 0
	for i, key := range keys {
		if !history[i] {
			s, _, _ := x.readStream(key)
			top, ok := s.TopID()
			if !ok || !s.Group(group).Last.Less(top) {
				continue
			}
		}
		xreadgroupServe(x, key, group, consumer, history[i], ids[i], count, noAck)
		ready++
	}
	if ready == 0 {
		if timeout < 0 {
			x.w.NullArray()
			return
		}
		x.block(keys, shards.KindStream, timeout, false)
		return
	}
	parts := slices.Clone(x.w.Bytes()[mark:])
	x.w.Truncate(mark)
	if isRESP3(x) {
		x.w.Map(ready)
	} else {
		x.w.Array(ready)
	}
	x.w.Append(parts)
}

// xreadgroupWoken runs XREADGROUP again for a woken client: the first
// stream with entries past its group's last ID answers alone; a key
// deleted or overwritten, or a group destroyed, ends the block with
// Redis's error; otherwise the client keeps waiting.
func xreadgroupWoken(x *Ctx, keys [][]byte, group, consumer []byte, count int64, noAck bool, timeout int64) {
	for _, key := range keys {
		e, found := x.get(key)
		if !found || e.Kind != shards.KindStream {
			x.w.Error(errXReadGroupNoKey)
			return
		}
		s := e.Obj.(*coll.Stream)
		g := s.Group(group)
		if g == nil {
			x.w.Error(errXReadGroupGone)
			return
		}
		if g.Last.Less(s.LastID()) {
			if count == 0 {
				count = xreadBlockedCount
			}
			if isRESP3(x) {
				x.w.Map(1)
			} else {
				x.w.Array(1)
			}
			xreadgroupServe(x, key, group, consumer, false, coll.StreamID{}, count, noAck)
			return
		}
	}
	x.block(keys, shards.KindStream, timeout, false)
}

// xreadgroupServe writes one stream's part of the reply ([key, entries]
// under RESP2, a map entry under RESP3) and records its changes: history
// reads the consumer's pending entries after after, a ">" read the
// entries after the group's last ID.
func xreadgroupServe(x *Ctx, key, group, consumer []byte, history bool, after coll.StreamID, count int64, noAck bool) {
	s, _, _ := x.readStream(key)
	g := s.Group(group)
	if !isRESP3(x) {
		x.w.Array(2)
	}
	x.w.Bulk(key)
	if !history {
		after = g.Last
	}
	start, ok := after.Next() // history's after is never the largest ID
	if history {
		var redelivered, ids []coll.StreamID
		if c := g.Consumer(consumer); c != nil {
			ids = firstIDs(c.PendingFrom(start), count)
		}
		x.w.Array(len(ids))
		for _, id := range ids {
			e := s.Entry(id)
			if e == nil {
				x.w.Array(2)
				x.w.Bulk(id.AppendText(nil))
				x.w.NullArray()
				continue
			}
			writeEntry(x, e)
			redelivered = append(redelivered, id)
		}
		x.touchConsumer(key, group, consumer)
		x.claimOp(key, group, consumer, x.nowMs(), modeIncr, redelivered)
		return
	}
	if !ok {
		x.w.Array(0)
		x.touchConsumer(key, group, consumer)
		return
	}
	var ids []coll.StreamID
	var entries []*coll.StreamEntry
	s.Range(start, coll.MaxStreamID, false, func(e *coll.StreamEntry) bool {
		ids = append(ids, e.ID)
		entries = append(entries, e)
		return count <= 0 || int64(len(ids)) < count
	})
	x.w.Array(len(entries))
	for _, e := range entries {
		writeEntry(x, e)
	}
	last, read := s.Delivered(g, ids)
	changed := last != g.Last || read != g.EntriesRead
	x.touchConsumer(key, group, consumer)
	if changed {
		x.setIDOp(key, group, last, read)
	}
	if !noAck {
		x.claimOp(key, group, consumer, x.nowMs(), modeOne, ids)
	}
}
