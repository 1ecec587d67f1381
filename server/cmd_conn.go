package server

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
)

func connectionCommands() []*Command {
	const always = command.NoScript | command.Loading | command.Stale | command.Fast
	return []*Command{
		{Name: "ping", Docs: "[message:string]", Arity: -1, Flags: command.Fast, Group: "connection", Since: "1.0.0",
			Summary: "Returns the server's liveliness response.", Handler: cmdPing},
		{Name: "echo", Docs: "message:string", Arity: 2, Flags: command.Fast, Group: "connection", Since: "1.0.0",
			Summary: "Returns the given string.", Handler: cmdEcho},
		{Name: "quit", Arity: -1, Flags: always | command.NoAuth | command.NoQueue | command.AllowBusy, Group: "connection", Since: "1.0.0",
			Summary: "Closes the connection.", Handler: cmdQuit},
		{Name: "reset", Arity: 1, Flags: always | command.NoAuth | command.NoQueue | command.AllowBusy, Group: "connection", Since: "6.2.0",
			Summary: "Resets the connection.", Handler: cmdReset},
		{Name: "auth", Docs: "[username:string]@6.0.0 password:string", Arity: -2, Flags: always | command.NoAuth | command.AllowBusy, Group: "connection", Since: "1.0.0",
			Summary: "Authenticates the connection.", Handler: cmdAuth},
		{Name: "hello", Docs: "[arguments=(protover:integer [AUTH username:string password:string] [SETNAME clientname:string])]", Arity: -1, Flags: always | command.NoAuth | command.AllowBusy, Group: "connection", Since: "6.0.0",
			Summary: "Handshakes with the Redis server.", Handler: cmdHello},
		{Name: "select", Docs: "index:integer", Arity: 2, Flags: command.Loading | command.Stale | command.Fast, Group: "connection", Since: "1.0.0",
			Summary: "Changes the selected database.", Handler: cmdSelect},
		{Name: "client", Arity: -2, Flags: command.NoScript | command.Loading | command.Stale, Group: "connection", Since: "2.4.0",
			Summary: "A container for client connection commands.", Subs: clientSubcommands()},
	}
}

func cmdPing(x *Ctx) {
	if len(x.args) <= 2 && x.c.subs != nil && x.c.proto.Load() == 2 && x.c.subscribed() {
		// RESP2 pub/sub mode: a reply in the form of a message.
		x.w.Array(2)
		x.w.BulkString("pong")
		if len(x.args) == 2 {
			x.w.Bulk(x.args[1])
		} else {
			x.w.BulkString("")
		}
		return
	}
	switch len(x.args) {
	case 1:
		x.w.Status("PONG")
	case 2:
		x.w.Bulk(x.args[1])
	default:
		x.w.Error(arityError("ping"))
	}
}

func cmdEcho(x *Ctx) { x.w.Bulk(x.args[1]) }

func cmdQuit(x *Ctx) {
	x.w.OK()
	x.c.quit = true
}

func cmdReset(x *Ctx) {
	c := x.c
	c.setMulti(nil)
	c.unwatchAll()
	c.resetForward() // the upstream's transaction, watches, database go with it
	c.unsubscribeAll()
	x.s.track.disable(c)
	c.setDB(0)
	c.setProto(2)
	c.mu.Lock()
	c.name = ""
	c.mu.Unlock()
	c.user.Store(x.s.acl.def)
	c.authed = x.s.defaultAuthed()
	c.resetOps() // leaves MONITOR, CLIENT REPLY ON
	x.w.Status("RESET")
}

// authenticate is AUTH's and HELLO's check: on success the connection
// is authenticated as the user; on failure the attempt is logged (ACL LOG,
// reason auth, object the command's name as sent).
func (s *Server) authenticate(x *Ctx, user, pass []byte) bool {
	u := s.checkCredentials(user, pass)
	if u == nil {
		ctx := "toplevel"
		if x.c.multi != nil {
			ctx = "multi"
		}
		s.acl.log.add(s, x.c, aclDeniedAuth, ctx, string(x.args[0]), string(user))
		return false
	}
	x.c.user.Store(u)
	x.c.authed = true
	return true
}

