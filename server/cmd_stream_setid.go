package server

import (
	"strconv"

	"github.com/turnstile/turnstile/coll"
	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
)

// XSETID key last-id [ENTRIESADDED entries_added] [MAXDELETEDID max_deleted_id]
//
// As Redis 7.0's xsetidCommand: the ID and the options are parsed first,
// then the key must hold a stream ("no such key" otherwise); the new last
// ID may not be below the top entry, nor entries_added below the length
// (both checked only for a stream with entries). A MAXDELETEDID of 0-0
// leaves the recorded one. The change is logged as the stream's xsetid
// op, with all three values.
func xsetidCommand() *Command {
	return &Command{Name: "xsetid", Docs: "key:key last-id:string [ENTRIESADDED entries_added:integer]@7.0.0 [MAXDELETEDID max_deleted_id:string]@7.0.0",
		Arity: -3, Flags: command.Write | command.DenyOOM | command.Fast, Since: "5.0.0", Group: "stream",
		FirstKey: 1, LastKey: 1, Step: 1,
		Summary: "An internal command for replicating stream values.", Handler: cmdXSetID}
}

const (
	errXSetIDAdded    = "ERR entries_added must be positive"
	errXSetIDMaxDel   = "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"
	errXSetIDTop      = "ERR The ID specified in XSETID is smaller than the target stream top item"
	errXSetIDShortLen = "ERR The entries_added specified in XSETID is smaller than the target stream length"
)

func cmdXSetID(x *Ctx) {
	args := x.args
	last, _, ok := parseStreamIDArg(args[2], 0, false)
	if !ok {
		x.w.Error(errStreamID)
		return
	}
	added := int64(-1)
	var maxDel coll.StreamID
	for i := 3; i < len(args); i += 2 {
		more := len(args) - 1 - i
		switch {
		case isKeyword(args[i], "entriesadded") && more > 0:
			n, ok := resp.ParseInt(args[i+1])
			if !ok {
				x.w.Error(errNotInt)
				return
			}
			if n < 0 {
				x.w.Error(errXSetIDAdded)
				return
			}
			added = n
		case isKeyword(args[i], "maxdeletedid") && more > 0:
			id, _, ok := parseStreamIDArg(args[i+1], 0, false)
			if !ok {
				x.w.Error(errStreamID)
				return
			}
			if last.Less(id) {
				x.w.Error(errXSetIDMaxDel)
				return
			}
			maxDel = id
		default:
			x.w.Error(errSyntax)
			return
		}
	}
	s, found, ok := x.readStream(args[1])
	if !ok {
		return
	}
	if !found {
		x.w.Error(errNoSuchKey)
		return
	}
	if top, ok := s.TopID(); ok {
		if last.Less(top) {
			x.w.Error(errXSetIDTop)
			return
		}
		if added >= 0 && added < int64(s.Len()) {
			x.w.Error(errXSetIDShortLen)
			return
		}
	}
	if added < 0 {
		added = int64(s.EntriesAdded())
	}
	if maxDel == (coll.StreamID{}) {
		maxDel = s.MaxDeletedID()
	}
	op := [][]byte{last.AppendText(nil), strconv.AppendInt(nil, added, 10), maxDel.AppendText(nil)}
	if _, ok := x.change(args[1], coll.OpXSetID, op); ok {
		x.w.OK()
	}
}
