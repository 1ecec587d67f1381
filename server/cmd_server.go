package server

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/turnstile/turnstile/command"
)

func serverCommands() []*Command {
	return []*Command{
		{Name: "command", Arity: -1, Flags: command.Loading | command.Stale, Cats: command.CatConnection, Group: "server", Since: "2.8.13",
			Summary: "Returns detailed information about all commands.", Handler: cmdCommand, Subs: commandSubcommands()},
		{Name: "info", Docs: "[section:string...]", Arity: -1, Flags: command.Loading | command.Stale, Cats: command.CatDangerous, Group: "server", Since: "1.0.0",
			Summary: "Returns information and statistics about the server.", Handler: cmdInfo},
		{Name: "config", Arity: -2, Flags: command.Admin | command.NoScript | command.Loading | command.Stale, NotCats: command.CatAdmin | command.CatDangerous, Group: "server", Since: "2.0.0",
			Summary: "A container for server configuration commands.", Subs: configSubcommands()},
		{Name: "time", Arity: 1, Flags: command.Loading | command.Stale | command.Fast | command.Random | command.Leader, Group: "server", Since: "2.6.0",
			Summary: "Returns the server time.", Handler: cmdTime},
		{Name: "role", Arity: 1, Flags: command.NoScript | command.Loading | command.Stale | command.Fast, Cats: command.CatAdmin | command.CatDangerous, Group: "server", Since: "2.8.12",
			Summary: "Returns the replication role.", Handler: cmdRole},
		{Name: "dbsize", Arity: 1, Flags: command.Readonly | command.Fast, Cats: command.CatKeyspace, Group: "server", Since: "1.0.0",
			Summary: "Returns the number of keys in the database.", Handler: cmdDBSize},
		{Name: "flushdb", Docs: "[flush-type=(ASYNC|SYNC)]", Arity: -1, Flags: command.Write | command.Keyspace, Cats: command.CatKeyspace | command.CatDangerous, Group: "server", Since: "1.0.0",
			Summary: "Removes all keys from the current database.", Handler: cmdFlushDB},
		{Name: "flushall", Docs: "[flush-type=(ASYNC|SYNC)]", Arity: -1, Flags: command.Write | command.Keyspace, Cats: command.CatKeyspace | command.CatDangerous, Group: "server", Since: "1.0.0",
			Summary: "Removes all keys from all databases.", Handler: cmdFlushAll},
	}
}

func cmdTime(x *Ctx) {
	x.w.Array(2)
	x.w.BulkInt(x.now / 1e9)
	x.w.BulkInt(x.now % 1e9 / 1e3)
}

// cmdRole implements ROLE from INFO replication's fields: a standalone
// server, and a cluster's leader, are a master (offset: the Raft applied
// index; the replica list is empty, RAFT.INFO lists the members), a
// follower is a slave of the leader's RESP address, "connected" while it
// knows one.
func cmdRole(x *Ctx) {
	fields := map[string]string{"role": "master", "raft_applied_index": "0"}
	if x.s.repl != nil {
		for _, f := range x.s.repl.Info() {
			fields[f[0]] = f[1]
		}
	}
	offset, _ := strconv.ParseInt(fields["raft_applied_index"], 10, 64)
	if fields["role"] == "master" {
		x.w.Array(3)
		x.w.BulkString("master")
		x.w.Int(offset)
		x.w.Array(0)
		return
	}
	port, _ := strconv.ParseInt(fields["master_port"], 10, 64)
	state := "connect"
	if fields["master_link_status"] == "up" {
		state = "connected"
	}
	x.w.Array(5)
	x.w.BulkString("slave")
	x.w.BulkString(fields["master_host"])
	x.w.Int(port)
	x.w.BulkString(state)
	x.w.Int(offset)
}

func cmdDBSize(x *Ctx) { x.w.Int(x.dbSize()) }

// flushMode checks the optional ASYNC|SYNC argument of FLUSHDB/FLUSHALL.
func flushMode(x *Ctx) bool {
	if len(x.args) > 2 {
		x.w.Error(errSyntax)
		return false
	}
	if len(x.args) == 2 {
		m := keyword(x.args[1])
		if m != "async" && m != "sync" {
			x.w.Error(errSyntax)
			return false
		}
	}
	return true
}

func cmdFlushDB(x *Ctx) {
	if !flushMode(x) {
		return
	}
	x.flushDB(x.c.db)
	x.w.OK()
}

