// Package command is Turnstile's one command table: for every command its
// name, arity, flags, key positions, documentation, subcommands and
// handler. Everything that needs to know about commands reads it: the
// dispatcher (checks, locking), COMMAND and COMMAND DOCS, MULTI/EXEC lock
// sets, durability decisions, and later scripting (undeclared keys) and the
// cluster (key routing). Nothing lists command names a second time.
//
// The table is generic in its handler type H so that packages which only
// read the metadata (scripting, cluster) need not import the server, whose
// handlers take the server's own execution context.
//
// # Invariants
//
//   - A Table is built once by New and is read-only afterwards: safe for
//     concurrent use without locks.
//   - Names are lower case; lookups fold ASCII case.
//   - A subcommand is a row of its own (name "container|sub") with its own
//     arity (counted from the container's name, as Redis does), flags,
//     handler and statistics slot; the container's row carries the
//     subcommands and, optionally, a handler for the form without one.
package command

import (
	"fmt"
	"sort"
	"strings"
)

// Flag describes how a command behaves.
type Flag uint32

const (
	Write     Flag = 1 << iota // changes the keyspace
	Readonly                   // only reads the keyspace
	Admin                      // server administration
	Fast                       // O(1) or O(log n)
	NoScript                   // not allowed from scripts
	Loading                    // allowed while the dataset loads
	Stale                      // allowed on a stale replica
	NoAuth                     // allowed before authentication
	NoQueue                    // runs at once inside MULTI instead of being queued
	Keyspace                   // touches the whole database (KEYS, FLUSHDB...)
	DenyOOM                    // may grow memory
	Random                     // reply is not deterministic
	AllowBusy                  // allowed while a script runs
	// AddsKeys marks a command that may create keys: it is refused with an
	// OOM error when a shard it needs has no room for them. Internal (not
	// reported by COMMAND): redis-cell registers CL.THROTTLE as "write" only.
	AddsKeys
	// Scripting marks the commands that run or manage scripts (EVAL and
	// its kin, SCRIPT LOAD|EXISTS|FLUSH): they take the server's script
	// lock before any shard lock (an EXEC queueing one takes it first),
	// and lock their declared keys themselves. Internal, not reported by
	// COMMAND.
	Scripting
	// MayReplicate marks a command that reaches replicas without writing
	// (PUBLISH): refused in read-only scripts like a write. Internal.
	MayReplicate
	// Blocking marks a command that may block the client until a key it
	// names changes (BLPOP and its kin).
	Blocking
	// Leader marks a command that names no key yet runs on a cluster's
	// leader, where the keyspace is: the transaction commands (MULTI,
	// EXEC, DISCARD, UNWATCH), TIME (the leader's clock decides expiry)
	// and SCRIPT KILL (scripts run there). Commands with keys, or flagged
	// Write, Readonly, Keyspace, Scripting or Blocking, run there without
	// it. Internal, not reported by COMMAND.
	Leader
)

// flagNames are the names COMMAND reports, in Redis's order.
var flagNames = [...]struct {
	f    Flag
	name string
}{
	{Write, "write"}, {Readonly, "readonly"}, {DenyOOM, "denyoom"},
	{Admin, "admin"}, {NoScript, "noscript"}, {Blocking, "blocking"}, {Random, "random"},
	{Loading, "loading"}, {Stale, "stale"}, {Fast, "fast"},
	{NoAuth, "no_auth"}, {AllowBusy, "allow_busy"},
}

