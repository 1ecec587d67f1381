package server

import (
	"slices"
	"sync"

	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
)

// Pub/sub: SUBSCRIBE, PSUBSCRIBE, their UNSUBSCRIBEs, PUBLISH and PUBSUB.
//
// The registry (Server.pubsub) maps each channel and each pattern to the
// connections subscribed to it, under one RWMutex: PUBLISH reads it, the
// (UN)SUBSCRIBE commands and connection teardown change it. A connection's
// own list of subscriptions (client.subs) belongs to its goroutine, and the
// counts CLIENT LIST shows are atomics. PUBLISH queues each message on the
// subscribers' outbound queues (outq.go) while it holds the read lock, so
// it never waits for a subscriber's socket, and a message published after
// an UNSUBSCRIBE returned cannot be queued for that connection.
//
// A connection with at least one subscription is in pub/sub mode: in RESP2
// it may then run only the commands pubsubAllowed names (the dispatcher
// refuses the rest with Redis's error), and PING answers ["pong", msg].

// pubsub is the server's registry of subscriptions.
type pubsub struct {
	mu       sync.RWMutex
	channels map[string]map[*client]struct{}
	patterns map[string]map[*client]struct{}
}

// clientSubs is one connection's subscriptions, owned by its goroutine.
type clientSubs struct {
	channels map[string]struct{}
	patterns map[string]struct{}
}

// subscribed reports whether the connection is in pub/sub mode.
func (c *client) subscribed() bool {
	return c.subs != nil && len(c.subs.channels)+len(c.subs.patterns) > 0
}

// subCount is what (UN)SUBSCRIBE replies report: channels plus patterns.
func (c *client) subCount() int64 {
	if c.subs == nil {
		return 0
	}
	return int64(len(c.subs.channels) + len(c.subs.patterns))
}

// pubsubAllowed reports whether cmd may run in RESP2 pub/sub mode.
func pubsubAllowed(cmd *Command) bool {
	switch cmd.Name {
	case "subscribe", "unsubscribe", "psubscribe", "punsubscribe", "ping", "quit", "reset":
		return cmd.Parent() == nil
	}
	return false
}

// errPubsubContext is Redis's refusal of other commands in pub/sub mode.
func errPubsubContext(cmd *Command) string {
	return "ERR Can't execute '" + cmd.FullName() + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
}

func pubsubCommands() []*Command {
	const f = command.NoScript | command.Loading | command.Stale
	return []*Command{
		{Name: "subscribe", Docs: "channel:string...", Arity: -2, Flags: f, Group: "pubsub", Since: "2.0.0",
			Summary: "Listens for messages published to channels.", Handler: cmdSubscribe},
		{Name: "unsubscribe", Docs: "[channel:string...]", Arity: -1, Flags: f, Group: "pubsub", Since: "2.0.0",
			Summary: "Stops listening to messages posted to channels.", Handler: cmdUnsubscribe},
		{Name: "psubscribe", Docs: "pattern:pattern...", Arity: -2, Flags: f, Group: "pubsub", Since: "2.0.0",
			Summary: "Listens for messages published to channels that match one or more patterns.", Handler: cmdPsubscribe},
		{Name: "punsubscribe", Docs: "[pattern:pattern...]", Arity: -1, Flags: f, Group: "pubsub", Since: "2.0.0",
			Summary: "Stops listening to messages published to channels that match one or more patterns.", Handler: cmdPunsubscribe},
		{Name: "publish", Docs: "channel:string message:string", Arity: 3, Flags: command.Loading | command.Stale | command.Fast | command.MayReplicate, Group: "pubsub", Since: "2.0.0",
			Summary: "Posts a message to a channel.", Handler: cmdPublish},
		{Name: "pubsub", Arity: -2, Group: "pubsub", Since: "2.8.0",
			Summary: "A container for Pub/Sub commands.", Subs: pubsubSubcommands()},
	}
}

