package server

import (
	"fmt"
	"sort"
	"strings"
)

// Flag describes how a command behaves; the dispatcher, COMMAND, MULTI/EXEC
// locking and (later) persistence and replication all read these.
type Flag uint32

const (
	FlagWrite     Flag = 1 << iota // changes the keyspace
	FlagReadonly                   // only reads the keyspace
	FlagAdmin                      // server administration
	FlagFast                       // O(1) or O(log n)
	FlagNoScript                   // not allowed from scripts
	FlagLoading                    // allowed while the dataset loads
	FlagStale                      // allowed on a stale replica
	FlagNoAuth                     // allowed before authentication
	FlagNoQueue                    // runs at once inside MULTI instead of being queued
	FlagKeyspace                   // touches the whole database (KEYS, FLUSHDB...)
	FlagDenyOOM                    // may grow memory
	FlagRandom                     // reply is not deterministic
	FlagAllowBusy                  // allowed while a script runs
)

var flagNames = []struct {
	f    Flag
	name string
}{
	{FlagWrite, "write"}, {FlagReadonly, "readonly"}, {FlagDenyOOM, "denyoom"},
	{FlagAdmin, "admin"}, {FlagNoScript, "noscript"}, {FlagRandom, "random"},
	{FlagLoading, "loading"}, {FlagStale, "stale"}, {FlagFast, "fast"},
	{FlagNoAuth, "no_auth"}, {FlagAllowBusy, "allow_busy"},
}

// Command is one row of the command table.
type Command struct {
	Name     string // lower case, e.g. "get" or "cl.throttle"
	Arity    int    // Redis convention: n = exactly n arguments (with the name), -n = at least n
	Flags    Flag
	FirstKey int // position of the first key argument, 0 if none
	LastKey  int // position of the last key; negative counts from the end
	Step     int // distance between keys
	Group    string
	Summary  string
	Since    string
	Handler  func(*Ctx)
	// Locks, when set, names the keys to lock instead of the key positions:
	// for commands that reach into another database (COPY ... DB n).
	Locks func(args [][]byte, db, ndb int, add func(db int, key []byte))
	// Subs lists the subcommands of a container command (CLIENT, CONFIG,
	// COMMAND) with their arity, counted like Arity from the container name.
	Subs map[string]int

	id int // index in Table.sorted, set by newTable
}

// Has reports whether c has all flags in f.
func (c *Command) Has(f Flag) bool { return c.Flags&f == f }

// keyPositions appends the argument indexes of args that are keys.
func (c *Command) keyPositions(args [][]byte, dst []int) []int {
	if c.FirstKey <= 0 || c.FirstKey >= len(args) {
		return dst
	}
	last := c.LastKey
	if last < 0 {
		last = len(args) + last
	}
	if last >= len(args) {
		last = len(args) - 1
	}
	for i := c.FirstKey; i <= last; i += c.Step {
		dst = append(dst, i)
	}
	return dst
}

// FlagNames returns the flag names COMMAND reports.
func (c *Command) FlagNames() []string {
	var out []string
	for _, fn := range flagNames {
		if c.Flags&fn.f != 0 {
			out = append(out, fn.name)
		}
	}
	return out
}

// Table is the one command table. It is built once and read-only after.
type Table struct {
	byName map[string]*Command
	sorted []*Command
}

// newTable builds the table; a duplicate or malformed row is a programming
// error and panics at start-up.
func newTable(groups ...[]*Command) *Table {
	t := &Table{byName: make(map[string]*Command)}
	for _, g := range groups {
		for _, c := range g {
			if c.Name != strings.ToLower(c.Name) || c.Handler == nil || c.Arity == 0 {
				panic(fmt.Sprintf("command table: bad row %q", c.Name))
			}
			if c.FirstKey > 0 && c.Step <= 0 {
				panic(fmt.Sprintf("command table: %q has keys but no step", c.Name))
			}
			if _, dup := t.byName[c.Name]; dup {
				panic(fmt.Sprintf("command table: duplicate %q", c.Name))
			}
			t.byName[c.Name] = c
			t.sorted = append(t.sorted, c)
		}
	}
	sort.Slice(t.sorted, func(i, j int) bool { return t.sorted[i].Name < t.sorted[j].Name })
	for i, c := range t.sorted {
		c.id = i
	}
	return t
}

// Lookup finds a command by name, case-insensitively, without allocating for
// names of up to 32 bytes.
func (t *Table) Lookup(name []byte) *Command {
	var buf [32]byte
	if len(name) <= len(buf) {
		for i, c := range name {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			buf[i] = c
		}
		return t.byName[string(buf[:len(name)])]
	}
	return t.byName[strings.ToLower(string(name))]
}

// checkSubcommand returns Redis's error for an unknown subcommand or a
// subcommand with the wrong number of arguments, or "".
func (c *Command) checkSubcommand(args [][]byte) string {
	if c.Subs == nil || len(args) < 2 {
		return ""
	}
	sub := strings.ToLower(string(args[1]))
	arity, ok := c.Subs[sub]
	if !ok {
		return "ERR unknown subcommand '" + truncate(args[1], 128) + "'. Try " + strings.ToUpper(c.Name) + " HELP."
	}
	if !checkArity(arity, len(args)) {
		return arityError(c.Name + "|" + sub)
	}
	return ""
}

// checkArity reports whether argc arguments (with the name) fit arity.
func checkArity(arity, argc int) bool {
	if arity > 0 {
		return argc == arity
	}
	return argc >= -arity
}