// Command is one row of the table. H is the handler type of the server
// that runs the commands.
type Command[H any] struct {
	Name     string // lower case, e.g. "get", "cl.throttle"; a subcommand's own name ("get" of CONFIG GET)
	Arity    int    // Redis convention: n = exactly n arguments (with the name), -n = at least n
	Flags    Flag
	FirstKey int    // position of the first key argument, 0 if none
	LastKey  int    // position of the last key; negative counts from the end
	Step     int    // distance between keys
	Args     string // argument synopsis after the name, e.g. "<pattern>" (HELP)
	Group    string
	Summary  string
	Since    string
	// Complexity and Docs are what COMMAND DOCS reports besides the
	// summary: the time complexity, and the arguments in ParseArgs's
	// compact form ("" for a row not described yet: no arguments field).
	Complexity string
	Docs       string
	Handler    H
	// Locks, when set, names the keys to lock instead of the key positions:
	// for commands that reach into another database (COPY ... DB n).
	Locks func(args [][]byte, db, ndb int, add func(db int, key []byte))
	// DeriveKeys, when set, names the keys of a command whose keys are
	// not among its arguments but built from them (RL.CHECK's
	// rl:{value}:rule): it appends each key's bytes to buf and the key to
	// keys, and returns both. A key aliases buf's backing array as it was
	// when the key was appended, so a caller that keeps buf and keys from
	// call to call derives without allocating. Such a row also has Locks,
	// naming the same keys, for the callers that keep no buffers; the
	// server's one-command path derives the keys once, for the locks and
	// the handler.
	DeriveKeys func(args [][]byte, buf []byte, keys [][]byte) ([]byte, [][]byte)
	// AllShards, when set, reports for one call whether it reads keys its
	// arguments do not name, only describe (SORT's BY and GET patterns):
	// such a call locks every shard, besides counting its named keys.
	AllShards func(args [][]byte) bool
	// Subs are the subcommands of a container command (CLIENT, CONFIG,
	// COMMAND). Their arity counts from the container's name.
	Subs []*Command[H]
	// Access, when set, is what the command does with each of its
	// keys' values, by key index (the last entry also covers the keys after
	// it), for ACL key permissions; unset, a Readonly command reads, a
	// Write command writes, any other does both. See KeyAccess.
	Access []KeyAccess
	// AccessOf, when set, decides per call what the command does with its
	// i-th key (Redis's variable key flags: SET reads only with GET);
	// Access stays the static answer COMMAND-like reports use.
	AccessOf func(args [][]byte, i int) KeyAccess
	// Cats are ACL categories the row has beyond those its flags and group
	// imply (see Categories); NotCats are implied ones it does not have.
	Cats, NotCats Category

	args     []Arg  // Docs, parsed by New
	fullName string // "config|get" for a subcommand, else Name
	parent   *Command[H]
	id       int
	subs     map[string]*Command[H]
	cats     Category // computed by New
}

// Categories are the row's ACL categories: those Redis derives from its
// flags (write, read, admin+dangerous, fast, blocking, else slow) and
// group (string, hash, generic=keyspace...), plus Cats, minus NotCats.
func (c *Command[H]) Categories() Category { return c.cats }

// Has reports whether c has all flags in f.
func (c *Command[H]) Has(f Flag) bool { return c.Flags&f == f }

// FullName is the name Redis reports: "config|get" for a subcommand.
func (c *Command[H]) FullName() string { return c.fullName }

// Parent is the container of a subcommand, nil for a top-level command.
func (c *Command[H]) Parent() *Command[H] { return c.parent }

// ID is the row's index among all rows (subcommands included), dense from
// 0, for per-command statistics.
func (c *Command[H]) ID() int { return c.id }

// CheckArity reports whether argc arguments (with the name) fit c.
func (c *Command[H]) CheckArity(argc int) bool { return CheckArity(c.Arity, argc) }

// CheckArity reports whether argc arguments (with the name) fit arity.
func CheckArity(arity, argc int) bool {
	if arity > 0 {
		return argc == arity
	}
	return argc >= -arity
}