func cmdFlushAll(x *Ctx) {
	if !flushMode(x) {
		return
	}
	for i := range x.s.numDBs() {
		x.flushDB(i)
	}
	x.w.OK()
}

// configSubcommands are the rows of CONFIG's subcommands.
func configSubcommands() []*Command {
	const f = command.Admin | command.NoScript | command.Loading | command.Stale
	return []*Command{
		{Name: "get", Docs: "parameter:string...", Arity: -3, Flags: f, Args: "<pattern> [<pattern> ...]", Since: "2.0.0", Summary: "Returns the effective values of configuration parameters.", Handler: configGet},
		{Name: "set", Docs: "data=(parameter:string value:string)...", Arity: -4, Flags: f, Args: "<directive> <value> [<directive> <value> ...]", Since: "2.0.0", Summary: "Sets configuration parameters in-flight.", Handler: configSet},
		{Name: "resetstat", Arity: 2, Flags: f, Since: "2.0.0", Summary: "Resets the server's statistics.", Handler: configResetStat},
		{Name: "rewrite", Arity: 2, Flags: f, Since: "2.8.0", Summary: "Persists the effective configuration to file.",
			Handler: configRewrite},
		{Name: "help", Arity: 2, Flags: f, NotCats: command.CatAdmin | command.CatDangerous, Since: "5.0.0", Summary: "Returns helpful text about the different subcommands.", Handler: subcommandHelp},
	}
}

// configRewrite writes the effective configuration to the config file
// (configrewrite.go).
func configRewrite(x *Ctx) {
	switch err := x.s.rewriteConfig(); {
	case errors.Is(err, errNoConfigFile):
		x.w.Error("ERR " + err.Error())
	case err != nil:
		x.s.log.Warn("CONFIG REWRITE failed", "file", x.s.cfg.ConfigFile, "err", err)
		x.w.Error("ERR Rewriting config file: " + err.Error())
	default:
		x.s.log.Info("CONFIG REWRITE executed with success", "file", x.s.cfg.ConfigFile)
		x.w.OK()
	}
}

func configResetStat(x *Ctx) {
	x.s.resetStats()
	x.w.OK()
}

// configGet answers the table's rows whose names match any of the
// patterns (glob, case-insensitive), each once, in the table's order.
func configGet(x *Ctx) {
	var rows []*ConfigParam
	for _, p := range configTable {
		for _, pat := range x.args[2:] {
			if globMatch(pat, []byte(p.Name), true) {
				rows = append(rows, p)
				break
			}
		}
	}
	x.w.Map(len(rows))
	for _, p := range rows {
		x.w.BulkString(p.Name)
		x.w.BulkString(p.Get(x.s))
	}
}

// configSet is all-or-nothing, as Redis: every name is checked (known,
// mutable, not repeated), then every value parsed into a scratch Config,
// and only then are the values applied.
func configSet(x *Ctx) {
	if len(x.args)%2 != 0 { // an unpaired directive (at least one pair: arity)
		x.w.Error(errSyntax)
		return
	}
	fail := func(name string, err error) {
		x.w.Error("ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + err.Error())
	}
	rows := make([]*ConfigParam, 0, (len(x.args)-2)/2)
	for i := 2; i < len(x.args); i += 2 {
		p := configByName[strings.ToLower(string(x.args[i]))]
		if p == nil {
			x.w.Error("ERR Unknown option or number of arguments for CONFIG SET - '" + cstring(x.args[i]) + "'")
			return
		}
		if protectedConfigs[p.Name] {
			fail(p.Name, errProtected)
			return
		}
		if !p.Mutable() {
			fail(p.Name, errImmutable)
			return
		}
		if slices.Contains(rows, p) {
			fail(p.Name, errDuplicateParam)
			return
		}
		rows = append(rows, p)
	}
	// The tls rows are built into one configuration: theirs start as the
	// effective settings (tls.go).
	scratch := Config{TLS: x.s.tlsSettings()}
	for i, p := range rows {
		if err := p.parse(&scratch, string(x.args[3+2*i])); err != nil {
			fail(p.Name, err)
			return
		}
	}
	for _, p := range rows {
		if p.check != nil {
			if err := p.check(x.s, &scratch); err != nil {
				fail(p.Name, err)
				return
			}
		}
	}
	for _, p := range rows {
		p.set(x.s, &scratch)
	}
	x.w.OK()
}