func pubsubSubcommands() []*Command {
	const f = command.Loading | command.Stale
	return []*Command{
		{Name: "channels", Docs: "[pattern:pattern]", Arity: -2, Flags: f, Args: "[<pattern>]", Since: "2.8.0",
			Summary: "Returns the active channels.", Handler: pubsubChannels},
		{Name: "numsub", Docs: "[channel:string...]", Arity: -2, Flags: f, Args: "[<channel> ...]", Since: "2.8.0",
			Summary: "Returns a count of subscribers to channels.", Handler: pubsubNumsub},
		{Name: "numpat", Arity: 2, Flags: f, Since: "2.8.0",
			Summary: "Returns a count of unique pattern subscriptions.", Handler: pubsubNumpat},
		{Name: "shardchannels", Docs: "[pattern:pattern]", Arity: -2, Flags: f, Args: "[<pattern>]", Since: "7.0.0",
			Summary: "Returns the active shard channels.", Handler: pubsubShardChannels},
		{Name: "shardnumsub", Docs: "[shardchannel:string...]", Arity: -2, Flags: f, Args: "[<shardchannel> ...]", Since: "7.0.0",
			Summary: "Returns the count of subscribers of shard channels.", Handler: pubsubShardNumsub},
		{Name: "help", Arity: 2, Flags: f, NotCats: command.CatPubSub, Since: "6.2.0",
			Summary: "Returns helpful text about the different subcommands.", Handler: subcommandHelp},
	}
}

func cmdSubscribe(x *Ctx)  { x.c.subscribe(x.args[1:], false) }
func cmdPsubscribe(x *Ctx) { x.c.subscribe(x.args[1:], true) }

// subscribe adds channels (or patterns) and confirms each one, in order.
func (c *client) subscribe(names [][]byte, pattern bool) {
	if c.subs == nil {
		c.subs = &clientSubs{channels: map[string]struct{}{}, patterns: map[string]struct{}{}}
	}
	own, kind, counter := c.subs.channels, "subscribe", &c.nsub
	ps := &c.s.pubsub
	reg := &ps.channels
	if pattern {
		own, kind, counter, reg = c.subs.patterns, "psubscribe", &c.npsub, &ps.patterns
	}
	ps.mu.Lock()
	if *reg == nil {
		*reg = map[string]map[*client]struct{}{}
	}
	for _, n := range names {
		name := string(n)
		if _, dup := own[name]; !dup {
			own[name] = struct{}{}
			set := (*reg)[name]
			if set == nil {
				set = map[*client]struct{}{}
				(*reg)[name] = set
			}
			set[c] = struct{}{}
		}
		c.w.Push(3)
		c.w.BulkString(kind)
		c.w.Bulk(n)
		c.w.Int(c.subCount())
	}
	counter.Store(int32(len(own)))
	ps.mu.Unlock()
}

func cmdUnsubscribe(x *Ctx)  { x.c.unsubscribe(x.args[1:], false, true) }
func cmdPunsubscribe(x *Ctx) { x.c.unsubscribe(x.args[1:], true, true) }

// unsubscribe removes the named channels (or patterns; every one when
// names is empty) and, if reply, confirms each one with the count left
// after it. The registry stays locked throughout, so every message queued
// before a removal is moved into the reply stream ahead of the
// confirmations, and none can be queued after them.
func (c *client) unsubscribe(names [][]byte, pattern, reply bool) {
	kind, counter := "unsubscribe", &c.nsub
	var own map[string]struct{}
	ps := &c.s.pubsub
	reg := &ps.channels
	if pattern {
		kind, counter, reg = "punsubscribe", &c.npsub, &ps.patterns
	}
	if c.subs != nil {
		own = c.subs.channels
		if pattern {
			own = c.subs.patterns
		}
	}
	if len(names) == 0 {
		all := make([]string, 0, len(own))
		for n := range own {
			all = append(all, n)
		}
		slices.Sort(all)
		names = make([][]byte, len(all))
		for i, n := range all {
			names[i] = []byte(n)
		}
		if len(names) == 0 && reply {
			c.w.Push(3)
			c.w.BulkString(kind)
			c.w.Null()
			c.w.Int(c.subCount())
			return
		}
	}
	ps.mu.Lock()
	if reply {
		c.takeOut()
	}
	for _, n := range names {
		if _, ok := own[string(n)]; ok {
			delete(own, string(n))
			if set := (*reg)[string(n)]; set != nil {
				delete(set, c)
				if len(set) == 0 {
					delete(*reg, string(n))
				}
			}
		}
		if reply {
			c.w.Push(3)
			c.w.BulkString(kind)
			c.w.Bulk(n)
			c.w.Int(c.subCount())
		}
	}
	counter.Store(int32(len(own)))
	ps.mu.Unlock()
}

