package server

import (
	"strconv"

	"github.com/turnstile/turnstile/coll"
	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
)

// Streams: XADD XLEN XRANGE XREVRANGE XTRIM XDEL, XREAD
// (cmd_stream_read.go) and XSETID (cmd_stream_setid.go); consumer groups
// and XINFO are in cmd_stream_group.go.
// Approximate trimming ("~") trims exactly: Redis's removes only whole
// nodes of up to 100 entries, so it may leave more entries than asked.
func streamCommands() []*Command {
	one := func(c *Command) *Command {
		c.FirstKey, c.LastKey, c.Step, c.Group = 1, 1, 1, "stream"
		return c
	}
	return []*Command{
		one(&Command{Name: "xadd", Docs: "key:key [NOMKSTREAM]@6.2.0 [trim=(strategy=(MAXLEN|MINID)@6.2.0 [operator:string] threshold:string [LIMIT count:integer]@6.2.0)] id-selector=(*|id:string) data=(field:string value:string)...", Arity: -5, Flags: command.Write | command.DenyOOM | command.Fast | command.AddsKeys, Since: "5.0.0",
			Summary: "Appends a new message to a stream. Creates the key if it doesn't exist.", Handler: cmdXAdd}),
		one(&Command{Name: "xlen", Docs: "key:key", Access: []command.KeyAccess{command.KeyAny}, Arity: 2, Flags: command.Readonly | command.Fast, Since: "5.0.0",
			Summary: "Return the number of messages in a stream.", Handler: cmdXLen}),
		one(&Command{Name: "xrange", Docs: "key:key start:string end:string [COUNT count:integer]", Arity: -4, Flags: command.Readonly, Since: "5.0.0",
			Summary: "Returns the messages from a stream within a range of IDs.", Handler: cmdXRange}),
		one(&Command{Name: "xrevrange", Docs: "key:key end:string start:string [COUNT count:integer]", Arity: -4, Flags: command.Readonly, Since: "5.0.0",
			Summary: "Returns the messages from a stream within a range of IDs in reverse order.", Handler: cmdXRange}),
		one(&Command{Name: "xtrim", Docs: "key:key trim=(strategy=(MAXLEN|MINID)@6.2.0 [operator:string] threshold:string [LIMIT count:integer]@6.2.0)", Arity: -4, Flags: command.Write, Since: "5.0.0",
			Summary: "Deletes messages from the beginning of a stream.", Handler: cmdXTrim}),
		one(&Command{Name: "xdel", Docs: "key:key id:string...", Arity: -3, Flags: command.Write | command.Fast, Since: "5.0.0",
			Summary: "Returns the number of messages after removing them from a stream.", Handler: cmdXDel}),
		xreadCommand(),
		xsetidCommand(),
	}
}

// Redis's stream errors.
const (
	errStreamID        = "ERR Invalid stream ID specified as stream command argument"
	errXAddSmaller     = "ERR The ID specified in XADD is equal or smaller than the target stream top item"
	errXAddZero        = "ERR The ID specified in XADD must be greater than 0-0"
	errXAddExhausted   = "ERR The stream has exhausted the last possible ID, unable to add more items"
	errTrimBoth        = "ERR syntax error, MAXLEN and MINID options at the same time are not compatible"
	errMaxlenArg       = "ERR The MAXLEN argument must be >= 0."
	errLimitArg        = "ERR The LIMIT argument must be >= 0."
	errLimitNoStrategy = "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"
	errLimitNoApprox   = "ERR syntax error, LIMIT cannot be used without the special ~ option"
	errXTrimNoStrategy = "ERR syntax error, XTRIM must be called with a trimming strategy"
	errStartInterval   = "ERR invalid start ID for the interval"
	errEndInterval     = "ERR invalid end ID for the interval"
)

// trimArgs are the parsed XADD/XTRIM options.
type trimArgs struct {
	strategy  string // "", "MAXLEN" or "MINID"
	threshold []byte // the op argument: a count or an ID
	noMk      bool
	id        coll.StreamID
	idGiven   bool // an ID other than "*"
	seqGiven  bool // false for "ms-*"
	next      int  // XADD: index of the ID argument
}

// parseStreamIDArg reads a strict stream ID (no "-" or "+"); autoSeq
// allows "ms-*".
func parseStreamIDArg(b []byte, missingSeq uint64, autoSeq bool) (id coll.StreamID, seqGiven, ok bool) {
	if len(b) == 1 && (b[0] == '-' || b[0] == '+') {
		return id, false, false
	}
	id, auto, ok := coll.ParseStreamID(b, missingSeq, autoSeq)
	return id, !auto, ok
}

