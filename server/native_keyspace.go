package server

import (
	"bytes"
	"strconv"

	"github.com/turnstile/turnstile/resp"
	"github.com/turnstile/turnstile/script"
	"github.com/turnstile/turnstile/shards"
)

// The nativeHost's script.Keyspace: TIME, GET, PTTL, SET ... EX and SETEX
// run straight on the execution's Ctx, without the command line, the table
// lookup, the reply writer and the reply parser of Call, but with
// everything else Call does for them: the same checks (refusals), the same
// handler steps (the key's lookup with its lazy expiry and access stamp,
// the same entry stored through Ctx, so the same effect), the command
// statistics and the error counts. When a call would need more (a
// restricted user's permissions, a MONITOR to feed, client-side caching to
// remember the read, an expiry the command would refuse), the method
// answers ok false and the native calls the command.
//
// Locking: as for Call, the execution holds the shards of the script's
// declared keys, the only keys natives touch; in lockcheck builds every
// keyspace access through Ctx verifies it.

// nativeRows are the command rows the direct forms stand for.
type nativeRows struct{ get, pttl, set, setex, time *Command }

func newNativeRows(t *Table) nativeRows {
	row := func(name string) *Command { return t.Lookup([]byte(name)) }
	return nativeRows{get: row("get"), pttl: row("pttl"), set: row("set"), setex: row("setex"), time: row("time")}
}

var (
	nativeGET  = []byte("GET")
	nativePTTL = []byte("PTTL")
	nativeSET  = []byte("SET")
	nativeEX   = []byte("EX")
	// wrongTypeReply is the parsed WRONGTYPE error (its text, as ParseReply
	// leaves it without the '-').
	wrongTypeReply = []byte(errWrongType)
)

// direct reports whether a call of cmd may skip Call: the caller's user
// may run anything (no per-command, per-key check), nobody MONITORs, and
// the caller does not track its reads (Call's run remembers them).
func (h *nativeHost) direct(cmd *Command) bool {
	return cmd != nil && h.s.ops.monitors.n.Load() == 0 && !h.c.trackOn && h.c.userOrDefault().get().open
}

func (h *nativeHost) Time() (secs, micros int64, ok bool) {
	cmd := h.rows.time
	if !h.direct(cmd) {
		return 0, 0, false // the native calls TIME
	}
	now := h.ex.now
	h.s.stats.record(cmd, 0, false)
	return now / 1e9, now % 1e9 / 1e3, true // cmdTime's fields
}

func (h *nativeHost) Get(key []byte) (script.Reply, bool) {
	cmd := h.rows.get
	if !h.direct(cmd) {
		return script.Reply{}, false
	}
	// GET is not DenyOOM and adds no key: nothing refuses it.
	y := &h.ctx
	h.args[0], h.args[1] = nativeGET, key
	y.retarget(cmd, h.args[:2])
	var e shards.Entry
	found := y.lookupInto(key, &e, &h.got)
	h.gotDB, h.gotOK = h.c.db, found
	var r script.Reply
	failed := false
	switch {
	case !found:
		r = script.Reply{Type: '_'}
	case e.Kind == shards.KindInt: // replyString's BulkInt
		h.num = strconv.AppendInt(h.num[:0], e.Int, 10)
		r = script.Reply{Type: '$', Str: h.num}
	case e.IsString():
		r = script.Reply{Type: '$', Str: e.Bytes()}
	default: // getString's error; counted as run counts it
		r = script.Reply{Type: '-', Str: wrongTypeReply}
		countError(h.s, errWrongType)
		failed = true
		h.ex.scriptErrs++
	}
	h.s.stats.record(cmd, 0, failed)
	return r, true
}

func (h *nativeHost) PTTL(key []byte) (script.Reply, bool) {
	cmd := h.rows.pttl
	if !h.direct(cmd) {
		return script.Reply{}, false
	}
	// PTTL reads any type and adds nothing: nothing refuses it, it cannot
	// fail (ttlReply).
	y := &h.ctx
	h.args[0], h.args[1] = nativePTTL, key
	y.retarget(cmd, h.args[:2])
	n := int64(-2)
	if e, found := y.get(key); found {
		n = -1
		if e.Exp != 0 {
			n = remainingMs(e.Exp, y.now)
		}
	}
	h.s.stats.record(cmd, 0, false)
	return script.Reply{Type: ':', Int: n}, true
}

func (h *nativeHost) SetEX(key, value, seconds []byte) (script.Reply, bool) {
	args := h.args[:5]
	args[0], args[1], args[2], args[3], args[4] = nativeSET, key, value, nativeEX, seconds
	return h.setExpiring(h.rows.set, args, key, value, seconds)
}

func (h *nativeHost) Setex(name, key, seconds, value []byte) (script.Reply, bool) {
	args := h.args[:4]
	args[0], args[1], args[2], args[3] = name, key, seconds, value
	return h.setExpiring(h.rows.setex, args, key, value, seconds)
}

// setExpiring is SET key value EX seconds or SETEX key seconds value (cmd,
// args) run directly: ok false, having done nothing, when the call must go
// through Call (see direct) or when seconds is not an expiry the command
// accepts (Call then answers its error).
func (h *nativeHost) setExpiring(cmd *Command, args [][]byte, key, value, seconds []byte) (script.Reply, bool) {
	if !h.direct(cmd) {
		return script.Reply{}, false
	}
	n, ok := resp.ParseInt(seconds) // expireArg's reading
	if !ok {
		return script.Reply{}, false
	}
	exp, ok := positiveExpiryNs(h.ex.now, n, unitSeconds, false)
	if !ok {
		return script.Reply{}, false
	}
	s := h.s
	// The key a GET of this run found, if it still holds its slot: live
	// (found at this run's one now), so the SET adds no key, and its
	// lookup would find it there, touched already by the GET.
	ref, held := h.got, h.gotOK && h.gotDB == h.c.db && bytes.Equal(h.got.Key(), key) && h.got.Holds()
	h.gotOK = false
	// Call's refusals, in its order (a SET of a present key adds none).
	e := s.diskRefusal(cmd)
	if e == "" {
		e = s.scriptOOM(cmd, h.ex.wrote)
	}
	if e == "" && !held {
		e = h.addsKeysError(cmd, args)
	}
	if e != "" {
		return h.refused(e), true
	}
	// setGeneric without NX, XX, GET or KEEPTTL: the lookup (lazy expiry,
	// access stamp), then the store; exp lies ahead, so storeString puts
	// (here through the lookup's Ref: the same entry, no second probe).
	y := &h.ctx
	y.retarget(cmd, args)
	if !held {
		var e shards.Entry
		y.lookupInto(key, &e, &ref)
	}
	y.set(ref, key, shards.BytesEntry(value, exp))
	s.stats.record(cmd, 0, false)
	return script.Reply{Type: '+', Str: okReply}, true
}

// okReply is +OK parsed.
var okReply = []byte("OK")

// refused is Call's reply for a command refused before it ran: the error,
// parsed as Call parses it (it is not counted: Call does not count it).
func (h *nativeHost) refused(e string) script.Reply {
	h.w.Reset(nativeReplyKeep)
	h.w.Error(e)
	script.ParseReply(h.w.Bytes(), &h.reply)
	return h.reply
}

var _ script.Keyspace = (*nativeHost)(nil)
