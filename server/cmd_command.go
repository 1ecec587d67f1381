package server

import "strings"

// cmdCommand implements COMMAND [COUNT | INFO [name...] | DOCS [name...] |
// GETKEYS cmd args... | LIST], all served from the one command table.
func cmdCommand(x *Ctx) {
	t := x.s.table
	if len(x.args) == 1 {
		x.w.Array(len(t.sorted))
		for _, c := range t.sorted {
			writeCommandInfo(x.w, c)
		}
		return
	}
	sub := strings.ToLower(string(x.args[1]))
	switch sub {
	case "count":
		x.w.Int(int64(len(t.sorted)))
	case "list":
		commandList(x)
	case "info":
		if len(x.args) == 2 {
			x.w.Array(len(t.sorted))
			for _, c := range t.sorted {
				writeCommandInfo(x.w, c)
			}
			return
		}
		x.w.Array(len(x.args) - 2)
		for _, name := range x.args[2:] {
			if c := t.Lookup(name); c != nil {
				writeCommandInfo(x.w, c)
			} else {
				x.w.Null()
			}
		}
	case "docs":
		commandDocs(x)
	case "getkeys":
		commandGetKeys(x)
	case "help":
		writeHelp(x, "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"(no subcommand)", "    Return details about all commands.",
			"COUNT", "    Return the total number of commands.",
			"LIST [FILTERBY (MODULE <module-name>|ACLCAT <category>|PATTERN <pattern>)]", "    Return a list of all commands.",
			"INFO [<command-name> ...]", "    Return details about the given commands, or all of them.",
			"DOCS [<command-name> ...]", "    Return documentation details about the given commands, or all of them.",
			"GETKEYS <full-command>", "    Return the keys from a full command.",
			"HELP", "    Print this help.")
	}
}

// commandList implements COMMAND LIST [FILTERBY MODULE m|ACLCAT c|PATTERN p].
func commandList(x *Ctx) {
	keep := func(*Command) bool { return true }
	switch {
	case len(x.args) == 2:
	case len(x.args) == 5 && strings.EqualFold(string(x.args[2]), "filterby"):
		arg := x.args[4]
		switch strings.ToLower(string(x.args[3])) {
		case "pattern":
			keep = func(c *Command) bool { return globMatch(arg, []byte(c.Name), true) }
		case "aclcat":
			keep = func(c *Command) bool {
				for _, cat := range c.categories() {
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
	for _, c := range x.s.table.sorted {
		if keep(c) {
			names = append(names, c.Name)
		}
	}
	x.w.Array(len(names))
	for _, n := range names {
		x.w.BulkString(n)
	}
}

// writeCommandInfo writes one COMMAND INFO entry in Redis 7's ten-field form.
func writeCommandInfo(w *Writer, c *Command) {
	w.Array(10)
	w.BulkString(c.Name)
	w.Int(int64(c.Arity))
	flags := c.FlagNames()
	w.Set(len(flags))
	for _, f := range flags {
		w.Status(f)
	}
	w.Int(int64(c.FirstKey))
	w.Int(int64(c.LastKey))
	w.Int(int64(c.Step))
	cats := c.categories()
	w.Set(len(cats))
	for _, cat := range cats {
		w.Status(cat)
	}
	w.Array(0) // tips
	writeKeySpecs(w, c)
	w.Array(0) // subcommands
}

// aclCategories is Redis's category table; COMMAND lists a command's
// categories in this order.
var aclCategories = []string{"keyspace", "read", "write", "set", "sortedset", "list", "hash",
	"string", "bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow",
	"blocking", "dangerous", "connection", "transaction", "scripting"}

// categories derives the ACL categories COMMAND reports from the row.
func (c *Command) categories() []string {
	has := map[string]bool{
		"write": c.Has(FlagWrite),
		"read":  c.Has(FlagReadonly),
		"admin": c.Has(FlagAdmin), "dangerous": c.Has(FlagAdmin),
		"fast": c.Has(FlagFast), "slow": !c.Has(FlagFast),
	}
	switch c.Group {
	case "string":
		has["string"] = true
	case "generic":
		has["keyspace"] = true
	case "connection":
		has["connection"] = true
	case "transactions":
		has["transaction"] = true
	}
	var cats []string
	for _, name := range aclCategories {
		if has[name] {
			cats = append(cats, "@"+name)
		}
	}
	return cats
}

// writeKeySpecs writes the single range key spec a (first, last, step) row
// describes, or none for a command without keys.
func writeKeySpecs(w *Writer, c *Command) {
	if c.FirstKey == 0 {
		w.Array(0)
		return
	}
	w.Array(1)
	w.Map(3)
	w.BulkString("flags")
	flags := []string{"RO"}
	switch {
	case c.Has(FlagWrite):
		flags = []string{"RW", "access", "update"}
	case c.Has(FlagReadonly):
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

// commandDocs implements COMMAND DOCS [name...]: a map from name to its
// summary, since, group and complexity.
func commandDocs(x *Ctx) {
	t := x.s.table
	var cmds []*Command
	if len(x.args) == 2 {
		cmds = t.sorted
	} else {
		for _, name := range x.args[2:] {
			if c := t.Lookup(name); c != nil {
				cmds = append(cmds, c)
			}
		}
	}
	x.w.Map(len(cmds))
	for _, c := range cmds {
		x.w.BulkString(c.Name)
		x.w.Map(3)
		x.w.BulkString("summary")
		x.w.BulkString(c.Summary)
		x.w.BulkString("since")
		x.w.BulkString(c.Since)
		x.w.BulkString("group")
		x.w.BulkString(c.Group)
	}
}

// commandGetKeys implements COMMAND GETKEYS cmd args... from the key spec.
func commandGetKeys(x *Ctx) {
	if len(x.args) < 4 { // Redis wants the command and at least one argument
		x.w.Error(arityError("command|getkeys"))
		return
	}
	args := x.args[2:]
	c := x.s.table.Lookup(args[0])
	if c == nil {
		x.w.Error("ERR Invalid command specified")
		return
	}
	if !checkArity(c.Arity, len(args)) {
		x.w.Error("ERR Invalid number of arguments specified for command")
		return
	}
	pos := c.keyPositions(args, nil)
	if len(pos) == 0 {
		x.w.Error("ERR The command has no key arguments")
		return
	}
	x.w.Array(len(pos))
	for _, p := range pos {
		x.w.Bulk(args[p])
	}
}
