package server

import (
	"iter"

	"github.com/turnstile/turnstile/coll"
	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
)

// XINFO STREAM|GROUPS|CONSUMERS, as Redis 7.0's xinfoCommand. Two fields
// of XINFO STREAM describe Redis's own layout, a radix tree of listpacks
// of up to 100 entries: radix-tree-keys and radix-tree-nodes are
// estimated here from the entry count (one listpack per 100 entries, the
// node count Redis shows for a tree of that many keys, at least 1),
// not measured.
func xinfoCommand() *Command {
	key2 := func(c *Command) *Command {
		c.Access = []command.KeyAccess{command.KeyRead}
		return keyAt(c, 2)
	}
	return &Command{Name: "xinfo", Arity: -2, Group: "stream", Since: "5.0.0",
		Summary: "A container for stream introspection commands.", Subs: []*Command{
			key2(&Command{Name: "consumers", Docs: "key:key group:string", Arity: 4, Flags: command.Readonly, Since: "5.0.0",
				Summary: "Returns a list of the consumers in a consumer group.", Handler: cmdXInfoConsumers}),
			key2(&Command{Name: "groups", Docs: "key:key", Arity: 3, Flags: command.Readonly, Since: "5.0.0",
				Summary: "Returns a list of the consumer groups of a stream.", Handler: cmdXInfoGroups}),
			{Name: "help", Arity: 2, Flags: command.Loading | command.Stale, Since: "5.0.0",
				Summary: "Returns helpful text about the different subcommands.", Handler: cmdXInfoHelp},
			key2(&Command{Name: "stream", Docs: "key:key [FULL [COUNT count:integer]]@6.0.0", Arity: -3, Flags: command.Readonly, Since: "5.0.0",
				Summary: "Returns information about a stream.", Handler: cmdXInfoStream}),
		}}
}

var xinfoHelp = []string{
	"CONSUMERS <key> <groupname>",
	"    Show consumers of <groupname>.",
	"GROUPS <key>",
	"    Show the stream consumer groups.",
	"STREAM <key> [FULL [COUNT <count>]",
	"    Show information about the stream.",
}

func cmdXInfoHelp(x *Ctx) { writeHelp(x, "XINFO", xinfoHelp) }

// xinfoStream reads XINFO's key: "ERR no such key" when missing.
func xinfoStream(x *Ctx) (*coll.Stream, bool) {
	s, found, ok := x.readStream(x.args[2])
	if ok && !found {
		x.w.Error("ERR no such key")
		return nil, false
	}
	return s, ok
}

func cmdXInfoConsumers(x *Ctx) {
	s, ok := xinfoStream(x)
	if !ok {
		return
	}
	g := s.Group(x.args[3])
	if g == nil {
		x.w.Error(errNoGroupFor(x.args[3], x.args[2]))
		return
	}
	now := x.nowMs()
	cs := g.Consumers()
	x.w.Array(len(cs))
	for _, c := range cs {
		x.w.Map(3)
		x.w.BulkString("name")
		x.w.BulkString(c.Name)
		x.w.BulkString("pending")
		x.w.Int(int64(c.PendingCount()))
		x.w.BulkString("idle")
		x.w.Int(max(now-c.Seen, 0))
	}
}

func cmdXInfoGroups(x *Ctx) {
	s, ok := xinfoStream(x)
	if !ok {
		return
	}
	gs := s.Groups()
	x.w.Array(len(gs))
	for _, g := range gs {
		x.w.Map(6)
		x.w.BulkString("name")
		x.w.BulkString(g.Name)
		x.w.BulkString("consumers")
		x.w.Int(int64(g.ConsumerCount()))
		x.w.BulkString("pending")
		x.w.Int(int64(g.PendingCount()))
		x.w.BulkString("last-delivered-id")
		x.w.Bulk(g.Last.AppendText(nil))
		writeEntriesRead(x, g)
		writeLag(x, s, g)
	}
}

func writeEntriesRead(x *Ctx, g *coll.StreamGroup) {
	x.w.BulkString("entries-read")
	if g.EntriesRead == coll.InvalidEntriesRead {
		x.w.Null()
	} else {
		x.w.Int(g.EntriesRead)
	}
}

func writeLag(x *Ctx, s *coll.Stream, g *coll.StreamGroup) {
	x.w.BulkString("lag")
	if lag, ok := s.Lag(g); ok {
		x.w.Int(lag)
	} else {
		x.w.Null()
	}
}