// parseTrimArgs is Redis's streamParseAddOrTrimArgsOrReply: it replies the
// error and returns false on bad options.
func parseTrimArgs(x *Ctx, args [][]byte, xadd bool) (t trimArgs, ok bool) {
	approx, limitGiven := false, false
	var limit int64
	i := 2
	for ; i < len(args); i++ {
		more := len(args) - 1 - i
		opt := args[i]
		switch {
		case xadd && len(opt) == 1 && opt[0] == '*':
			t.next = i
			goto done
		case more > 0 && (isKeyword(opt, "maxlen") || isKeyword(opt, "minid")):
			if t.strategy != "" {
				x.w.Error(errTrimBoth)
				return t, false
			}
			approx = false
			if next := args[i+1]; more >= 2 && len(next) == 1 && (next[0] == '~' || next[0] == '=') {
				approx = next[0] == '~'
				i++
			}
			arg := args[i+1]
			if opt[1] == 'a' || opt[1] == 'A' {
				n, ok := resp.ParseInt(arg)
				if !ok {
					x.w.Error(errNotInt)
					return t, false
				}
				if n < 0 {
					x.w.Error(errMaxlenArg)
					return t, false
				}
				t.strategy, t.threshold = "MAXLEN", strconv.AppendInt(nil, n, 10)
			} else {
				id, _, ok := parseStreamIDArg(arg, 0, false)
				if !ok {
					x.w.Error(errStreamID)
					return t, false
				}
				t.strategy, t.threshold = "MINID", id.AppendText(nil)
			}
			i++
		case more > 0 && isKeyword(opt, "limit"):
			n, ok := resp.ParseInt(args[i+1])
			if !ok {
				x.w.Error(errNotInt)
				return t, false
			}
			if n < 0 {
				x.w.Error(errLimitArg)
				return t, false
			}
			limit, limitGiven = n, true
			i++
		case xadd && isKeyword(opt, "nomkstream"):
			t.noMk = true
		case xadd:
			id, seqGiven, ok := parseStreamIDArg(opt, 0, true)
			if !ok {
				x.w.Error(errStreamID)
				return t, false
			}
			t.id, t.seqGiven, t.idGiven, t.next = id, seqGiven, true, i
			goto done
		default:
			x.w.Error(errSyntax)
			return t, false
		}
	}
	t.next = i
done:
	if limit != 0 && t.strategy == "" {
		x.w.Error(errLimitNoStrategy)
		return t, false
	}
	if !xadd && t.strategy == "" {
		x.w.Error(errXTrimNoStrategy)
		return t, false
	}
	if limitGiven && !approx {
		x.w.Error(errLimitNoApprox)
		return t, false
	}
	return t, true
}

// XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value [field value ...]
func cmdXAdd(x *Ctx) {
	args := x.args
	t, ok := parseTrimArgs(x, args, true)
	if !ok {
		return
	}
	fields := len(args) - (t.next + 1)
	if fields < 2 || fields%2 == 1 {
		x.w.Error(arityError(x.cmd.Name))
		return
	}
	if t.idGiven && t.seqGiven && t.id == (coll.StreamID{}) {
		x.w.Error(errXAddZero)
		return
	}
	key := args[1]
	s, found, ok := x.readStream(key)
	if !ok {
		return
	}
	if !found && t.noMk {
		x.w.Null()
		return
	}
	var last coll.StreamID
	if found {
		last = s.LastID()
	}
	if last == coll.MaxStreamID {
		x.w.Error(errXAddExhausted)
		return
	}
	var id coll.StreamID
	switch {
	case !t.idGiven: // "*": the execution's now, never the wall clock
		id = coll.StreamID{Ms: uint64(x.now / 1e6)}
		if x.now < 0 || !last.Less(id) {
			id, _ = last.Next()
		}
	case !t.seqGiven: // "ms-*"
		id = coll.StreamID{Ms: t.id.Ms}
		if t.id.Ms == last.Ms {
			var more bool
			if id, more = last.Next(); !more || id.Ms != t.id.Ms {
				x.w.Error(errXAddSmaller)
				return
			}
		}
		if !last.Less(id) {
			x.w.Error(errXAddSmaller)
			return
		}
	default:
		id = t.id
		if !last.Less(id) {
			x.w.Error(errXAddSmaller)
			return
		}
	}
	var idBuf [48]byte
	opArgs := make([][]byte, 0, 1+fields)
	opArgs = append(opArgs, id.AppendText(idBuf[:0]))
	opArgs = append(opArgs, args[t.next+1:]...)
	if _, ok := x.change(key, coll.OpXAdd, opArgs); !ok {
		return
	}
	if t.strategy != "" {
		x.change(key, coll.OpXTrim, [][]byte{[]byte(t.strategy), t.threshold})
	}
	x.w.Bulk(id.AppendText(idBuf[:0]))
}

// XLEN key
func cmdXLen(x *Ctx) {
	args := x.args
	s, found, ok := x.readStream(args[1])
	if !ok {
		return
	}
	if !found {
		x.w.Int(0)
		return
	}
	x.w.Int(int64(s.Len()))
}

