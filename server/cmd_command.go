package server

import (
	"bytes"
	"strings"

	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
)

// commandSubcommands are the rows of COMMAND's subcommands; COMMAND with
// no subcommand lists every command. All are served from the one table.
func commandSubcommands() []*Command {
	const f = command.Loading | command.Stale
	return []*Command{
		{Name: "count", Cats: command.CatConnection, Arity: 2, Flags: f, Summary: "Returns a count of commands.", Since: "2.8.13", Handler: commandCount},
		{Name: "list", Docs: "[FILTERBY filterby=(MODULE module-name:string|ACLCAT category:string|PATTERN pattern:pattern)]", Cats: command.CatConnection, Arity: -2, Flags: f, Args: "[FILTERBY <MODULE module-name|ACLCAT category|PATTERN pattern>]", Summary: "Returns a list of command names.", Since: "7.0.0", Handler: commandList},
		{Name: "info", Docs: "[command-name:string...]", Cats: command.CatConnection, Arity: -2, Flags: f, Args: "[<command-name> ...]", Summary: "Returns information about one, multiple or all commands.", Since: "2.8.13", Handler: commandInfo},
		{Name: "docs", Docs: "[command-name:string...]", Cats: command.CatConnection, Arity: -2, Flags: f, Args: "[<command-name> ...]", Summary: "Returns documentary information about one, multiple or all commands.", Since: "7.0.0", Handler: commandDocs},
		{Name: "getkeys", Docs: "command:string [arg:string...]", Cats: command.CatConnection, Arity: -4, Flags: f, Args: "<command> [<arg> ...]", Summary: "Extracts the key names from an arbitrary command.", Since: "2.8.13", Handler: commandGetKeys},
		{Name: "help", Cats: command.CatConnection, Arity: 2, Flags: f, Summary: "Returns helpful text about the different subcommands.", Since: "5.0.0", Handler: subcommandHelp},
	}
}

// cmdCommand implements COMMAND without a subcommand: every command's info.
func cmdCommand(x *Ctx) {
	cmds := x.s.table.Commands()
	x.w.Array(len(cmds))
	for _, c := range cmds {
		writeCommandInfo(x.w, c)
	}
}

func commandCount(x *Ctx) { x.w.Int(int64(len(x.s.table.Commands()))) }

// commandInfo implements COMMAND INFO [name...].
func commandInfo(x *Ctx) {
	if len(x.args) == 2 {
		cmdCommand(x)
		return
	}
	x.w.Array(len(x.args) - 2)
	for _, name := range x.args[2:] {
		if c := x.s.lookupFull(name); c != nil {
			writeCommandInfo(x.w, c)
		} else {
			x.w.Null()
		}
	}
}

// lookupFull finds a command by its full name: "get", or "config|get" for
// a subcommand.
func (s *Server) lookupFull(name []byte) *Command {
	top, sub, isSub := bytes.Cut(name, []byte("|"))
	c := s.table.Lookup(top)
	if c == nil || !isSub {
		return c
	}
	return c.Sub(sub)
}

// commandList implements COMMAND LIST [FILTERBY MODULE m|ACLCAT c|PATTERN p].
func commandList(x *Ctx) {
	keep := func(*Command) bool { return true }
	switch {
	case len(x.args) == 2:
	case len(x.args) == 5 && isKeyword(x.args[2], "filterby"):
		arg := x.args[4]
		switch keyword(x.args[3]) {
		case "pattern":
			keep = func(c *Command) bool { return globMatch(arg, []byte(c.FullName()), true) }
		case "aclcat":
			keep = func(c *Command) bool {
				for _, cat := range categories(c) {
					if strings.EqualFold(cat[1:], string(arg)) {
						return true
					}
				}
				return false
			}
		case "module":
			keep = func(*Command) bool { return false }
		default:
			x.w.Error(errSyntax)
			return
		}
	default:
		x.w.Error(errSyntax)
		return
	}
	var names []string
	for _, c := range x.s.table.Commands() {
		if keep(c) {
			names = append(names, c.Name)
		}
		for _, sub := range c.Subs {
			if keep(sub) {
				names = append(names, sub.FullName())
			}
		}
	}
	x.w.Array(len(names))
	for _, n := range names {
		x.w.BulkString(n)
	}
}