func cmdAuth(x *Ctx) {
	if len(x.args) > 3 {
		x.w.Error(errSyntax)
		return
	}
	user, pass := []byte("default"), x.args[1]
	if len(x.args) == 3 {
		user, pass = x.args[1], x.args[2]
	} else if !x.s.defaultUserHasPassword() {
		x.w.Error("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
		return
	}
	if !x.s.authenticate(x, user, pass) {
		x.w.Error(errWrongPass)
		return
	}
	x.w.OK()
}

// cmdHello implements HELLO [protover [AUTH user pass] [SETNAME name]].
// As in Redis, the options take effect left to right: each AUTH is
// checked (and, if right, applied) where it stands and each SETNAME is
// validated and applied where it stands, so an error leaves the earlier
// options in effect.
func cmdHello(x *Ctx) {
	c := x.c
	proto := 0
	if len(x.args) >= 2 {
		n, ok := resp.ParseInt(x.args[1])
		if !ok {
			x.w.Error("ERR Protocol version is not an integer or out of range")
			return
		}
		if n < 2 || n > 3 {
			x.w.Error("NOPROTO unsupported protocol version")
			return
		}
		proto = int(n)
	}
	for i := 2; i < len(x.args); i++ {
		more := len(x.args) - 1 - i
		opt := keyword(x.args[i])
		switch {
		case opt == "auth" && more >= 2:
			if !x.s.authenticate(x, x.args[i+1], x.args[i+2]) {
				x.w.Error(errWrongPass)
				return
			}
			i += 2
		case opt == "setname" && more >= 1:
			name := x.args[i+1]
			if !validClientName(name) {
				x.w.Error(errClientName)
				return
			}
			c.mu.Lock()
			c.name = string(name)
			c.mu.Unlock()
			i++
		default:
			x.w.Error("ERR Syntax error in HELLO option '" + cstring(x.args[i]) + "'")
			return
		}
	}
	if !c.authed {
		x.w.Error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if proto != 0 {
		c.setProto(proto)
	}
	x.w.Map(7)
	x.w.BulkString("server")
	x.w.BulkString("redis")
	x.w.BulkString("version")
	x.w.BulkString(Version)
	x.w.BulkString("proto")
	x.w.Int(int64(c.proto.Load()))
	x.w.BulkString("id")
	x.w.Int(c.id)
	x.w.BulkString("mode")
	x.w.BulkString("standalone")
	x.w.BulkString("role")
	x.w.BulkString(x.s.role())
	x.w.BulkString("modules")
	x.w.Array(0)
}

func cmdSelect(x *Ctx) {
	n, ok := resp.ParseInt(x.args[1])
	if !ok {
		x.w.Error(errNotInt)
		return
	}
	if n < math.MinInt32 || n > math.MaxInt32 { // Redis reads an int first
		x.w.Error(errIntRange)
		return
	}
	if n < 0 || n >= int64(x.s.numDBs()) {
		x.w.Error(errDBRange)
		return
	}
	x.c.setDB(int(n))
	x.w.OK()
}

const errClientName = "ERR Client names cannot contain spaces, newlines or special characters."

// validClientName allows printable ASCII without spaces, as Redis does.
func validClientName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

// clientSubcommands are the rows of CLIENT's subcommands.
func clientSubcommands() []*Command {
	const f = command.NoScript | command.Loading | command.Stale
	rows := []*Command{
		{Name: "id", Arity: 2, Flags: f, Since: "5.0.0", Summary: "Returns the unique client ID of the connection.",
			Handler: func(x *Ctx) { x.w.Int(x.c.id) }},
		{Name: "getname", Arity: 2, Flags: f, Since: "2.6.9", Summary: "Returns the name of the connection.", Handler: clientGetName},
		{Name: "setname", Docs: "connection-name:string", Arity: 3, Flags: f | command.AllowBusy, Args: "<name>", Since: "2.6.9", Summary: "Sets the connection name.", Handler: clientSetName},
		{Name: "setinfo", Docs: "attr=(LIB-NAME libname:string|LIB-VER libver:string)", Arity: 4, Flags: f | command.AllowBusy, Args: "<LIB-NAME|LIB-VER> <value>", Since: "7.2.0", Summary: "Sets information specific to the client or connection.", Handler: clientSetInfo},
		{Name: "info", Arity: 2, Flags: f, Since: "6.2.0", Summary: "Returns information about the connection.",
			Handler: func(x *Ctx) { x.w.Verbatim(x.c.info(x.now) + "\n") }},
		{Name: "list", Docs: "[TYPE client-type=(NORMAL|MASTER|REPLICA|PUBSUB)]@5.0.0 [ID client-id:integer...]@6.2.0", Arity: -2, Flags: f | command.Admin, Args: "[TYPE <normal|master|replica|pubsub>] [ID <id> [<id> ...]]", Since: "2.4.0", Summary: "Lists open connections.", Handler: clientList},
		{Name: "no-evict", Docs: "enabled=(ON|OFF)", Arity: 3, Flags: f | command.Admin, Args: "<ON|OFF>", Since: "7.0.0", Summary: "Sets the client eviction mode of the connection.", Handler: clientOnOff},
		{Name: "no-touch", Docs: "enabled=(ON|OFF)", Arity: 3, Flags: f, Args: "<ON|OFF>", Since: "7.2.0", Summary: "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.", Handler: clientOnOff},
		{Name: "help", Arity: 2, Flags: f, Since: "5.0.0", Summary: "Returns helpful text about the different subcommands.", Handler: subcommandHelp},
		{Name: "kill", Docs: "filter=(old-format=addr:string|new-format=([ID client-id:integer] [TYPE client-type=(NORMAL|MASTER|SLAVE|REPLICA|PUBSUB)] [USER username:string] [ADDR addr:string] [LADDR laddr:string] [SKIPME yes/no=(YES|NO)] [MAXAGE maxage:integer]))", Arity: -3, Flags: f | command.Admin, Args: "<ip:port> | [ID <client-id>] [TYPE <NORMAL|MASTER|SLAVE|REPLICA|PUBSUB>] [USER <username>] [ADDR <ip:port>] [LADDR <ip:port>] [SKIPME <YES|NO>] [MAXAGE <maxage>]",
			Since: "2.4.0", Summary: "Terminates open connections.", Handler: clientKill},
		{Name: "unblock", Docs: "client-id:integer [unblock-type=(TIMEOUT|ERROR)]", Arity: -3, Flags: f | command.Admin, Args: "<client-id> [TIMEOUT|ERROR]", Since: "5.0.0", Summary: "Unblocks a client blocked by a blocking command from a different connection.", Handler: clientUnblock},
	}
	rows = append(rows, opsClientSubcommands(f)...) // PAUSE, UNPAUSE, REPLY (pause.go, clientreply.go)
	return append(rows, trackingSubcommands(f)...)
}

func clientGetName(x *Ctx) {
	c := x.c
	c.mu.Lock()
	name := c.name
	c.mu.Unlock()
	if name == "" {
		x.w.Null()
	} else {
		x.w.BulkString(name)
	}
}

func clientSetName(x *Ctx) {
	if !validClientName(x.args[2]) {
		x.w.Error(errClientName)
		return
	}
	x.c.mu.Lock()
	x.c.name = string(x.args[2])
	x.c.mu.Unlock()
	x.w.OK()
}

// clientOnOff accepts CLIENT NO-EVICT|NO-TOUCH ON|OFF (Turnstile neither
// evicts nor tracks access).
func clientOnOff(x *Ctx) {
	v := keyword(x.args[2])
	if v != "on" && v != "off" {
		x.w.Error(errSyntax)
		return
	}
	x.w.OK()
}

func clientSetInfo(x *Ctx) {
	attr := strings.ToLower(string(x.args[2]))
	val := x.args[3]
	if attr != "lib-name" && attr != "lib-ver" {
		x.w.Error("ERR Unrecognized option '" + cstring(x.args[2]) + "'")
		return
	}
	for _, ch := range val {
		if ch < '!' || ch > '~' {
			x.w.Error("ERR " + attr + " cannot contain spaces, newlines or special characters.")
			return
		}
	}
	x.c.mu.Lock()
	if attr == "lib-name" {
		x.c.libName = string(val)
	} else {
		x.c.libVer = string(val)
	}
	x.c.mu.Unlock()
	x.w.OK()
}

// clientList implements CLIENT LIST [TYPE normal] [ID id ...].
func clientList(x *Ctx) {
	var ids map[int64]bool
	typ := ""
	args := x.args[2:]
	for len(args) > 0 {
		opt := keyword(args[0])
		switch {
		case opt == "type" && len(args) >= 2:
			t := keyword(args[1])
			if t != "normal" && t != "master" && t != "replica" && t != "slave" && t != "pubsub" {
				x.w.Error("ERR Unknown client type '" + cstring(args[1]) + "'")
				return
			}
			if t != "normal" && t != "pubsub" {
				x.w.Verbatim("")
				return
			}
			typ = t
			args = args[2:]
		case opt == "id" && len(args) >= 2:
			ids = make(map[int64]bool)
			for _, a := range args[1:] {
				n, ok := resp.ParseInt(a)
				if !ok || n <= 0 {
					x.w.Error("ERR Invalid client ID")
					return
				}
				ids[n] = true
			}
			args = nil
		default:
			x.w.Error(errSyntax)
			return
		}
	}
	var b strings.Builder
	for _, cl := range x.s.clientsSnapshot() {
		if typ != "" && (cl.nsub.Load()+cl.npsub.Load() > 0) != (typ == "pubsub") {
			continue
		}
		if ids == nil || ids[cl.id] {
			b.WriteString(cl.info(x.now))
			b.WriteByte('\n')
		}
	}
	x.w.Verbatim(b.String())
}

// subcommandHelp is the HELP subcommand of every container: its lines
// come from the container's rows (name, Args, Summary), so a subcommand is
// listed in one place only.
func subcommandHelp(x *Ctx) {
	parent := x.cmd.Parent()
	name := strings.ToUpper(parent.Name)
	lines := []string{name + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"}
	if parent.Handler != nil {
		lines = append(lines, "(no subcommand)", "    "+parent.Summary)
	}
	for _, sub := range parent.Subs {
		usage := strings.ToUpper(sub.Name)
		if sub.Args != "" {
			usage += " " + sub.Args
		}
		lines = append(lines, usage, "    "+sub.Summary)
	}
	x.w.Array(len(lines))
	for _, l := range lines {
		x.w.Status(l)
	}
}

// clientsSnapshot returns the connected clients in id order.
func (s *Server) clientsSnapshot() []*client {
	s.mu.Lock()
	out := make([]*client, 0, len(s.clients))
	for _, c := range s.clients {
		out = append(out, c)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b *client) int { return cmp.Compare(a.id, b.id) })
	return out
}

// clientUnblock is CLIENT UNBLOCK client-id [TIMEOUT|ERROR]: the blocked
// client answers its command's timeout reply, or an UNBLOCKED error
// (blocking.go). 1 if the client was blocked, else 0.
func clientUnblock(x *Ctx) {
	if len(x.args) > 4 {
		x.w.Error("ERR unknown subcommand or wrong number of arguments for '" + cstring(x.args[1]) + "'. Try CLIENT HELP.")
		return
	}
	how := int32(unblockTimeout)
	if len(x.args) == 4 {
		switch {
		case isKeyword(x.args[3], "timeout"):
		case isKeyword(x.args[3], "error"):
			how = unblockError
		default:
			x.w.Error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
			return
		}
	}
	id, ok := resp.ParseInt(x.args[2])
	if !ok {
		x.w.Error(errNotInt)
		return
	}
	if tc := x.s.clientByID(id); tc != nil && x.s.blocked.unblock(tc, how) {
		x.w.Int(1)
		return
	}
	x.w.Int(0)
}

// clientKill is CLIENT KILL ip:port (OK, or an error when no client has
// that address; the caller may kill itself) and CLIENT KILL with filters
// (ID, TYPE, USER, ADDR, LADDR, SKIPME; every one must match; the caller
// is skipped unless SKIPME no), which replies how many it killed. Another
// connection is ended with kill (its loop closes it, a blocked one leaves
// the blocked-client registry); the caller closes after its reply.
func clientKill(x *Ctx) {
	args := x.args[2:]
	var (
		id          int64
		typ         string
		addr, laddr string
		hasAddr     bool
		hasLaddr    bool
		user        string
		hasUser     bool
		skipme      = true
		maxAge      int64 // seconds; 0: any age
	)
	oldForm := len(args) == 1
	switch {
	case oldForm:
		addr, hasAddr, skipme = string(args[0]), true, false
	case len(args)%2 != 0:
		x.w.Error(errSyntax)
		return
	}
	for i := 0; !oldForm && i < len(args); i += 2 {
		val := args[i+1]
		switch opt := args[i]; {
		case isKeyword(opt, "id"):
			n, ok := resp.ParseInt(val)
			if !ok || n < 1 {
				x.w.Error("ERR client-id should be greater than 0")
				return
			}
			id = n
		case isKeyword(opt, "type"):
			typ = strings.ToLower(string(val))
			switch typ {
			case "normal", "pubsub", "master", "replica", "slave":
			default:
				x.w.Error("ERR Unknown client type '" + string(val) + "'")
				return
			}
		case isKeyword(opt, "user"):
			if x.s.aclUserByName(val) == nil {
				x.w.Error("ERR No such user '" + string(val) + "'")
				return
			}
			user, hasUser = string(val), true
		case isKeyword(opt, "addr"):
			addr, hasAddr = string(val), true
		case isKeyword(opt, "laddr"):
			laddr, hasLaddr = string(val), true
		case isKeyword(opt, "maxage"): // Redis 7.4: connections older than this many seconds
			n, ok := resp.ParseInt(val)
			if !ok || n < 0 {
				x.w.Error(errSyntax)
				return
			}
			maxAge = n
		case isKeyword(opt, "skipme"):
			switch {
			case isKeyword(val, "yes"):
				skipme = true
			case isKeyword(val, "no"):
				skipme = false
			default:
				x.w.Error(errSyntax)
				return
			}
		default:
			x.w.Error(errSyntax)
			return
		}
	}
	killed := int64(0)
	self := false
	for _, cl := range x.s.clientsSnapshot() {
		switch {
		case cl.killed.Load(): // killed already and ending: gone, to Redis (freeClient is synchronous there)
			continue
		case id != 0 && cl.id != id,
			typ == "master" || typ == "replica" || typ == "slave", // none here
			typ != "" && (cl.nsub.Load()+cl.npsub.Load() > 0) != (typ == "pubsub"),
			hasAddr && cl.addr != addr,
			hasLaddr && cl.laddr != laddr,
			hasUser && cl.userName() != user,
			maxAge > 0 && (x.now-cl.created)/1e9 <= maxAge,
			cl == x.c && skipme:
			continue
		}
		killed++
		if cl == x.c {
			self = true
		} else {
			cl.kill()
		}
	}
	switch {
	case oldForm && killed == 0:
		x.w.Error("ERR No such client")
	case oldForm:
		x.w.OK()
	default:
		x.w.Int(killed)
	}
	if self {
		x.c.quit = true // after this reply, as Redis
	}
}
