package server

import (
	"bytes"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/persistence"
	"github.com/turnstile/turnstile/resp"
)

// Client-side caching: CLIENT TRACKING, CLIENT CACHING, CLIENT GETREDIR,
// CLIENT TRACKINGINFO, and the invalidation messages.
//
// Default mode: after a read-only command (command.Readonly) by a tracking
// client, run remembers the command's keys (its key positions in the
// table) with the client's id, while the execution still holds the keys'
// shards. OPTIN remembers only after CLIENT CACHING YES, OPTOUT skips after
// CLIENT CACHING NO; the flag lasts one command, or one MULTI ... EXEC.
// BCAST mode remembers nothing: the client hears of every change to a key
// under one of its prefixes.
//
// Invalidation is driven from the one place every change passes through:
// Ctx.record notes the changed key on the execution (only while some client
// tracks: one atomic load otherwise), and end, still holding the shards,
// hands the notes to tracker.invalidate. Since both the remembering and the
// invalidation happen under the key's shard lock, a client that read a key
// before a write is always told of the write. A remembered key is forgotten
// once its invalidation is sent, as in Redis; key names are not scoped by
// database (as in Redis). FLUSHDB and FLUSHALL send a null invalidation to
// every tracking client and forget every remembered key.
//
// Delivery goes through the target connection's outbound queue (outq.go):
// as a RESP3 push ">2 invalidate [keys]", or, with REDIRECT to a RESP2
// connection in pub/sub mode, as a message on __redis__:invalidate. The
// tracking client's own invalidations are written after its reply.
//
// A key removed because its expiry passed (on access, or by the active
// expiry cycle) is invalidated too, through the keyspace's expire hook
// (keyExpired), which runs under the key's shard lock like any change.

// maxTrackedKeys bounds the table of remembered keys (Redis's default
// tracking-table-max-keys): past it, an arbitrary key is invalidated and
// forgotten for each new one.
const maxTrackedKeys = 1_000_000

// tracker is the server's tracking state.
type tracker struct {
	n       atomic.Int32 // clients with tracking on: record's cheap test
	mu      sync.Mutex
	keys    map[string]map[int64]struct{} // key -> ids of default-mode readers
	clients map[int64]*client             // clients with tracking on
	bcast   int                           // how many of them are in BCAST mode
}

// trackState is one client's tracking settings, guarded by tracker.mu; its
// connection is the only writer of everything but broken.
type trackState struct {
	on, bcast, optin, optout, noloop bool
	broken                           bool    // the REDIRECT target is gone
	redirect                         int64   // 0: none
	redirTo                          *client // the REDIRECT target
	prefixes                         []string
}

// changed is a change noted for invalidation: a key, or a flush.
type changed struct {
	key   []byte
	db    int // the key's database (tracking ignores it, as Redis does)
	flush bool
}

// noteChange is record's hook, called only while some client tracks or
// is blocked (record tests Server.hooks, one atomic load, first): end
// hands the notes to tracker.invalidate and blockRegistry.signal.
func (x *Ctx) noteChange(op persistence.Op, db int, key []byte) {
	switch op {
	case persistence.OpFlushDB, persistence.OpFlushAll:
		// FLUSHALL flushes database by database: one null invalidation.
		if n := len(x.ex.changed); n == 0 || !x.ex.changed[n-1].flush {
			x.ex.changed = append(x.ex.changed, changed{flush: true})
		}
	default:
		x.ex.changed = append(x.ex.changed, changed{key: key, db: db})
	}
}

// keyExpired is the keyspace's expire hook: a key removed by expiry is
// invalidated like a changed one. key is valid only during the call.
func (s *Server) keyExpired(db int, key []byte) {
	if s.leading.Load() {
		// The leader replicates the removal: followers keep expired keys
		// until told (replication.go).
		s.repl.Append([]persistence.Effect{{Op: persistence.OpDel, DB: db, Key: key}})
	}
	if s.track.n.Load() != 0 {
		s.track.invalidate(nil, []changed{{key: bytes.Clone(key)}})
	}
}