// writeCommandInfo writes one COMMAND INFO entry in Redis 7's ten-field form.
func writeCommandInfo(w *resp.Writer, c *Command) {
	w.Array(10)
	w.BulkString(c.FullName())
	w.Int(int64(c.Arity))
	flags := c.FlagNames()
	w.Set(len(flags))
	for _, f := range flags {
		w.Status(f)
	}
	w.Int(int64(c.FirstKey))
	w.Int(int64(c.LastKey))
	w.Int(int64(c.Step))
	cats := categories(c)
	w.Set(len(cats))
	for _, cat := range cats {
		w.Status(cat)
	}
	w.Array(0) // tips
	writeKeySpecs(w, c)
	w.Array(len(c.Subs))
	for _, sub := range c.Subs {
		writeCommandInfo(w, sub)
	}
}

// categories lists the row's ACL categories as COMMAND reports them.
func categories(c *Command) []string {
	names := c.Categories().Names()
	for i, n := range names {
		names[i] = "@" + n
	}
	return names
}

// writeKeySpecs writes the single range key spec a (first, last, step) row
// describes, or none for a command without keys.
func writeKeySpecs(w *resp.Writer, c *Command) {
	if c.FirstKey == 0 {
		w.Array(0)
		return
	}
	w.Array(1)
	w.Map(3)
	w.BulkString("flags")
	flags := []string{"RO"}
	switch {
	case c.Has(command.Write):
		flags = []string{"RW", "access", "update"}
	case c.Has(command.Readonly):
		flags = []string{"RO", "access"}
	}
	w.Set(len(flags))
	for _, f := range flags {
		w.Status(f)
	}
	w.BulkString("begin_search")
	w.Map(2)
	w.BulkString("type")
	w.BulkString("index")
	w.BulkString("spec")
	w.Map(1)
	w.BulkString("index")
	w.Int(int64(c.FirstKey))
	w.BulkString("find_keys")
	w.Map(2)
	w.BulkString("type")
	w.BulkString("range")
	w.BulkString("spec")
	w.Map(3)
	w.BulkString("lastkey")
	last := c.LastKey
	if last > 0 {
		last -= c.FirstKey
	}
	w.Int(int64(last))
	w.BulkString("keystep")
	w.Int(int64(c.Step))
	w.BulkString("limit")
	w.Int(0)
}

// commandDocs implements COMMAND DOCS [name...]: a map from each
// command's name to its documentation (unknown names are left out), in
// Redis 7's shape (a flat array in RESP2).
func commandDocs(x *Ctx) {
	t := x.s.table
	var cmds []*Command
	if len(x.args) == 2 {
		cmds = t.Commands()
	} else {
		for _, name := range x.args[2:] {
			if c := x.s.lookupFull(name); c != nil {
				cmds = append(cmds, c)
			}
		}
	}
	x.w.Map(len(cmds))
	for _, c := range cmds {
		x.w.BulkString(c.FullName())
		writeCommandDoc(x.w, c)
	}
}

// writeCommandDoc writes one command's documentation map: summary, since,
// group, complexity, then arguments and subcommands when it has them.
func writeCommandDoc(w *resp.Writer, c *Command) {
	n := 3
	if c.Complexity != "" {
		n++
	}
	args := c.Arguments()
	if len(args) > 0 {
		n++
	}
	if len(c.Subs) > 0 {
		n++
	}
	w.Map(n)
	w.BulkString("summary")
	w.BulkString(c.Summary)
	w.BulkString("since")
	w.BulkString(c.Since)
	w.BulkString("group")
	w.BulkString(groupOf(c))
	if c.Complexity != "" {
		w.BulkString("complexity")
		w.BulkString(c.Complexity)
	}
	if len(args) > 0 {
		w.BulkString("arguments")
		writeDocArgs(w, args)
	}
	if len(c.Subs) > 0 {
		w.BulkString("subcommands")
		w.Map(len(c.Subs))
		for _, sub := range c.Subs {
			w.BulkString(sub.FullName())
			writeCommandDoc(w, sub)
		}
	}
}

