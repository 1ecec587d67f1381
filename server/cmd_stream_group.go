package server

import (
	"iter"
	"strconv"

	"github.com/turnstile/turnstile/coll"
	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
)

// Stream consumer groups, as Redis 7.0's t_stream.c: XGROUP, XREADGROUP
// (cmd_stream_readgroup.go), XACK, XPENDING, XCLAIM, XAUTOCLAIM and XINFO
// (cmd_stream_info.go). A handler reads the group, decides, writes its
// reply, and only then records the outcome as primitive ops (coll's
// OpXGroup*), which change the stored value and are what the log and
// replication carry: replay never decides anything. Times are the
// execution's now in Unix milliseconds.
func streamGroupCommands() []*Command {
	key2 := func(c *Command) *Command { return keyAt(c, 2) }
	one := func(c *Command) *Command {
		c.Group = "stream"
		return keyAt(c, 1)
	}
	return []*Command{
		{Name: "xgroup", Arity: -2, Group: "stream", Since: "5.0.0",
			Summary: "A container for consumer groups commands.", Subs: []*Command{
				key2(&Command{Name: "create", Docs: "key:key group:string id-selector=(id:string|$) [MKSTREAM] [ENTRIESREAD entries-read:integer]@7.0.0", Arity: -5, Flags: command.Write | command.DenyOOM | command.AddsKeys, Since: "5.0.0",
					Summary: "Creates a consumer group.", Handler: cmdXGroup}),
				key2(&Command{Name: "createconsumer", Docs: "key:key group:string consumer:string", Arity: 5, Flags: command.Write | command.DenyOOM, Since: "6.2.0",
					Summary: "Creates a consumer in a consumer group.", Handler: cmdXGroup}),
				key2(&Command{Name: "delconsumer", Docs: "key:key group:string consumer:string", Arity: 5, Flags: command.Write, Since: "5.0.0",
					Summary: "Deletes a consumer from a consumer group.", Handler: cmdXGroup}),
				key2(&Command{Name: "destroy", Docs: "key:key group:string", Arity: 4, Flags: command.Write, Since: "5.0.0",
					Summary: "Destroys a consumer group.", Handler: cmdXGroup}),
				{Name: "help", Arity: 2, Flags: command.Loading | command.Stale, Since: "5.0.0",
					Summary: "Returns helpful text about the different subcommands.", Handler: cmdXGroupHelp},
				key2(&Command{Name: "setid", Docs: "key:key group:string id-selector=(id:string|$) [ENTRIESREAD entries-read:integer]@7.0.0", Arity: -5, Flags: command.Write, Since: "5.0.0",
					Summary: "Sets the last-delivered ID of a consumer group.", Handler: cmdXGroup}),
			}},
		one(&Command{Name: "xack", Docs: "key:key group:string id:string...", Arity: -4, Flags: command.Write | command.Fast, Since: "5.0.0",
			Summary: "Returns the number of messages that were successfully acknowledged by the consumer group member of a stream.", Handler: cmdXAck}),
		one(&Command{Name: "xpending", Docs: "key:key group:string [filters=([IDLE min-idle-time:integer]@6.2.0 start:string end:string count:integer [consumer:string])]", Arity: -3, Flags: command.Readonly, Since: "5.0.0",
			Summary: "Returns the information and entries from a stream consumer group's pending entries list.", Handler: cmdXPending}),
		one(&Command{Name: "xclaim", Docs: "key:key group:string consumer:string min-idle-time:string id:string... [IDLE ms:integer] [TIME unix-time-milliseconds:unix-time] [RETRYCOUNT count:integer] [FORCE] [JUSTID] [LASTID lastid:string]", Arity: -6, Flags: command.Write | command.Fast, Since: "5.0.0",
			Summary: "Changes, or acquires, ownership of a message in a consumer group, as if the message was delivered a consumer group member.", Handler: cmdXClaim}),
		one(&Command{Name: "xautoclaim", Docs: "key:key group:string consumer:string min-idle-time:string start:string [COUNT count:integer] [JUSTID]", Arity: -6, Flags: command.Write | command.Fast, Since: "6.2.0",
			Summary: "Changes, or acquires, ownership of messages in a consumer group, as if the messages were delivered to as consumer group member.", Handler: cmdXAutoClaim}),
		xreadgroupCommand(),
		xinfoCommand(),
	}
}