// KeyPositions appends the argument indexes of args that are keys.
func (c *Command[H]) KeyPositions(args [][]byte, dst []int) []int {
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

// KeyAccess is what a command does with a key's value, as Redis's key
// specs say: KeyRead needs read permission (%R~), KeyWrite write
// permission (%W~). KeyAny (neither: EXISTS, TYPE, STRLEN only look at
// the key) needs a matching pattern of any kind.
type KeyAccess uint8

const (
	KeyAny       KeyAccess = 0
	KeyRead      KeyAccess = 1
	KeyWrite     KeyAccess = 2
	KeyReadWrite           = KeyRead | KeyWrite
)

// KeyAccessAt is what the command does with its i-th key (from 0).
func (c *Command[H]) KeyAccessAt(i int) KeyAccess {
	if len(c.Access) > 0 {
		return c.Access[min(i, len(c.Access)-1)]
	}
	switch {
	case c.Has(Readonly):
		return KeyRead
	case c.Has(Write):
		return KeyWrite
	}
	return KeyReadWrite
}

// KeyAccessFor is what this call (args) does with its i-th key.
func (c *Command[H]) KeyAccessFor(args [][]byte, i int) KeyAccess {
	if c.AccessOf != nil {
		return c.AccessOf(args, i)
	}
	return c.KeyAccessAt(i)
}

// Arguments returns the row's argument tree (from Docs), nil if it has
// none described.
func (c *Command[H]) Arguments() []Arg { return c.args }

// FlagNames returns the flag names COMMAND reports.
func (c *Command[H]) FlagNames() []string {
	var out []string
	for _, fn := range flagNames {
		if c.Flags&fn.f != 0 {
			out = append(out, fn.name)
		}
	}
	if (c.FirstKey == 0 && c.Locks != nil || c.AllShards != nil) && !c.Has(Admin) {
		out = append(out, "movablekeys") // keys found in the arguments (numkeys, STREAMS, SORT's patterns), last as Redis lists it
	}
	return out
}

// Sub finds a subcommand by name, case-insensitively; nil if there is none.
func (c *Command[H]) Sub(name []byte) *Command[H] {
	if c.subs == nil {
		return nil
	}
	return find(c.subs, name)
}

// Table is the command table. Read-only after New.
type Table[H any] struct {
	byName map[string]*Command[H]
	sorted []*Command[H] // top-level rows by name
	all    []*Command[H] // every row, subcommands included, by ID
}

// New builds the table from groups of rows. A duplicate or malformed row
// is a programming error and panics at start-up.
func New[H any](valid func(H) bool, groups ...[]*Command[H]) *Table[H] {
	t := &Table[H]{byName: make(map[string]*Command[H])}
	for _, g := range groups {
		for _, c := range g {
			t.check(c, valid)
			if _, dup := t.byName[c.Name]; dup {
				panic(fmt.Sprintf("command table: duplicate %q", c.Name))
			}
			t.byName[c.Name] = c
			t.sorted = append(t.sorted, c)
		}
	}
	sort.Slice(t.sorted, func(i, j int) bool { return t.sorted[i].Name < t.sorted[j].Name })
	for _, c := range t.sorted {
		c.fullName = c.Name
		c.cats = implicitCategories(c)
		c.id = len(t.all)
		t.all = append(t.all, c)
		if len(c.Subs) == 0 {
			continue
		}
		c.subs = make(map[string]*Command[H], len(c.Subs))
		sort.Slice(c.Subs, func(i, j int) bool { return c.Subs[i].Name < c.Subs[j].Name })
		for _, s := range c.Subs {
			t.check(s, valid)
			if len(s.Subs) > 0 {
				panic(fmt.Sprintf("command table: %q|%q nests subcommands", c.Name, s.Name))
			}
			if _, dup := c.subs[s.Name]; dup {
				panic(fmt.Sprintf("command table: duplicate %q|%q", c.Name, s.Name))
			}
			s.parent = c
			s.cats = implicitCategories(s)
			s.fullName = c.Name + "|" + s.Name
			s.id = len(t.all)
			t.all = append(t.all, s)
			c.subs[s.Name] = s
		}
	}
	return t
}

func (t *Table[H]) check(c *Command[H], valid func(H) bool) {
	switch {
	case c.Name != strings.ToLower(c.Name) || c.Arity == 0:
		panic(fmt.Sprintf("command table: bad row %q", c.Name))
	case !valid(c.Handler) && len(c.Subs) == 0:
		panic(fmt.Sprintf("command table: %q has neither a handler nor subcommands", c.Name))
	case c.FirstKey > 0 && c.Step <= 0:
		panic(fmt.Sprintf("command table: %q has keys but no step", c.Name))
	}
	if c.Docs != "" {
		args, err := ParseArgs(c.Docs)
		if err != nil {
			panic(fmt.Sprintf("command table: %q: %v", c.Name, err))
		}
		c.args = args
	}
}

// Lookup finds a top-level command by name, case-insensitively, without
// allocating for names of up to 32 bytes.
func (t *Table[H]) Lookup(name []byte) *Command[H] { return find(t.byName, name) }

// Commands returns the top-level rows sorted by name. The caller must not
// modify the slice.
func (t *Table[H]) Commands() []*Command[H] { return t.sorted }

// All returns every row, subcommands included, indexed by ID. The caller
// must not modify the slice.
func (t *Table[H]) All() []*Command[H] { return t.all }

// find looks name up in m, folding ASCII case. The conversion to string
// inside the index expression does not allocate.
func find[H any](m map[string]*Command[H], name []byte) *Command[H] {
	var buf [32]byte
	if len(name) <= len(buf) {
		for i, c := range name {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			buf[i] = c
		}
		return m[string(buf[:len(name)])]
	}
	return m[strings.ToLower(string(name))]
}