// writeDocArgs writes an argument tree as Redis does: per argument a map
// of name, type, key_spec_index (keys; the one range spec COMMAND INFO
// reports), token, since, flags and nested arguments, the optional fields
// only when set.
func writeDocArgs(w *resp.Writer, args []command.Arg) {
	w.Array(len(args))
	for _, a := range args {
		n := 2
		if a.Type == "key" {
			n++
		}
		for _, set := range []bool{a.Token != "", a.Since != "", a.Optional || a.Multiple, len(a.Args) > 0} {
			if set {
				n++
			}
		}
		w.Map(n)
		w.BulkString("name")
		w.BulkString(a.Name)
		w.BulkString("type")
		w.BulkString(a.Type)
		if a.Type == "key" {
			w.BulkString("key_spec_index")
			w.Int(0)
		}
		if a.Token != "" {
			w.BulkString("token")
			w.BulkString(a.Token)
		}
		if a.Since != "" {
			w.BulkString("since")
			w.BulkString(a.Since)
		}
		if a.Optional || a.Multiple {
			var flags []string
			if a.Optional {
				flags = append(flags, "optional")
			}
			if a.Multiple {
				flags = append(flags, "multiple")
			}
			w.BulkString("flags")
			w.Set(len(flags))
			for _, f := range flags {
				w.Status(f)
			}
		}
		if len(a.Args) > 0 {
			w.BulkString("arguments")
			writeDocArgs(w, a.Args)
		}
	}
}

// commandGetKeys implements COMMAND GETKEYS cmd args... from the key
// spec, with Redis's checks in Redis's order: the command (or its
// subcommand) exists, has keys at all, fits its arity, and its keys can be
// found in args (a script's keys may be none: an empty reply).
func commandGetKeys(x *Ctx) {
	args := x.args[2:]
	c := x.s.table.Lookup(args[0])
	if c != nil && len(c.Subs) > 0 && len(args) >= 2 {
		c = c.Sub(args[1]) // a container's form without a subcommand is the container
	}
	switch {
	case c == nil:
		x.w.Error("ERR Invalid command specified")
		return
	case c.FirstKey == 0 && (c.Locks == nil || c.Has(command.Admin)): // DEBUG locks a key it does not declare

		x.w.Error("ERR The command has no key arguments")
		return
	case !c.CheckArity(len(args)):
		x.w.Error("ERR Invalid number of arguments specified for command")
		return
	}
	var keys [][]byte
	// Movable keys, found by Locks (SINTERCARD, LMPOP, EVAL; SORT, whose
	// row also has the key range Redis reports); other rows with Locks
	// lock more than they name (MOVE's second database).
	if c.FirstKey == 0 || c.Locks != nil && c.AllShards != nil {
		c.Locks(args, 0, x.s.numDBs(), func(_ int, k []byte) { keys = append(keys, k) })
	} else {
		for _, p := range c.KeyPositions(args, nil) {
			keys = append(keys, args[p])
		}
	}
	if len(keys) == 0 && !c.Has(command.Scripting) { // scripts need not declare keys
		x.w.Error("ERR Invalid arguments specified for command")
		return
	}
	x.w.Array(len(keys))
	for _, k := range keys {
		x.w.Bulk(k)
	}
}

// groupOf is a command's documentation group; a subcommand's is its
// container's.
func groupOf(c *Command) string {
	if p := c.Parent(); p != nil {
		return p.Group
	}
	return c.Group
}