// keyAt gives row c one key, the argument at position at (a subcommand's
// key follows the subcommand).
func keyAt(c *Command, at int) *Command {
	c.FirstKey, c.LastKey, c.Step = at, at, 1
	return c
}

// Redis's consumer-group errors.
const (
	errXGroupNoKey   = "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."
	errBusyGroup     = "BUSYGROUP Consumer Group name already exists"
	errEntriesRead   = "ERR value for ENTRIESREAD must be positive or -1"
	errXClaimMinIdle = "ERR Invalid min-idle-time argument for XCLAIM"
)

// errNoGroup is "NOGROUP No such key 'key' or consumer group 'group'"
// plus suffix (XREADGROUP's names itself).
func errNoGroup(key, group []byte, suffix string) string {
	return "NOGROUP No such key '" + string(key) + "' or consumer group '" + string(group) + "'" + suffix
}

// errNoGroupFor is "NOGROUP No such consumer group 'group' for key name 'key'".
func errNoGroupFor(group, key []byte) string {
	return "NOGROUP No such consumer group '" + string(group) + "' for key name '" + string(key) + "'"
}

// nowMs is the execution's now in Unix milliseconds, the unit of every
// consumer-group time.
func (x *Ctx) nowMs() int64 { return x.now / 1e6 }

// decArg is an op's decimal integer argument (a time, a counter), in the
// execution's memory.
func (x *Ctx) decArg(n int64) []byte {
	var buf [20]byte
	return x.opBytes(strconv.AppendInt(buf[:0], n, 10))
}

// idArg is an op's stream ID argument, in the execution's memory.
func (x *Ctx) idArg(id coll.StreamID) []byte {
	var buf [48]byte
	return x.opBytes(id.AppendText(buf[:0]))
}

// touchConsumer records that consumer (created when absent) of group at
// key was seen now.
func (x *Ctx) touchConsumer(key, group, consumer []byte) {
	x.change(key, coll.OpXGroupConsumer, x.opArgs(group, consumer, x.decArg(x.nowMs())))
}

// claimOp records that ids are pending for consumer, delivered at t, with
// their delivery counts changed by mode ("one", "incr", "keep" or a
// number).
func (x *Ctx) claimOp(key, group, consumer []byte, t int64, mode []byte, ids []coll.StreamID) {
	x.idsOp(key, coll.OpXGroupClaim, ids, group, consumer, x.decArg(t), mode)
}

// ackOp records that ids are no longer pending in group and returns how
// many were (repeats and IDs not pending count for nothing).
func (x *Ctx) ackOp(key, group []byte, ids []coll.StreamID) int64 {
	return x.idsOp(key, coll.OpXGroupAck, ids, group)
}

// idsOp applies op with the arguments head, then ids, and returns its n;
// no ids, no op.
func (x *Ctx) idsOp(key []byte, op coll.Op, ids []coll.StreamID, head ...[]byte) int64 {
	if len(ids) == 0 {
		return 0
	}
	args := make([][]byte, 0, len(head)+len(ids))
	args = append(args, head...)
	for _, id := range ids {
		args = append(args, x.idArg(id))
	}
	n, _ := x.change(key, op, x.opArgs(args...))
	return n
}

// setIDOp records group's last ID and entries-read counter.
func (x *Ctx) setIDOp(key, group []byte, last coll.StreamID, read int64) {
	x.change(key, coll.OpXGroupSetID, x.opArgs(group, x.idArg(last), x.decArg(read)))
}

var (
	modeOne  = []byte("one")
	modeIncr = []byte("incr")
	modeKeep = []byte("keep")
)