// info adds the CLIENT LIST flags of c's tracking and returns redir=.
func (t *tracker) info(c *client, flags *string) int64 {
	if t.n.Load() == 0 {
		return -1
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !c.trk.on {
		return -1
	}
	*flags += "t"
	if c.trk.broken {
		*flags += "R"
	}
	if c.trk.bcast {
		*flags += "B"
	}
	return c.trk.redirect
}

// disable turns c's tracking off (CLIENT TRACKING OFF, RESET, teardown).
// The keys it read stay in the table until they change, as in Redis.
func (t *tracker) disable(c *client) {
	c.trackOn, c.caching = false, 0
	if !c.trk.on {
		return
	}
	t.mu.Lock()
	if c.trk.bcast {
		t.bcast--
	}
	c.trk = trackState{}
	delete(t.clients, c.id)
	t.n.Add(-1)
	c.s.hooks.Add(-1)
	t.mu.Unlock()
}

// remember records the keys of a read-only command run by a tracking
// client. The execution holds the keys' shards.
func (t *tracker) remember(x *Ctx) {
	c := x.c
	switch {
	case c.trk.bcast,
		c.trk.optin && c.caching != 'y',
		c.trk.optout && c.caching == 'n':
		return
	}
	t.mu.Lock()
	if t.keys == nil {
		t.keys = map[string]map[int64]struct{}{}
	}
	x.s.eachKey(x.cmd, x.args, c.db, func(_ int, key []byte) {
		ids := t.keys[string(key)]
		if ids == nil {
			for len(t.keys) >= maxTrackedKeys {
				t.evictOne(c)
			}
			ids = map[int64]struct{}{}
			t.keys[string(key)] = ids
		}
		ids[c.id] = struct{}{}
	})
	t.mu.Unlock()
}

// evictOne invalidates and forgets an arbitrary remembered key.
func (t *tracker) evictOne(from *client) {
	for k, ids := range t.keys {
		delete(t.keys, k)
		for id := range ids {
			if tc := t.clients[id]; tc != nil && !tc.trk.bcast {
				t.send(tc, from, [][]byte{[]byte(k)}, false)
			}
		}
		return
	}
}

// invalidate sends the invalidations for an execution's changes. from is
// the connection that ran it; the execution still holds its shards.
func (t *tracker) invalidate(from *client, changes []changed) {
	type batchKey struct {
		c      *client
		prefix string
	}
	var batches map[batchKey][][]byte
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, ch := range changes {
		if ch.flush {
			for _, tc := range t.clients {
				t.send(tc, from, nil, true)
			}
			clear(t.keys)
			continue
		}
		if ids, ok := t.keys[string(ch.key)]; ok {
			delete(t.keys, string(ch.key))
			for id := range ids {
				tc := t.clients[id]
				if tc == nil || tc.trk.bcast || (tc.trk.noloop && tc == from) {
					continue
				}
				t.send(tc, from, [][]byte{ch.key}, false)
			}
		}
		if t.bcast == 0 {
			continue
		}
		for _, tc := range t.clients {
			if !tc.trk.bcast || (tc.trk.noloop && tc == from) {
				continue
			}
			for _, p := range tc.trk.prefixes {
				if bytes.HasPrefix(ch.key, []byte(p)) {
					if batches == nil {
						batches = map[batchKey][][]byte{}
					}
					bk := batchKey{tc, p}
					batches[bk] = append(batches[bk], ch.key)
				}
			}
		}
	}
	if batches == nil {
		return
	}
	// As Redis: one message per client and prefix, the keys sorted and
	// without repeats; a client's prefixes in order.
	order := make([]batchKey, 0, len(batches))
	for bk := range batches {
		order = append(order, bk)
	}
	slices.SortFunc(order, func(a, b batchKey) int {
		if a.c.id != b.c.id {
			return int(a.c.id - b.c.id)
		}
		return strings.Compare(a.prefix, b.prefix)
	})
	for _, bk := range order {
		keys := batches[bk]
		slices.SortFunc(keys, bytes.Compare)
		keys = slices.CompactFunc(keys, bytes.Equal)
		t.send(bk.c, from, keys, false)
	}
}

// send delivers one invalidation (keys, or null when null) for tracking
// client tc: to tc itself in RESP3, or to its REDIRECT target (RESP3, or
// RESP2 in pub/sub mode: a message on __redis__:invalidate). Requires t.mu.
func (t *tracker) send(tc, from *client, keys [][]byte, null bool) {
	target, redirected := tc, false
	if tc.trk.redirect != 0 {
		rt := tc.trk.redirTo
		if rt == nil || rt.gone.Load() {
			tc.trk.broken = true
			if tc.proto.Load() == 3 {
				tc.push(from, encodePush(true, func(w *resp.Writer) {
					w.Push(2)
					w.BulkString("tracking-redir-broken")
					w.Int(tc.trk.redirect)
				}))
			}
			return
		}
		target, redirected = rt, true
	}
	p3 := target.proto.Load() == 3
	if !p3 && (!redirected || target.nsub.Load()+target.npsub.Load() == 0) {
		return // RESP2 without a subscribed REDIRECT target: nowhere to send
	}
	target.push(from, encodePush(p3, func(w *resp.Writer) {
		if p3 {
			w.Push(2)
			w.BulkString("invalidate")
		} else {
			w.Push(3)
			w.BulkString("message")
			w.BulkString("__redis__:invalidate")
		}
		if null {
			w.Null()
			return
		}
		w.Array(len(keys))
		for _, k := range keys {
			w.Bulk(k)
		}
	}))
}

// Error texts of CLIENT TRACKING and CLIENT CACHING (Redis's).
const (
	errTrackPrefixNoBcast = "ERR PREFIX option requires BCAST mode to be enabled"
	errTrackBcastSwitch   = "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."
	errTrackOptBcast      = "ERR OPTIN and OPTOUT are not compatible with BCAST"
	errTrackOptBoth       = "ERR You can't specify both OPTIN mode and OPTOUT mode"
	errTrackOptSwitch     = "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode."
	errTrackRedirTwice    = "ERR A client can only redirect to a single other client"
	errTrackRedirMissing  = "ERR The client ID you want redirect to does not exist"
	errCachingMode        = "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"
	errCachingYes         = "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode."
	errCachingNo          = "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode."
)

// trackingSubcommands are CLIENT's rows for client-side caching.
func trackingSubcommands(f command.Flag) []*Command {
	return []*Command{
		{Name: "tracking", Docs: "status=(ON|OFF) [REDIRECT client-id:integer] [PREFIX prefix:string...] [BCAST] [OPTIN] [OPTOUT] [NOLOOP]", Arity: -3, Flags: f, Args: "<ON|OFF> [REDIRECT <id>] [PREFIX <prefix> [PREFIX <prefix> ...]] [BCAST] [OPTIN] [OPTOUT] [NOLOOP]",
			Since: "6.0.0", Summary: "Controls server-assisted client-side caching for the connection.", Handler: clientTracking},
		{Name: "caching", Docs: "mode=(YES|NO)", Arity: 3, Flags: f, Args: "<YES|NO>", Since: "6.0.0",
			Summary: "Instructs the server whether to track the keys in the next request.", Handler: clientCaching},
		{Name: "getredir", Arity: 2, Flags: f, Since: "6.0.0",
			Summary: "Returns the client ID to which the connection's tracking notifications are redirected.", Handler: clientGetRedir},
		{Name: "trackinginfo", Arity: 2, Flags: f, Since: "6.2.0",
			Summary: "Returns information about server-assisted client-side caching for the connection.", Handler: clientTrackingInfo},
	}
}

// clientTracking implements CLIENT TRACKING ON|OFF [options].
func clientTracking(x *Ctx) {
	c, t := x.c, &x.s.track
	var redir int64
	var redirTo *client
	var bcast, optin, optout, noloop bool
	var prefixes []string
	for j := 3; j < len(x.args); j++ {
		more := len(x.args) - 1 - j
		switch opt := keyword(x.args[j]); {
		case opt == "redirect" && more > 0:
			j++
			if redir != 0 {
				x.w.Error(errTrackRedirTwice)
				return
			}
			n, ok := resp.ParseInt(x.args[j])
			if !ok {
				x.w.Error(errNotInt)
				return
			}
			redirTo = x.s.clientByID(n)
			if redirTo == nil {
				x.w.Error(errTrackRedirMissing)
				return
			}
			redir = n
		case opt == "bcast":
			bcast = true
		case opt == "optin":
			optin = true
		case opt == "optout":
			optout = true
		case opt == "noloop":
			noloop = true
		case opt == "prefix" && more > 0:
			j++
			prefixes = append(prefixes, string(x.args[j]))
		default:
			x.w.Error(errSyntax)
			return
		}
	}
	switch keyword(x.args[2]) {
	case "off":
		t.disable(c)
		x.w.OK()
		return
	case "on":
	default:
		x.w.Error(errSyntax)
		return
	}
	cur := &c.trk
	switch {
	case !bcast && len(prefixes) > 0:
		x.w.Error(errTrackPrefixNoBcast)
		return
	case cur.on && cur.bcast != bcast:
		x.w.Error(errTrackBcastSwitch)
		return
	case bcast && (optin || optout):
		x.w.Error(errTrackOptBcast)
		return
	case optin && optout:
		x.w.Error(errTrackOptBoth)
		return
	case optin && cur.optout || optout && cur.optin:
		x.w.Error(errTrackOptSwitch)
		return
	}
	if bcast {
		for i, p := range prefixes {
			for _, q := range cur.prefixes {
				if strings.HasPrefix(p, q) || strings.HasPrefix(q, p) {
					x.w.Error("ERR Prefix '" + p + "' overlaps with an existing prefix '" + q + "'. Prefixes for a single client must not overlap.")
					return
				}
			}
			for k, q := range prefixes {
				if k != i && (strings.HasPrefix(p, q) || strings.HasPrefix(q, p)) {
					x.w.Error("ERR Prefix '" + p + "' overlaps with another provided prefix '" + q + "'. Prefixes for a single client must not overlap.")
					return
				}
			}
		}
		if len(prefixes) == 0 {
			prefixes = []string{""}
		}
	}
	t.mu.Lock()
	if !cur.on {
		if t.clients == nil {
			t.clients = map[int64]*client{}
		}
		t.clients[c.id] = c
		if bcast {
			t.bcast++
		}
		t.n.Add(1)
		x.s.hooks.Add(1)
	}
	old := cur.prefixes
	*cur = trackState{on: true, bcast: bcast, optin: optin, optout: optout, noloop: noloop,
		redirect: redir, redirTo: redirTo, prefixes: old}
	for _, p := range prefixes {
		if !slices.Contains(cur.prefixes, p) {
			cur.prefixes = append(cur.prefixes, p)
		}
	}
	slices.Sort(cur.prefixes)
	t.mu.Unlock()
	c.trackOn = true
	x.w.OK()
}

// clientCaching implements CLIENT CACHING YES|NO.
func clientCaching(x *Ctx) {
	c := x.c
	if !c.trackOn {
		x.w.Error(errCachingMode)
		return
	}
	switch keyword(x.args[2]) {
	case "yes":
		if !c.trk.optin {
			x.w.Error(errCachingYes)
			return
		}
		c.caching = 'y'
	case "no":
		if !c.trk.optout {
			x.w.Error(errCachingNo)
			return
		}
		c.caching = 'n'
	default:
		x.w.Error(errSyntax)
		return
	}
	x.w.OK()
}

func clientGetRedir(x *Ctx) {
	if !x.c.trackOn {
		x.w.Int(-1)
		return
	}
	x.w.Int(x.c.trk.redirect)
}

// clientTrackingInfo implements CLIENT TRACKINGINFO.
func clientTrackingInfo(x *Ctx) {
	c, t := x.c, &x.s.track
	t.mu.Lock()
	st := c.trk
	st.prefixes = slices.Clone(st.prefixes)
	t.mu.Unlock()
	var flags []string
	redirect := int64(-1)
	if !st.on {
		flags = append(flags, "off")
	} else {
		redirect = st.redirect
		flags = append(flags, "on")
		if st.bcast {
			flags = append(flags, "bcast")
		}
		if st.optin {
			flags = append(flags, "optin")
			if c.caching == 'y' {
				flags = append(flags, "caching-yes")
			}
		}
		if st.optout {
			flags = append(flags, "optout")
			if c.caching == 'n' {
				flags = append(flags, "caching-no")
			}
		}
		if st.noloop {
			flags = append(flags, "noloop")
		}
		if st.broken {
			flags = append(flags, "broken_redirect")
		}
	}
	x.w.Map(3)
	x.w.BulkString("flags")
	x.w.Set(len(flags))
	for _, f := range flags {
		x.w.BulkString(f)
	}
	x.w.BulkString("redirect")
	x.w.Int(redirect)
	x.w.BulkString("prefixes")
	x.w.Array(len(st.prefixes))
	for _, p := range st.prefixes {
		x.w.BulkString(p)
	}
}

// clientByID returns the connected client with id n, or nil.
func (s *Server) clientByID(n int64) *client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clients[n]
}

// endCaching ends the effect of CLIENT CACHING after a command: it lasts
// for the next command, or for a whole MULTI ... EXEC, and CLIENT's own
// subcommands leave it (as in Redis).
func (c *client) endCaching(cmd *Command) {
	if c.multi != nil || cmd != nil && (cmd.Name == "client" || cmd.Parent() != nil && cmd.Parent().Name == "client") {
		return
	}
	c.caching = 0
}
