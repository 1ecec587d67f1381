package server

import (
	"math"
	"strconv"
	"strings"

	"github.com/turnstile/turnstile/command"
)

func serverCommands() []*Command {
	return []*Command{
		{Name: "command", Arity: -1, Flags: command.Loading | command.Stale, Group: "server", Since: "2.8.13",
			Summary: "Returns detailed information about all commands.", Handler: cmdCommand, Subs: commandSubcommands()},
		{Name: "info", Arity: -1, Flags: command.Loading | command.Stale, Group: "server", Since: "1.0.0",
			Summary: "Returns information and statistics about the server.", Handler: cmdInfo},
		{Name: "config", Arity: -2, Flags: command.Admin | command.NoScript | command.Loading | command.Stale, Group: "server", Since: "2.0.0",
			Summary: "A container for server configuration commands.", Subs: configSubcommands()},
		{Name: "time", Arity: 1, Flags: command.Loading | command.Stale | command.Fast | command.Random, Group: "server", Since: "2.6.0",
			Summary: "Returns the server time.", Handler: cmdTime},
		{Name: "dbsize", Arity: 1, Flags: command.Readonly | command.Fast, Group: "server", Since: "1.0.0",
			Summary: "Returns the number of keys in the database.", Handler: cmdDBSize},
		{Name: "flushdb", Arity: -1, Flags: command.Write | command.Keyspace, Group: "server", Since: "1.0.0",
			Summary: "Removes all keys from the current database.", Handler: cmdFlushDB},
		{Name: "flushall", Arity: -1, Flags: command.Write | command.Keyspace, Group: "server", Since: "1.0.0",
			Summary: "Removes all keys from all databases.", Handler: cmdFlushAll},
	}
}

func cmdTime(x *Ctx) {
	x.w.Array(2)
	x.w.BulkInt(x.now / 1e9)
	x.w.BulkInt(x.now % 1e9 / 1e3)
}

func cmdDBSize(x *Ctx) { x.w.Int(x.dbSize()) }