// XGROUP CREATE|SETID|DESTROY|CREATECONSUMER|DELCONSUMER, in
// xgroupCommand's order of checks: the options after the ID, the key's
// type, the key's and then the group's existence, then the subcommand.
func cmdXGroup(x *Ctx) {
	a := x.args
	sub := x.cmd.Name
	mkstream, read := false, int64(coll.InvalidEntriesRead)
	for i := 5; i < len(a); i++ {
		switch {
		case sub == "create" && isKeyword(a[i], "mkstream"):
			mkstream = true
		case (sub == "create" || sub == "setid") && isKeyword(a[i], "entriesread") && i+1 < len(a):
			n, ok := resp.ParseInt(a[i+1])
			if !ok {
				x.w.Error(errNotInt)
				return
			}
			if n < 0 && n != coll.InvalidEntriesRead {
				x.w.Error(errEntriesRead)
				return
			}
			read = n
			i++
		default:
			x.w.Error(errSubcommandSyntax(x))
			return
		}
	}
	key, group := a[2], a[3]
	s, found, ok := x.readStream(key)
	if !ok {
		return
	}
	var g *coll.StreamGroup
	if !mkstream {
		if !found {
			x.w.Error(errXGroupNoKey)
			return
		}
		if g = s.Group(group); g == nil && (sub == "setid" || sub == "createconsumer" || sub == "delconsumer") {
			x.w.Error(errNoGroupFor(group, key))
			return
		}
	} else if found {
		g = s.Group(group)
	}
	switch {
	case sub == "create" && len(a) <= 8:
		var id coll.StreamID
		if len(a[4]) == 1 && a[4][0] == '$' {
			if found {
				id = s.LastID()
			}
		} else if id, _, ok = parseStreamIDArg(a[4], 0, false); !ok {
			x.w.Error(errStreamID)
			return
		}
		if g != nil {
			x.w.Error(errBusyGroup)
			return
		}
		x.change(key, coll.OpXGroupCreate, x.opArgs(group, x.idArg(id), x.decArg(read)))
		x.w.OK()
	case sub == "setid" && (len(a) == 5 || len(a) == 7):
		var id coll.StreamID
		if len(a[4]) == 1 && a[4][0] == '$' {
			id = s.LastID()
		} else if id, _, ok = parseIntervalIDPlain(a[4]); !ok {
			x.w.Error(errStreamID)
			return
		}
		x.setIDOp(key, group, id, read)
		x.w.OK()
	case sub == "destroy":
		if g == nil {
			x.w.Int(0)
			return
		}
		x.change(key, coll.OpXGroupDestroy, x.opArgs(group))
		x.w.Int(1)
	case sub == "createconsumer":
		if g.Consumer(a[4]) != nil {
			x.w.Int(0)
			return
		}
		x.touchConsumer(key, group, a[4])
		x.w.Int(1)
	case sub == "delconsumer":
		c := g.Consumer(a[4])
		if c == nil {
			x.w.Int(0)
			return
		}
		n := c.PendingCount()
		x.change(key, coll.OpXGroupDelConsumer, x.opArgs(group, a[4]))
		x.w.Int(int64(n))
	default:
		x.w.Error(errSubcommandSyntax(x))
	}
}

// parseIntervalIDPlain reads an ID as streamParseIDOrReply does: "-" is
// 0-0, "+" the largest ID, else ms[-seq] (seq 0).
func parseIntervalIDPlain(b []byte) (coll.StreamID, bool, bool) {
	id, ex, ok := parseIntervalID(b, 0)
	if ex {
		return id, false, false
	}
	return id, false, ok
}

// xgroupHelp is XGROUP HELP's text, Redis's.
var xgroupHelp = []string{
	"CREATE <key> <groupname> <id|$> [option]",
	"    Create a new consumer group. Options are:",
	"    * MKSTREAM",
	"      Create the empty stream if it does not exist.",
	"    * ENTRIESREAD entries_read",
	"      Set the group's entries_read counter (internal use).",
	"CREATECONSUMER <key> <groupname> <consumer>",
	"    Create a new consumer in the specified group.",
	"DELCONSUMER <key> <groupname> <consumer>",
	"    Remove the specified consumer.",
	"DESTROY <key> <groupname>",
	"    Remove the specified group.",
	"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
	"    Set the current group ID and entries_read counter.",
}