// radixEstimate is the estimate of XINFO STREAM's radix-tree-keys and
// radix-tree-nodes (see xinfoCommand).
func radixEstimate(n int) (keys, nodes int64) {
	keys = int64((n + 99) / 100)
	if keys <= 1 {
		return keys, keys + 1 // Redis's: an empty tree is one node, one key two
	}
	return keys, 2 * keys
}

// XINFO STREAM key [FULL [COUNT count]]
func cmdXInfoStream(x *Ctx) {
	a := x.args
	full, count := false, int64(10)
	switch len(a) {
	case 3:
	case 4, 6:
		if !isKeyword(a[3], "full") || len(a) == 6 && !isKeyword(a[4], "count") {
			x.w.Error(errSubcommandSyntax(x))
			return
		}
		full = true
		if len(a) == 6 {
			n, ok := resp.ParseInt(a[5])
			if !ok {
				x.w.Error(errNotInt)
				return
			}
			if count = n; n < 0 {
				count = 10
			}
		}
	default:
		x.w.Error(errSubcommandSyntax(x))
		return
	}
	s, ok := xinfoStream(x)
	if !ok {
		return
	}
	if full {
		x.w.Map(9)
	} else {
		x.w.Map(10)
	}
	keys, nodes := radixEstimate(s.Len())
	x.w.BulkString("length")
	x.w.Int(int64(s.Len()))
	x.w.BulkString("radix-tree-keys")
	x.w.Int(keys)
	x.w.BulkString("radix-tree-nodes")
	x.w.Int(nodes)
	x.w.BulkString("last-generated-id")
	x.w.Bulk(s.LastID().AppendText(nil))
	x.w.BulkString("max-deleted-entry-id")
	x.w.Bulk(s.MaxDeletedID().AppendText(nil))
	x.w.BulkString("entries-added")
	x.w.Int(int64(s.EntriesAdded()))
	x.w.BulkString("recorded-first-entry-id")
	x.w.Bulk(s.FirstID().AppendText(nil))
	if !full {
		x.w.BulkString("groups")
		x.w.Int(int64(s.GroupCount()))
		x.w.BulkString("first-entry")
		writeEdgeEntry(x, s, false)
		x.w.BulkString("last-entry")
		writeEdgeEntry(x, s, true)
		return
	}
	x.w.BulkString("entries")
	writeEntries(x, s, coll.StreamID{}, coll.MaxStreamID, false, count)
	x.w.BulkString("groups")
	gs := s.Groups()
	x.w.Array(len(gs))
	for _, g := range gs {
		x.w.Map(7)
		x.w.BulkString("name")
		x.w.BulkString(g.Name)
		x.w.BulkString("last-delivered-id")
		x.w.Bulk(g.Last.AppendText(nil))
		writeEntriesRead(x, g)
		writeLag(x, s, g)
		x.w.BulkString("pel-count")
		x.w.Int(int64(g.PendingCount()))
		x.w.BulkString("pending")
		writePEL(x, g, g.PendingFrom(coll.StreamID{}), count, true)
		cs := g.Consumers()
		x.w.BulkString("consumers")
		x.w.Array(len(cs))
		for _, c := range cs {
			x.w.Map(4)
			x.w.BulkString("name")
			x.w.BulkString(c.Name)
			x.w.BulkString("seen-time")
			x.w.Int(c.Seen)
			x.w.BulkString("pel-count")
			x.w.Int(int64(c.PendingCount()))
			x.w.BulkString("pending")
			writePEL(x, g, c.PendingFrom(coll.StreamID{}), count, false)
		}
	}
}

// writePEL writes XINFO STREAM FULL's pending entries: the first count of
// ids (0: all), each [id, consumer (withConsumer), delivery time, count].
func writePEL(x *Ctx, g *coll.StreamGroup, pel iter.Seq[coll.StreamID], count int64, withConsumer bool) {
	ids := firstIDs(pel, count)
	x.w.Array(len(ids))
	for _, id := range ids {
		nk := g.Pending(id)
		x.w.Array(3 + boolInt(withConsumer))
		x.w.Bulk(id.AppendText(nil))
		if withConsumer {
			x.w.BulkString(nk.Consumer.Name)
		}
		x.w.Int(nk.Time)
		x.w.Int(nk.Count)
	}
}

// writeEdgeEntry writes the first (last: the last) entry, or nil.
func writeEdgeEntry(x *Ctx, s *coll.Stream, last bool) {
	var e *coll.StreamEntry
	s.Range(coll.StreamID{}, coll.MaxStreamID, last, func(v *coll.StreamEntry) bool {
		e = v
		return false
	})
	if e == nil {
		x.w.Null()
		return
	}
	writeEntry(x, e)
}
