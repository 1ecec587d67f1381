package server

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/turnstile/turnstile/command"
)

// aclCommands is the ACL container's row.
func aclCommands() []*Command {
	const f = command.NoScript | command.Loading | command.Stale
	const admin = f | command.Admin
	return []*Command{
		{Name: "acl", Arity: -2, Group: "server", Since: "6.0.0",
			Summary: "A container for Access List Control commands.", Subs: []*Command{
				{Name: "cat", Docs: "[category:string]", Arity: -2, Flags: f, Args: "[<category>]", Since: "6.0.0", Summary: "Lists the ACL categories, or the commands inside a category.", Handler: aclCat},
				{Name: "deluser", Docs: "username:string...", Arity: -3, Flags: admin, Args: "<username> [<username> ...]", Since: "6.0.0", Summary: "Deletes ACL users, and terminates their connections.", Handler: aclDelUser},
				{Name: "dryrun", Docs: "username:string command:string [arg:string...]", Arity: -4, Flags: admin, Args: "<username> <command> [<arg> ...]", Since: "7.0.0", Summary: "Simulates the execution of a command by a user, without executing the command.", Handler: aclDryRun},
				{Name: "genpass", Docs: "[bits:integer]", Arity: -2, Flags: f, Args: "[<bits>]", Since: "6.0.0", Summary: "Generates a pseudorandom, secure password that can be used to identify ACL users.", Handler: aclGenPass},
				{Name: "getuser", Docs: "username:string", Arity: 3, Flags: admin, Args: "<username>", Since: "6.0.0", Summary: "Lists the ACL rules of a user.", Handler: aclGetUser},
				{Name: "help", Arity: 2, Flags: command.Loading | command.Stale, Since: "6.0.0", Summary: "Returns helpful text about the different subcommands.", Handler: subcommandHelp},
				{Name: "list", Arity: 2, Flags: admin, Since: "6.0.0", Summary: "Dumps the effective rules in ACL file format.", Handler: aclList},
				{Name: "load", Arity: 2, Flags: admin, Since: "6.0.0", Summary: "Reloads the rules from the configured ACL file.", Handler: aclLoad},
				{Name: "log", Docs: "[operation=(count:integer|RESET)]", Arity: -2, Flags: admin, Args: "[<count>|RESET]", Since: "6.0.0", Summary: "Lists recent security events generated due to ACL rules.", Handler: aclLogCmd},
				{Name: "save", Arity: 2, Flags: admin, Since: "6.0.0", Summary: "Saves the effective ACL rules in the configured ACL file.", Handler: aclSave},
				{Name: "setuser", Docs: "username:string [rule:string...]", Arity: -3, Flags: admin, Args: "<username> [<rule> ...]", Since: "6.0.0", Summary: "Creates and modifies an ACL user and its rules.", Handler: aclSetUser},
				{Name: "users", Arity: 2, Flags: admin, Since: "6.0.0", Summary: "Lists all ACL users.", Handler: aclUsers},
				{Name: "whoami", Arity: 2, Flags: f, Since: "6.0.0", Summary: "Returns the authenticated username of the current connection.", Handler: aclWhoAmI},
			}},
	}
}

// userName is the name of the user c is authenticated as (or would be:
// "default" before AUTH).
func (c *client) userName() string { return c.userOrDefault().name }

func (c *client) userOrDefault() *aclUser {
	if u := c.user.Load(); u != nil {
		return u
	}
	return c.s.acl.def
}

func aclCat(x *Ctx) {
	if len(x.args) > 3 {
		x.w.Error(errSubcommandSyntax(x))
		return
	}
	if len(x.args) == 2 {
		names := command.CategoryNames()
		x.w.Array(len(names))
		for _, n := range names {
			x.w.BulkString(n)
		}
		return
	}
	cat := command.CategoryByName(string(x.args[2]))
	if cat == 0 {
		x.w.Error("ERR Unknown category '" + truncate(x.args[2], 128) + "'")
		return
	}
	var names []string
	for _, c := range x.s.table.All() {
		if c.Categories()&cat != 0 {
			names = append(names, c.FullName())
		}
	}
	x.w.Array(len(names))
	for _, n := range names {
		x.w.BulkString(n)
	}
}