// flushMode checks the optional ASYNC|SYNC argument of FLUSHDB/FLUSHALL.
func flushMode(x *Ctx) bool {
	if len(x.args) > 2 {
		x.w.Error(errSyntax)
		return false
	}
	if len(x.args) == 2 {
		m := strings.ToLower(string(x.args[1]))
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

// configParam is one CONFIG GET/SET parameter.
type configParam struct {
	name string
	get  func(s *Server) string
	set  func(s *Server, v string) error // nil: immutable
}

func (s *Server) configParams() []configParam {
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	return []configParam{
		{name: "bind", get: func(s *Server) string { return s.cfg.Bind }},
		{name: "port", get: func(s *Server) string { return itoa(int64(s.cfg.Port)) }},
		{name: "databases", get: func(s *Server) string { return itoa(int64(len(s.dbs))) }},
		{name: "hz", get: func(s *Server) string { return itoa(int64(s.cfg.Hz)) }},
		{name: "requirepass", get: func(s *Server) string { return *s.requirePass.Load() },
			set: func(s *Server, v string) error { s.requirePass.Store(&v); return nil }},
		{name: "maxclients", get: func(s *Server) string { return itoa(s.maxClients.Load()) },
			set: func(s *Server, v string) error {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return configError("argument couldn't be parsed into an integer")
				}
				if n < 1 || n > math.MaxUint32 {
					return configError("argument must be between 1 and 4294967295 inclusive")
				}
				s.maxClients.Store(n)
				return nil
			}},
		{name: "proto-max-bulk-len", get: func(s *Server) string { return itoa(s.cfg.Limits.MaxBulkLen) }},
		{name: "client-query-buffer-limit", get: func(s *Server) string { return itoa(s.cfg.Limits.MaxQueryBuf) }},
		{name: "maxmemory", get: func(s *Server) string { return "0" }},
		{name: "save", get: func(s *Server) string { return FormatSaveRules(s.cfg.Persist.Save) }},
		{name: "appendonly", get: func(s *Server) string { return yesNo(s.cfg.Persist.AppendOnly) }},
		{name: "appendfsync", get: func(s *Server) string { return s.cfg.Persist.AppendFsync.String() }},
		{name: "appendfilename", get: func(s *Server) string { return s.cfg.Persist.AppendFilename }},
		{name: "dbfilename", get: func(s *Server) string { return s.cfg.Persist.DBFilename }},
		{name: "dir", get: func(s *Server) string { return s.cfg.Persist.Dir }},
		{name: "turnstile-shards", get: func(s *Server) string { return itoa(int64(s.dbs[0].NumShards())) }},
	}
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

type configError string

func (e configError) Error() string { return string(e) }

// configSubcommands are the rows of CONFIG's subcommands.
func configSubcommands() []*Command {
	const f = command.Admin | command.NoScript | command.Loading | command.Stale
	return []*Command{
		{Name: "get", Arity: -3, Flags: f, Since: "2.0.0", Summary: "Returns the effective values of configuration parameters.", Handler: configGet},
		{Name: "set", Arity: -4, Flags: f, Since: "2.0.0", Summary: "Sets configuration parameters in-flight.", Handler: configSet},
		{Name: "resetstat", Arity: 2, Flags: f, Since: "2.0.0", Summary: "Resets the server's statistics.", Handler: configResetStat},
		{Name: "rewrite", Arity: 2, Flags: f, Since: "2.8.0", Summary: "Persists the effective configuration to file.",
			Handler: func(x *Ctx) { x.w.Error("ERR The server is running without a config file") }},
		{Name: "help", Arity: 2, Flags: f, Since: "5.0.0", Summary: "Returns helpful text about the different subcommands.", Handler: configHelp},
	}
}

func configResetStat(x *Ctx) {
	x.s.resetStats()
	x.w.OK()
}

func configHelp(x *Ctx) {
	writeHelp(x, "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"GET <pattern>", "    Return parameters matching the glob-like <pattern> and their values.",
		"SET <directive> <value>", "    Set the configuration <directive> to <value>.",
		"RESETSTAT", "    Reset statistics reported by the INFO command.",
		"REWRITE", "    Rewrite the configuration file.",
		"HELP", "    Print this help.")
}

func configGet(x *Ctx) {
	var names, vals []string
	for _, p := range x.s.configParams() {
		for _, pat := range x.args[2:] {
			if globMatch(pat, []byte(p.name), true) {
				names = append(names, p.name)
				vals = append(vals, p.get(x.s))
				break
			}
		}
	}
	x.w.Map(len(names))
	for i := range names {
		x.w.BulkString(names[i])
		x.w.BulkString(vals[i])
	}
}

func configSet(x *Ctx) {
	if len(x.args)%2 != 0 {
		x.w.Error(arityError("config|set"))
		return
	}
	params := x.s.configParams()
	type change struct {
		p configParam
		v string
	}
	var changes []change
	for i := 2; i < len(x.args); i += 2 {
		name := strings.ToLower(string(x.args[i]))
		var found *configParam
		for j := range params {
			if params[j].name == name {
				found = &params[j]
			}
		}
		if found == nil {
			x.w.Error("ERR Unknown option or number of arguments for CONFIG SET - '" + string(x.args[i]) + "'")
			return
		}
		if found.set == nil {
			x.w.Error("ERR CONFIG SET failed (possibly related to argument '" + name + "') - can't set immutable config")
			return
		}
		changes = append(changes, change{*found, string(x.args[i+1])})
	}
	for _, ch := range changes {
		if err := ch.p.set(x.s, ch.v); err != nil {
			x.w.Error("ERR CONFIG SET failed (possibly related to argument '" + ch.p.name + "') - " + err.Error())
			return
		}
	}
	x.w.OK()
}