// parseIntervalID reads an XRANGE bound: "-", "+", an ID (seq defaulting
// to missingSeq), or "(" and a strict ID (exclusive).
func parseIntervalID(b []byte, missingSeq uint64) (id coll.StreamID, exclusive, ok bool) {
	if len(b) > 1 && b[0] == '(' {
		id, _, ok = parseStreamIDArg(b[1:], missingSeq, false)
		return id, true, ok
	}
	if len(b) == 1 && b[0] == '-' {
		return coll.StreamID{}, false, true
	}
	if len(b) == 1 && b[0] == '+' {
		return coll.MaxStreamID, false, true
	}
	id, _, ok = coll.ParseStreamID(b, missingSeq, false)
	return id, false, ok
}

// rangeStart reads the start of an ID range (parseIntervalID; "(" starts
// after the ID), replying Redis's error itself.
func rangeStart(x *Ctx, b []byte) (coll.StreamID, bool) {
	id, ex, ok := parseIntervalID(b, 0)
	if !ok {
		x.w.Error(errStreamID)
		return id, false
	}
	if ex {
		if id, ok = id.Next(); !ok {
			x.w.Error(errStartInterval)
		}
	}
	return id, ok
}

// rangeEnd reads the end of an ID range (a missing sequence is the
// largest; "(" ends before the ID), replying Redis's error itself.
func rangeEnd(x *Ctx, b []byte) (coll.StreamID, bool) {
	id, ex, ok := parseIntervalID(b, ^uint64(0))
	if !ok {
		x.w.Error(errStreamID)
		return id, false
	}
	if ex {
		if id, ok = id.Prev(); !ok {
			x.w.Error(errEndInterval)
		}
	}
	return id, ok
}

// XRANGE key start end [COUNT count]; XREVRANGE key end start [COUNT count]
func cmdXRange(x *Ctx) {
	args := x.args
	rev := x.cmd.Name == "xrevrange"
	startArg, endArg := args[2], args[3]
	if rev {
		startArg, endArg = endArg, startArg
	}
	start, ok := rangeStart(x, startArg)
	if !ok {
		return
	}
	end, ok := rangeEnd(x, endArg)
	if !ok {
		return
	}
	count := int64(-1)
	for j := 4; j < len(args); j++ {
		if isKeyword(args[j], "count") && j+1 < len(args) {
			n, ok := resp.ParseInt(args[j+1])
			if !ok {
				x.w.Error(errNotInt)
				return
			}
			count = max(n, 0)
			j++
			continue
		}
		x.w.Error(errSyntax)
		return
	}
	s, found, ok := x.readStream(args[1])
	if !ok {
		return
	}
	if !found {
		x.w.Array(0)
		return
	}
	if count == 0 {
		x.w.NullArray()
		return
	}
	writeEntries(x, s, start, end, rev, count)
}

// writeEntries writes the entries of s from start to end (reverse: from
// end down to start), at most count of them (0 or less: all), as an array
// of [id, [field, value, ...]].
func writeEntries(x *Ctx, s *coll.Stream, start, end coll.StreamID, rev bool, count int64) {
	// Count first: the reply's header comes before its entries.
	n := int64(0)
	s.Range(start, end, rev, func(*coll.StreamEntry) bool {
		n++
		return count <= 0 || n < count
	})
	x.w.Array(int(n))
	if n == 0 {
		return
	}
	k := int64(0)
	var idBuf [48]byte
	s.Range(start, end, rev, func(e *coll.StreamEntry) bool {
		x.w.Array(2)
		x.w.Bulk(e.ID.AppendText(idBuf[:0]))
		x.w.Array(2 * e.Pairs())
		e.Each(x.w.Bulk)
		k++
		return k < n
	})
}

// XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]
func cmdXTrim(x *Ctx) {
	args := x.args
	t, ok := parseTrimArgs(x, args, false)
	if !ok {
		return
	}
	_, found, ok := x.readStream(args[1])
	if !ok {
		return
	}
	if !found {
		x.w.Int(0)
		return
	}
	if n, ok := x.change(args[1], coll.OpXTrim, [][]byte{[]byte(t.strategy), t.threshold}); ok {
		x.w.Int(n)
	}
}

// XDEL key id [id ...]
func cmdXDel(x *Ctx) {
	args := x.args
	_, found, ok := x.readStream(args[1])
	if !ok {
		return
	}
	if !found {
		x.w.Int(0)
		return
	}
	// All IDs are checked before any is deleted.
	for _, a := range args[2:] {
		if _, _, ok := parseStreamIDArg(a, 0, false); !ok {
			x.w.Error(errStreamID)
			return
		}
	}
	if n, ok := x.change(args[1], coll.OpXDel, args[2:]); ok {
		x.w.Int(n)
	}
}