// errSubcommandSyntax is Redis's reply for a known subcommand with
// arguments it does not take.
func errSubcommandSyntax(x *Ctx) string {
	return "ERR unknown subcommand or wrong number of arguments for '" + truncate(x.args[1], 128) + "'. Try " + strings.ToUpper(x.cmd.Parent().Name) + " HELP."
}

func aclSetUser(x *Ctx) {
	name := x.args[2]
	if hasSpace(name) {
		x.w.Error("ERR Usernames can't contain spaces or null characters")
		return
	}
	s := x.s
	a := &s.acl
	a.mu.Lock()
	u := a.users[string(name)]
	var r *aclRules
	if u != nil {
		r = u.get().clone()
	} else {
		r = s.newRules()
	}
	for _, op := range x.args[3:] {
		if err := s.applyRule(r, op); err != nil {
			a.mu.Unlock()
			x.w.Error("ERR Error in ACL SETUSER modifier '" + string(op) + "': " + err.Error())
			return
		}
	}
	if u == nil {
		u = &aclUser{name: string(name)}
		a.users[u.name] = u
	}
	old := u.get()
	u.rules.Store(r.seal())
	a.mu.Unlock()
	if old != nil && !r.allChannels && (old.allChannels || !channelsSuperset(r.channels, old.channels)) {
		// As Redis: the user's subscribers to a channel or pattern it
		// may no longer use are disconnected.
		losing := s.subscribersLosing(u, r)
		s.killUserClients(x.c, u, func(c *client) bool { return losing[c] })
	}
	x.w.OK()
}

func channelsSuperset(now, before []string) bool {
	for _, b := range before {
		if !containsString(now, b) {
			return false
		}
	}
	return true
}

// subscribersLosing returns the clients authenticated as u subscribed to
// a channel, or a pattern, that rules r do not allow.
func (s *Server) subscribersLosing(u *aclUser, r *aclRules) map[*client]bool {
	out := map[*client]bool{}
	ps := &s.pubsub
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	for ch, subs := range ps.channels {
		for c := range subs {
			if c.userOrDefault() == u && !channelAllowed(r, []byte(ch), false) {
				out[c] = true
			}
		}
	}
	for pat, subs := range ps.patterns {
		for c := range subs {
			if c.userOrDefault() == u && !channelAllowed(r, []byte(pat), true) {
				out[c] = true
			}
		}
	}
	return out
}

// killUserClients disconnects the clients authenticated as u (those keep
// selects when set): another client at once, the current one after its
// reply, as Redis does.
func (s *Server) killUserClients(self *client, u *aclUser, keep func(*client) bool) {
	for _, c := range s.clientsSnapshot() {
		if c.userOrDefault() != u || keep != nil && !keep(c) {
			continue
		}
		if c == self {
			c.quit = true
		} else {
			c.kill()
		}
	}
}

func aclDelUser(x *Ctx) {
	for _, n := range x.args[2:] {
		if string(n) == "default" {
			x.w.Error("ERR The 'default' user cannot be removed")
			return
		}
	}
	s := x.s
	var gone []*aclUser
	s.acl.mu.Lock()
	for _, n := range x.args[2:] {
		if u := s.acl.users[string(n)]; u != nil {
			delete(s.acl.users, string(n))
			gone = append(gone, u)
		}
	}
	s.acl.mu.Unlock()
	for _, u := range gone {
		s.killUserClients(x.c, u, nil)
	}
	x.w.Int(int64(len(gone)))
}