func cmdXGroupHelp(x *Ctx) { writeHelp(x, "XGROUP", xgroupHelp) }

// writeHelp is Redis's addReplyHelp: a header, the lines, and HELP's own.
func writeHelp(x *Ctx, name string, lines []string) {
	x.w.Array(len(lines) + 3)
	x.w.Status(name + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
	for _, l := range lines {
		x.w.Status(l)
	}
	x.w.Status("HELP")
	x.w.Status("    Prints this help.")
}

// XACK key group id [id ...]
func cmdXAck(x *Ctx) {
	a := x.args
	s, found, ok := x.readStream(a[1])
	if !ok {
		return
	}
	var g *coll.StreamGroup
	if found {
		g = s.Group(a[2])
	}
	if g == nil {
		x.w.Int(0)
		return
	}
	ids := make([]coll.StreamID, len(a)-3)
	for i, b := range a[3:] {
		if ids[i], _, ok = parseStreamIDArg(b, 0, false); !ok {
			x.w.Error(errStreamID)
			return
		}
	}
	x.w.Int(x.ackOp(a[1], a[2], ids))
}

// XPENDING key group [[IDLE min-idle-time] start end count [consumer]]
func cmdXPending(x *Ctx) {
	a := x.args
	if len(a) != 3 && (len(a) < 6 || len(a) > 9) {
		x.w.Error(errSyntax)
		return
	}
	var start, end coll.StreamID
	var count, minIdle int64
	var consumer []byte
	if len(a) >= 6 {
		at := 3
		if isKeyword(a[3], "idle") {
			n, ok := resp.ParseInt(a[4])
			if !ok {
				x.w.Error(errNotInt)
				return
			}
			minIdle = n
			if len(a) < 8 {
				x.w.Error(errSyntax)
				return
			}
			at += 2
		}
		n, ok := resp.ParseInt(a[at+2])
		if !ok {
			x.w.Error(errNotInt)
			return
		}
		count = max(n, 0)
		if start, ok = rangeStart(x, a[at]); !ok {
			return
		}
		if end, ok = rangeEnd(x, a[at+1]); !ok {
			return
		}
		if at+3 < len(a) {
			consumer = a[at+3]
		}
	}
	_, g, ok := readGroup(x, a[1], a[2])
	if !ok {
		return
	}
	if len(a) == 3 {
		x.w.Array(4)
		x.w.Int(int64(g.PendingCount()))
		if g.PendingCount() == 0 {
			x.w.Null()
			x.w.Null()
			x.w.NullArray()
			return
		}
		x.w.Bulk(firstIDs(g.PendingFrom(coll.StreamID{}), 1)[0].AppendText(nil))
		last, _ := g.LastPending()
		x.w.Bulk(last.AppendText(nil))
		cs := g.Consumers()
		n := 0
		for _, c := range cs {
			if c.PendingCount() > 0 {
				n++
			}
		}
		x.w.Array(n)
		for _, c := range cs {
			if c.PendingCount() > 0 {
				x.w.Array(2)
				x.w.BulkString(c.Name)
				x.w.Bulk(strconv.AppendInt(nil, int64(c.PendingCount()), 10))
			}
		}
		return
	}
	ids := g.PendingFrom(start)
	if consumer != nil {
		c := g.Consumer(consumer)
		if c == nil {
			x.w.Array(0)
			return
		}
		ids = c.PendingFrom(start)
	}
	now := x.nowMs()
	var out []coll.StreamID
	for id := range ids {
		if count == 0 || end.Less(id) {
			break
		}
		if minIdle != 0 && now-g.Pending(id).Time < minIdle {
			continue
		}
		out = append(out, id)
		count--
	}
	x.w.Array(len(out))
	for _, id := range out {
		nk := g.Pending(id)
		x.w.Array(4)
		x.w.Bulk(id.AppendText(nil))
		x.w.BulkString(nk.Consumer.Name)
		x.w.Int(max(now-nk.Time, 0))
		x.w.Int(nk.Count)
	}
}

// firstIDs returns the first n IDs of seq (n 0 or less: all of them).
func firstIDs(seq iter.Seq[coll.StreamID], n int64) []coll.StreamID {
	var ids []coll.StreamID
	for id := range seq {
		if n > 0 && int64(len(ids)) == n {
			break
		}
		ids = append(ids, id)
	}
	return ids
}

// readGroup reads key's stream and its group, replying WRONGTYPE or
// "NOGROUP No such key ... or consumer group ..." when there is none.
func readGroup(x *Ctx, key, group []byte) (*coll.Stream, *coll.StreamGroup, bool) {
	s, found, ok := x.readStream(key)
	if !ok {
		return nil, nil, false
	}
	var g *coll.StreamGroup
	if found {
		g = s.Group(group)
	}
	if g == nil {
		x.w.Error(errNoGroup(key, group, ""))
		return nil, nil, false
	}
	return s, g, true
}

// writeEntry writes one entry as [id, [field, value, ...]].
func writeEntry(x *Ctx, e *coll.StreamEntry) {
	var idBuf [48]byte
	x.w.Array(2)
	x.w.Bulk(e.ID.AppendText(idBuf[:0]))
	x.w.Array(2 * e.Pairs())
	e.Each(x.w.Bulk)
}

// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME
// ms-unix-time] [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID id]
func cmdXClaim(x *Ctx) {
	a := x.args
	key, group, name := a[1], a[2], a[3]
	s, g, ok := readGroup(x, key, group)
	if !ok {
		return
	}
	minIdle, ok := resp.ParseInt(a[4])
	if !ok {
		x.w.Error(errXClaimMinIdle)
		return
	}
	minIdle = max(minIdle, 0)
	j := 5
	var ids []coll.StreamID
	for ; j < len(a); j++ {
		id, _, ok := parseStreamIDArg(a[j], 0, false)
		if !ok {
			break
		}
		ids = append(ids, id)
	}
	now := x.nowMs()
	delivery, retry := now, int64(-1) // IDLE and TIME set the delivery time
	force, justID := false, false
	var lastID coll.StreamID
	for ; j < len(a); j++ {
		more := len(a) - 1 - j
		switch o := a[j]; {
		case isKeyword(o, "force"):
			force = true
		case isKeyword(o, "justid"):
			justID = true
		case isKeyword(o, "idle") && more > 0:
			j++
			n, ok := xclaimInt(x, a[j], "IDLE")
			if !ok {
				return
			}
			delivery = now - n
		case isKeyword(o, "time") && more > 0:
			j++
			n, ok := xclaimInt(x, a[j], "TIME")
			if !ok {
				return
			}
			delivery = n
		case isKeyword(o, "retrycount") && more > 0:
			j++
			n, ok := xclaimInt(x, a[j], "RETRYCOUNT")
			if !ok {
				return
			}
			retry = n
		case isKeyword(o, "lastid") && more > 0:
			j++
			id, _, ok := parseStreamIDArg(a[j], 0, false)
			if !ok {
				x.w.Error(errStreamID)
				return
			}
			lastID = id
		default:
			x.w.Error("ERR Unrecognized XCLAIM option '" + string(o) + "'")
			return
		}
	}
	if delivery < 0 || delivery > now {
		delivery = now
	}
	mode := modeIncr
	switch {
	case retry >= 0:
		mode = strconv.AppendInt(nil, retry, 10)
	case justID:
		mode = modeKeep
	}
	// Decide in Redis's order, one ID at a time, on the PEL as the IDs
	// before changed it (an ID may be given twice).
	type sim struct {
		gone    bool  // dropped: its entry was deleted
		claimed bool  // claimed by this call
		time    int64 // its delivery time then
	}
	seen := map[coll.StreamID]*sim{}
	var claimed, dropped []coll.StreamID
	var entries []*coll.StreamEntry
	for _, id := range ids {
		st := seen[id]
		if st == nil {
			st = &sim{}
			if nk := g.Pending(id); nk != nil {
				st.time = nk.Time
			} else {
				st.gone = true // no PEL entry (yet)
			}
			seen[id] = st
		}
		pending := !st.gone || st.claimed
		e := s.Entry(id)
		if e == nil {
			if pending { // its PEL entry goes (once: then it is gone)
				dropped = append(dropped, id)
			}
			st.gone, st.claimed = true, false
			continue
		}
		if !pending && !force {
			continue
		}
		// A PEL entry FORCE creates has no consumer: no idle check.
		if pending && minIdle != 0 && now-st.time < minIdle {
			continue
		}
		claimed = append(claimed, id)
		entries = append(entries, e)
		st.claimed, st.time = true, delivery
	}
	x.w.Array(len(claimed))
	for i, id := range claimed {
		if justID {
			x.w.Bulk(id.AppendText(nil))
		} else {
			writeEntry(x, entries[i])
		}
	}
	// Record the group's new last ID, the dropped entries, the consumer
	// and the claims (each change may replace the stored value: s and g
	// are not read after the first).
	if g.Last.Less(lastID) {
		x.setIDOp(key, group, lastID, g.EntriesRead)
	}
	x.ackOp(key, group, dropped)
	if len(claimed) > 0 {
		x.touchConsumer(key, group, name)
		x.claimOp(key, group, name, delivery, mode, claimed)
	}
}

// xclaimInt reads the integer of XCLAIM's option name, replying Redis's
// error for one that is not an integer.
func xclaimInt(x *Ctx, b []byte, name string) (int64, bool) {
	n, ok := resp.ParseInt(b)
	if !ok {
		x.w.Error("ERR Invalid " + name + " option argument for XCLAIM")
	}
	return n, ok
}

// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]
func cmdXAutoClaim(x *Ctx) {
	a := x.args
	key, group, name := a[1], a[2], a[3]
	minIdle, ok := resp.ParseInt(a[4])
	if !ok {
		x.w.Error("ERR Invalid min-idle-time argument for XAUTOCLAIM")
		return
	}
	minIdle = max(minIdle, 0)
	start, ok := rangeStart(x, a[5])
	if !ok {
		return
	}
	count, justID := int64(100), false
	for j := 6; j < len(a); j++ {
		more := len(a) - 1 - j
		switch {
		case isKeyword(a[j], "count") && more > 0:
			n, ok := resp.ParseInt(a[j+1])
			if !ok || n < 1 || n > (1<<63-1)/16 {
				x.w.Error("ERR COUNT must be > 0")
				return
			}
			count = n
			j++
		case isKeyword(a[j], "justid"):
			justID = true
		default:
			x.w.Error(errSyntax)
			return
		}
	}
	s, g, ok := readGroup(x, key, group)
	if !ok {
		return
	}
	now := x.nowMs()
	attempts := count * 10
	var claimed, deleted []coll.StreamID
	var entries []*coll.StreamEntry
	// The cursor: the PEL entry after the last one looked at (Redis's
	// final raxNext), 0-0 at the end.
	var next coll.StreamID
	for id := range g.PendingFrom(start) {
		if attempts == 0 || count == 0 {
			next = id
			break
		}
		attempts--
		e := s.Entry(id)
		if e == nil {
			deleted = append(deleted, id)
			count--
			continue
		}
		if minIdle != 0 && now-g.Pending(id).Time < minIdle {
			continue
		}
		claimed = append(claimed, id)
		entries = append(entries, e)
		count--
	}
	x.w.Array(3)
	x.w.Bulk(next.AppendText(nil))
	x.w.Array(len(claimed))
	for k, id := range claimed {
		if justID {
			x.w.Bulk(id.AppendText(nil))
		} else {
			writeEntry(x, entries[k])
		}
	}
	x.w.Array(len(deleted))
	for _, id := range deleted {
		x.w.Bulk(id.AppendText(nil))
	}
	x.ackOp(key, group, deleted)
	if len(claimed) > 0 {
		x.touchConsumer(key, group, name)
		mode := modeIncr
		if justID {
			mode = modeKeep
		}
		x.claimOp(key, group, name, now, mode, claimed)
	}
}