// unsubscribeAll leaves every channel and pattern without replies
// (connection teardown, RESET).
func (c *client) unsubscribeAll() {
	if c.subs == nil {
		return
	}
	c.unsubscribe(nil, false, false)
	c.unsubscribe(nil, true, false)
}

func cmdPublish(x *Ctx) {
	x.w.Int(x.s.publish(x.c, x.args[1], x.args[2]))
}

// publish queues msg for every subscriber of channel and of a pattern
// matching it, and returns how many it reached.
func (s *Server) publish(from *client, channel, msg []byte) int64 {
	ps := &s.pubsub
	var frames [2][]byte // the "message" frame, by protocol (RESP2, RESP3)
	n := int64(0)
	ps.mu.RLock()
	for c := range ps.channels[string(channel)] {
		p3 := c.proto.Load() == 3
		i := int(b2i(p3))
		if frames[i] == nil {
			frames[i] = encodePush(p3, func(w *resp.Writer) {
				w.Push(3)
				w.BulkString("message")
				w.Bulk(channel)
				w.Bulk(msg)
			})
		}
		c.push(from, frames[i])
		n++
	}
	for pat, set := range ps.patterns {
		if !globMatch([]byte(pat), channel, false) {
			continue
		}
		var pframes [2][]byte
		for c := range set {
			p3 := c.proto.Load() == 3
			i := int(b2i(p3))
			if pframes[i] == nil {
				pframes[i] = encodePush(p3, func(w *resp.Writer) {
					w.Push(4)
					w.BulkString("pmessage")
					w.BulkString(pat)
					w.Bulk(channel)
					w.Bulk(msg)
				})
			}
			c.push(from, pframes[i])
			n++
		}
	}
	ps.mu.RUnlock()
	return n
}

// encodePush returns the bytes fn writes in RESP3 (p3) or RESP2.
func encodePush(p3 bool, fn func(w *resp.Writer)) []byte {
	var w resp.Writer
	w.SetRESP3(p3)
	fn(&w)
	return w.Bytes()
}

// pubsubChannels implements PUBSUB CHANNELS [pattern].
func pubsubChannels(x *Ctx) {
	if len(x.args) > 3 {
		x.w.Error("ERR unknown subcommand or wrong number of arguments for '" + cstring(x.args[1]) + "'. Try PUBSUB HELP.")
		return
	}
	var pat []byte
	if len(x.args) == 3 {
		pat = x.args[2]
	}
	ps := &x.s.pubsub
	ps.mu.RLock()
	out := make([]string, 0, len(ps.channels))
	for ch := range ps.channels {
		if pat == nil || globMatch(pat, ch, false) {
			out = append(out, ch)
		}
	}
	ps.mu.RUnlock()
	slices.Sort(out)
	x.w.Array(len(out))
	for _, ch := range out {
		x.w.BulkString(ch)
	}
}

// pubsubNumsub implements PUBSUB NUMSUB [channel ...].
func pubsubNumsub(x *Ctx) {
	ps := &x.s.pubsub
	x.w.Map(len(x.args) - 2)
	ps.mu.RLock()
	for _, ch := range x.args[2:] {
		x.w.Bulk(ch)
		x.w.Int(int64(len(ps.channels[string(ch)])))
	}
	ps.mu.RUnlock()
}

// pubsubNumpat implements PUBSUB NUMPAT: distinct patterns subscribed to.
func pubsubNumpat(x *Ctx) {
	ps := &x.s.pubsub
	ps.mu.RLock()
	n := len(ps.patterns)
	ps.mu.RUnlock()
	x.w.Int(int64(n))
}

// Shard channels (SSUBSCRIBE) are not supported: none ever exists.
func pubsubShardChannels(x *Ctx) {
	if len(x.args) > 3 {
		x.w.Error("ERR unknown subcommand or wrong number of arguments for '" + cstring(x.args[1]) + "'. Try PUBSUB HELP.")
		return
	}
	x.w.Array(0)
}

func pubsubShardNumsub(x *Ctx) {
	x.w.Map(len(x.args) - 2)
	for _, ch := range x.args[2:] {
		x.w.Bulk(ch)
		x.w.Int(0)
	}
}