func aclGetUser(x *Ctx) {
	u := x.s.aclUserByName(x.args[2])
	if u == nil {
		x.w.Null()
		return
	}
	r := u.get()
	x.w.Map(6)
	x.w.BulkString("flags")
	flags := r.flagNames()
	x.w.Set(len(flags))
	for _, f := range flags {
		x.w.BulkString(f)
	}
	x.w.BulkString("passwords")
	x.w.Array(len(r.passwords))
	for _, p := range r.passwords {
		x.w.BulkString(p)
	}
	x.w.BulkString("commands")
	x.w.BulkString(x.s.describeCommands(r))
	x.w.BulkString("keys")
	x.w.BulkString(r.keysString())
	x.w.BulkString("channels")
	x.w.BulkString(r.channelsString())
	x.w.BulkString("selectors")
	x.w.Array(0)
}

func aclList(x *Ctx) {
	s := x.s
	s.acl.mu.Lock()
	users := s.acl.sortedUsers()
	s.acl.mu.Unlock()
	x.w.Array(len(users))
	for _, u := range users {
		x.w.BulkString("user " + u.name + " " + s.describeUser(u.get()))
	}
}

func aclUsers(x *Ctx) {
	s := x.s
	s.acl.mu.Lock()
	users := s.acl.sortedUsers()
	s.acl.mu.Unlock()
	x.w.Array(len(users))
	for _, u := range users {
		x.w.BulkString(u.name)
	}
}

func aclWhoAmI(x *Ctx) { x.w.BulkString(x.c.userName()) }

func aclGenPass(x *Ctx) {
	bits := int64(256)
	if len(x.args) > 3 {
		x.w.Error(errSubcommandSyntax(x))
		return
	}
	if len(x.args) == 3 {
		n, err := strconv.ParseInt(string(x.args[2]), 10, 64)
		if err != nil {
			x.w.Error(errNotInt)
			return
		}
		bits = n
	}
	if bits <= 0 || bits > 4096 {
		x.w.Error("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096")
		return
	}
	chars := (bits + 3) / 4
	buf := make([]byte, (chars+1)/2)
	rand.Read(buf)
	x.w.BulkString(hex.EncodeToString(buf)[:chars])
}

func aclDryRun(x *Ctx) {
	s := x.s
	u := s.aclUserByName(x.args[2])
	if u == nil {
		x.w.Error("ERR User '" + string(x.args[2]) + "' not found")
		return
	}
	args := x.args[3:]
	cmd := s.table.Lookup(args[0])
	if cmd != nil && len(cmd.Subs) > 0 && len(args) >= 2 {
		cmd = cmd.Sub(args[1])
	}
	if cmd == nil {
		x.w.Error("ERR Command '" + string(args[0]) + "' not found")
		return
	}
	if !cmd.CheckArity(len(args)) {
		x.w.Error(arityError(cmd.FullName()))
		return
	}
	r := u.get()
	if r.open {
		x.w.OK()
		return
	}
	switch reason, refused := aclCheck(r, cmd, args); reason {
	case aclOK:
		x.w.OK()
	case aclDeniedCmd:
		x.w.BulkString("This user has no permissions to run the '" + cmd.FullName() + "' command")
	case aclDeniedKey:
		x.w.BulkString("This user has no permissions to access the '" + string(refused) + "' key")
	default:
		x.w.BulkString("This user has no permissions to access the '" + string(refused) + "' channel")
	}
}

func aclLoad(x *Ctx) {
	file := x.s.cfg.ACLFile
	if file == "" {
		x.w.Error(errNoACLFile)
		return
	}
	if err := x.s.loadACLFile(file, x.c); err != "" {
		x.w.Error("ERR " + err)
		return
	}
	x.w.OK()
}

func aclSave(x *Ctx) {
	file := x.s.cfg.ACLFile
	if file == "" {
		x.w.Error(errNoACLFile)
		return
	}
	if err := x.s.saveACLFile(file); err != nil {
		x.s.log.Warn("ACL SAVE failed", "file", file, "err", err)
		x.w.Error("ERR There was an error trying to save the ACLs. Please check the server logs for more information")
		return
	}
	x.w.OK()
}

const errNoACLFile = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."
