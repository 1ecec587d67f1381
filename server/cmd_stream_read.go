package server

import (
	"github.com/turnstile/turnstile/coll"
	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
	"github.com/turnstile/turnstile/shards"
)

// XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]
//
// As Redis 7.0's xreadCommand: options in any order until STREAMS; each
// stream's type is checked, then its ID parsed ("$" is the stream's last
// ID, 0-0 for a missing key), in the streams' order. Streams holding an
// entry past their ID are answered at once, each with its entries after
// the ID (at most COUNT; 0 or less: all). Otherwise, with BLOCK, the
// client blocks (see blocking.go): every "$" in its kept copy of the
// command becomes the ID it stood for, and when a change wakes it, the
// first stream whose last ID is past its ID answers alone, with at most
// COUNT entries (1000 when no COUNT was given), as Redis serves the key
// that got data. Without BLOCK, inside MULTI, or when the block times
// out, the reply is a null array. Scripts may not use BLOCK.
func xreadCommand() *Command {
	return &Command{Name: "xread", Docs: "[COUNT count:integer] [BLOCK milliseconds:integer] streams=(STREAMS key:key... id:string...)",
		Access: []command.KeyAccess{command.KeyRead}, Arity: -4, Flags: command.Readonly | command.Blocking, Since: "5.0.0", Group: "stream",
		Locks:   xreadLocks,
		Summary: "Return never seen elements in multiple streams, with IDs greater than the ones reported by the caller for each stream. Can block.", Handler: cmdXRead}
}

// xreadBlockedCount is the COUNT of a served block that gave none (Redis's
// XREAD_BLOCKED_DEFAULT_COUNT).
const xreadBlockedCount = 1000

// xreadStreams finds the STREAMS keyword as Redis's xreadGetKeys does
// (skipping BLOCK's and COUNT's values, XREADGROUP's GROUP and NOACK) and returns the position of the
// first key and the number of keys, or 0, 0 when the keys and IDs do not
// pair up.
func xreadStreams(args [][]byte) (first, n int) {
	for i := 1; i < len(args); i++ {
		switch {
		case isKeyword(args[i], "block"), isKeyword(args[i], "count"):
			i++
		case isKeyword(args[i], "group"): // XREADGROUP's
			i += 2
		case isKeyword(args[i], "noack"):
		case isKeyword(args[i], "streams"):
			rest := len(args) - i - 1
			if rest == 0 || rest%2 != 0 {
				return 0, 0
			}
			return i + 1, rest / 2
		default:
			return 0, 0
		}
	}
	return 0, 0
}

func xreadLocks(args [][]byte, db, _ int, add func(int, []byte)) {
	first, n := xreadStreams(args)
	for _, k := range args[first : first+n] {
		add(db, k)
	}
}

const (
	errXReadUnbalanced = "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."
	errXReadGroup      = "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead."
	errXReadNoAck      = "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead."
	errXReadGT         = "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."
	errTimeoutInt      = "ERR timeout is not an integer or out of range"
)

// xreadArgs are XREAD's and XREADGROUP's parsed options.
type xreadArgs struct {
	timeout         int64 // -1: no BLOCK
	count           int64 // 0: no COUNT (or one of 0 or less)
	noAck           bool
	group, consumer []byte // XREADGROUP's GROUP
	first, n        int    // the keys: args[first:first+n], then their IDs
}

