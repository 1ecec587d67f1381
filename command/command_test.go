package command

import (
	"slices"
	"strings"
	"testing"
)

type handler func() string

func valid(h handler) bool { return h != nil }

func ok() string { return "ok" }

func testTable() *Table[handler] {
	return New(valid,
		[]*Command[handler]{
			{Name: "get", Arity: 2, Flags: Readonly | Fast, FirstKey: 1, LastKey: 1, Step: 1, Handler: ok},
			{Name: "mset", Arity: -3, Flags: Write | DenyOOM, FirstKey: 1, LastKey: -1, Step: 2, Handler: ok},
		},
		[]*Command[handler]{
			{Name: "config", Arity: -2, Flags: Admin, Subs: []*Command[handler]{
				{Name: "set", Arity: -4, Flags: Admin, Handler: ok},
				{Name: "get", Arity: -3, Flags: Admin, Handler: ok},
			}},
		})
}

func TestLookupAndSubcommands(t *testing.T) {
	tab := testTable()
	for _, name := range []string{"get", "GET", "gEt"} {
		if c := tab.Lookup([]byte(name)); c == nil || c.Name != "get" {
			t.Errorf("Lookup(%q) = %v", name, c)
		}
	}
	if c := tab.Lookup([]byte(strings.Repeat("x", 40))); c != nil {
		t.Errorf("a long unknown name found %v", c)
	}
	cfg := tab.Lookup([]byte("CONFIG"))
	get := cfg.Sub([]byte("GeT"))
	if get == nil || get.FullName() != "config|get" || get.Parent() != cfg {
		t.Fatalf("CONFIG GET = %+v", get)
	}
	if cfg.Sub([]byte("nope")) != nil || tab.Lookup([]byte("get")).Sub([]byte("x")) != nil {
		t.Error("unknown subcommands must be nil")
	}
	// IDs are dense over every row, subcommands included.
	var ids []int
	for i, c := range tab.All() {
		if c.ID() != i {
			t.Errorf("row %s has ID %d at index %d", c.FullName(), c.ID(), i)
		}
		ids = append(ids, c.ID())
	}
	if len(ids) != 5 || len(tab.Commands()) != 3 {
		t.Errorf("All() has %d rows, Commands() %d; want 5 and 3", len(ids), len(tab.Commands()))
	}
	if !slices.IsSortedFunc(tab.Commands(), func(a, b *Command[handler]) int { return strings.Compare(a.Name, b.Name) }) {
		t.Error("Commands() is not sorted by name")
	}
}

func TestLookupDoesNotAllocate(t *testing.T) {
	tab := testTable()
	name := []byte("MSET")
	if n := testing.AllocsPerRun(100, func() { tab.Lookup(name) }); n != 0 {
		t.Fatalf("Lookup allocates %.1f times", n)
	}
}

func TestKeyPositionsAndArity(t *testing.T) {
	tab := testTable()
	args := func(s string) [][]byte {
		var out [][]byte
		for _, f := range strings.Fields(s) {
			out = append(out, []byte(f))
		}
		return out
	}
	cases := []struct {
		cmd, req string
		keys     []int
	}{
		{"get", "GET k", []int{1}},
		{"mset", "MSET a 1 b 2 c 3", []int{1, 3, 5}},
		{"mset", "MSET a", []int{1}},
		{"config", "CONFIG GET x", nil},
	}
	for _, c := range cases {
		got := tab.Lookup([]byte(c.cmd)).KeyPositions(args(c.req), nil)
		if !slices.Equal(got, c.keys) {
			t.Errorf("%s: key positions %v, want %v", c.req, got, c.keys)
		}
	}
	for _, c := range []struct {
		arity, argc int
		ok          bool
	}{{2, 2, true}, {2, 3, false}, {-3, 2, false}, {-3, 3, true}, {-3, 9, true}} {
		if CheckArity(c.arity, c.argc) != c.ok {
			t.Errorf("CheckArity(%d, %d) != %v", c.arity, c.argc, c.ok)
		}
	}
	if got := strings.Join(tab.Lookup([]byte("mset")).FlagNames(), " "); got != "write denyoom" {
		t.Errorf("FlagNames = %q", got)
	}
}

func TestBadRowsPanic(t *testing.T) {
	cases := map[string][]*Command[handler]{
		"upper case":        {{Name: "Get", Arity: 2, Handler: ok}},
		"zero arity":        {{Name: "get", Handler: ok}},
		"no handler":        {{Name: "get", Arity: 2}},
		"keys without step": {{Name: "get", Arity: 2, FirstKey: 1, Handler: ok}},
		"duplicate":         {{Name: "get", Arity: 2, Handler: ok}, {Name: "get", Arity: 2, Handler: ok}},
		"nested subs": {{Name: "a", Arity: -2, Subs: []*Command[handler]{
			{Name: "b", Arity: -3, Subs: []*Command[handler]{{Name: "c", Arity: 3, Handler: ok}}}}}},
	}
	for name, rows := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("New accepted a bad table")
				}
			}()
			New(valid, rows)
		})
	}
}