// parseXRead reads the options of XREAD (groups false) or XREADGROUP as
// Redis 7.0's xreadCommand does, in any order until STREAMS, replying the
// error itself. XREAD refuses GROUP and NOACK, XREADGROUP requires GROUP.
func parseXRead(x *Ctx, groups bool) (xreadArgs, bool) {
	args := x.args
	a := xreadArgs{timeout: -1}
	for i := 1; i < len(args) && a.first == 0; i++ {
		more := len(args) - i - 1
		switch o := args[i]; {
		case isKeyword(o, "block") && more > 0:
			if x.c == x.s.scripts.host.fake {
				x.w.Error("ERR " + string(args[0]) + " command is not allowed with BLOCK option from scripts")
				return a, false
			}
			i++
			t, ok := resp.ParseInt(args[i])
			if !ok {
				x.w.Error(errTimeoutInt)
				return a, false
			}
			if t < 0 {
				x.w.Error(errTimeoutNegative)
				return a, false
			}
			a.timeout = t
		case isKeyword(o, "count") && more > 0:
			i++
			c, ok := resp.ParseInt(args[i])
			if !ok {
				x.w.Error(errNotInt)
				return a, false
			}
			a.count = max(c, 0)
		case isKeyword(o, "streams") && more > 0:
			if more%2 != 0 {
				x.w.Error(errXReadUnbalanced)
				return a, false
			}
			a.first, a.n = i+1, more/2
		case isKeyword(o, "group") && more >= 2:
			if !groups {
				x.w.Error(errXReadGroup)
				return a, false
			}
			a.group, a.consumer = args[i+1], args[i+2]
			i += 2
		case isKeyword(o, "noack"):
			if !groups {
				x.w.Error(errXReadNoAck)
				return a, false
			}
			a.noAck = true
		default:
			x.w.Error(errSyntax)
			return a, false
		}
	}
	if a.first == 0 {
		x.w.Error(errSyntax)
		return a, false
	}
	if groups && a.group == nil {
		x.w.Error(errXReadGroupMissing)
		return a, false
	}
	return a, true
}

func cmdXRead(x *Ctx) {
	args := x.args
	o, ok := parseXRead(x, false)
	if !ok {
		return
	}
	timeout, count, first, n := o.timeout, o.count, o.first, o.n
	keys, idArgs := args[first:first+n], args[first+n:]
	ids := make([]coll.StreamID, n)
	streams := make([]*coll.Stream, n)
	for i, key := range keys {
		s, found, ok := readWaited[*coll.Stream](x, key, shards.KindStream)
		if !ok {
			return
		}
		if found {
			streams[i] = s
		}
		switch a := idArgs[i]; {
		case len(a) == 1 && a[0] == '$':
			if found {
				ids[i] = s.LastID()
			}
		case len(a) == 1 && a[0] == '>':
			x.w.Error(errXReadGT)
			return
		default:
			id, _, ok := parseStreamIDArg(a, 0, false)
			if !ok {
				x.w.Error(errStreamID)
				return
			}
			ids[i] = id
		}
	}
	if x.retrying() {
		// Woken: the first stream that got past its ID answers alone.
		for i, s := range streams {
			if s != nil && ids[i].Less(s.LastID()) {
				if count == 0 {
					count = xreadBlockedCount
				}
				if isRESP3(x) {
					x.w.Map(1)
				} else {
					x.w.Array(1)
				}
				writeStreamFrom(x, keys[i], s, ids[i], count)
				return
			}
		}
		x.block(keys, shards.KindStream, timeout, false)
		return
	}
	ready := 0
	for i, s := range streams {
		if s != nil {
			if top, ok := s.TopID(); ok && ids[i].Less(top) {
				ready++
				continue
			}
		}
		streams[i] = nil
	}
	if ready == 0 {
		if timeout < 0 {
			x.w.NullArray()
			return
		}
		x.block(keys, shards.KindStream, timeout, false)
		if b := x.c.blocked; b != nil {
			for i, a := range b.args[first+n:] { // "$" stands for the ID it meant
				if len(a) == 1 && a[0] == '$' {
					b.args[first+n+i] = ids[i].AppendText(nil)
				}
			}
		}
		return
	}
	if isRESP3(x) {
		x.w.Map(ready)
	} else {
		x.w.Array(ready)
	}
	for i, s := range streams {
		if s != nil {
			writeStreamFrom(x, keys[i], s, ids[i], count)
		}
	}
}

// writeStreamFrom writes one stream of an XREAD reply: its key and its
// entries after id, at most count (0: all); a pair under RESP2, a map
// entry under RESP3.
func writeStreamFrom(x *Ctx, key []byte, s *coll.Stream, id coll.StreamID, count int64) {
	if !isRESP3(x) {
		x.w.Array(2)
	}
	x.w.Bulk(key)
	start, ok := id.Next()
	if !ok {
		x.w.Array(0)
		return
	}
	writeEntries(x, s, start, coll.MaxStreamID, false, count)
}
