package server

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// The command generator of TestDifferentialRandom (diff_test.go).
//
// It draws command sequences over six keys and small pools of fields,
// members, elements and numbers, from a seeded PCG source only: the same
// seed gives the same sequence whatever the build under test knows (the
// runner, not the generator, leaves out commands Turnstile does not have).
//
// A run is cut into epochs of 40 to 300 steps. Most epochs use one family
// (with the generic key commands mixed in), so that a key keeps one type
// for long enough to reach deep states; the rest mix every family, which
// makes wrong-type calls common. An epoch starts by deleting some keys.

// dcmd is one generated command with the keys it reads or writes.
type dcmd struct {
	args []string
	keys []string
}

func (c dcmd) name() string { return strings.ToUpper(c.args[0]) }

// dstep is one command, or a transaction: MULTI, commands, EXEC or DISCARD.
type dstep []dcmd

func (s dstep) multi() bool { return len(s) > 1 && s[0].name() == "MULTI" }

func (s dstep) keys() []string {
	var ks []string
	for _, c := range s {
		ks = append(ks, c.keys...)
	}
	return ks
}

var (
	diffKeys = []string{"k0", "k1", "k2", "k3", "k4", "k5"}

	longA = strings.Repeat("x", 65)
	longB = strings.Repeat("y", 80) + "1"
	longN = "1" + strings.Repeat("0", 70) // numeric-looking, past 64 bytes

	// Eight of each, some numeric-looking; oddballs are drawn now and then.
	diffFields  = []string{"f0", "f1", "f2", "f3", "1", "20", "-3", longA}
	diffValues  = []string{"v", "1", "-2", "3.5", "10", "0", "abc", "9223372036854775807"}
	diffMembers = []string{"a", "b", "c", "d", "1", "2", "-7", "100"}
	diffOdd     = []string{"", longA, longB, longN, "007", "1.0", "9223372036854775808", "-0", "with space", "a\x00b"}

	goodInts = []string{"0", "1", "-1", "2", "5", "-3", "10", "100", "-100", "3"}
	badInts  = []string{"abc", "1.5", "", " 1", "1 ", "+1", "0x10", "9223372036854775807",
		"-9223372036854775808", "9223372036854775808", "-9223372036854775809",
		"99999999999999999999", "1e3", "inf", "nan", "-0", "007", "4294967296"}
	goodFloats = []string{"0", "1", "-1", "1.5", "-2.25", "0.1", "3", "1e3", "-1e-3", "10.0",
		"+inf", "-inf", "inf", "2", "5", "1e-5", "123456789.125"}
	badFloats = []string{"nan", "abc", "", "1e400", "-nan", "1.5.5", "0x1p3", " 1", "1 ",
		"5.", ".5", "-.5e2", "1e", "1.7976931348623157e308", "4.9e-324", "infinity", "-Infinity",
		"1e-400", "0x10", "+0", "-0"}
	scoreBounds = []string{"-inf", "+inf", "inf", "0", "1", "(1", "1.5", "(2.25", "-1", "(-inf",
		"(+inf", "abc", "(", "", "5", "100", "nan", "(0", "2", "(nan", "3"}
	lexBounds = []string{"-", "+", "[a", "(a", "[b", "(c", "[1", "(2", "[", "(", "a", "[zz", "(-",
		"[d", "(b", "[-7", "(100", "[c"}
)

type gen struct {
	r        *rand.Rand
	sid      int64 // next stream ID's milliseconds (every explicit ID is new)
	fam      int   // family of this epoch, or -1 for a mixed epoch
	lex      bool  // sorted-set scores are nearly all 0 in this epoch (lex ranges are specified)
	left     int   // steps left in the epoch
	families []genFamily
	generic  genFamily
	// replayNow asks the runner for a log replay check after the steps
	// next returned (rewriteSteps); the runner clears it.
	replayNow bool
}

type genEntry struct {
	weight int
	fn     func(g *gen) dcmd
}

type genFamily struct {
	name    string
	entries []genEntry
	total   int
	bulk    func(g *gen) dstep // a step that crosses a size threshold
}

func newGen(seed uint64) *gen {
	g := &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), sid: 1}
	g.families = []genFamily{
		mkFamily("strings", stringEntries, nil),
		mkFamily("hashes", hashEntries, bulkHash),
		mkFamily("sets", append(slices.Clone(setEntries), sortEntry(false)), bulkSet),
		mkFamily("zsets", append(slices.Clone(zsetEntries), sortEntry(true)), bulkZSet),
		mkFamily("lists", append(slices.Clone(listEntries), sortEntry(true)), bulkList),
		mkFamily("streams", slices.Concat(streamEntries, streamGroupEntries), bulkStream),
		mkFamily("hyperloglogs", hllEntries, bulkHLL),
		mkFamily("geo", geoEntries, nil),
	}
	g.generic = mkFamily("keys", genericEntries, nil)
	return g
}

func mkFamily(name string, es []genEntry, bulk func(*gen) dstep) genFamily {
	f := genFamily{name: name, entries: es, bulk: bulk}
	for _, e := range es {
		f.total += e.weight
	}
	return f
}

func (f *genFamily) draw(g *gen) dcmd {
	n := g.r.IntN(f.total)
	for _, e := range f.entries {
		if n < e.weight {
			return e.fn(g)
		}
		n -= e.weight
	}
	panic("unreachable")
}

// next returns the next steps: one, or an epoch's opening deletes and then
// its first step.
func (g *gen) next() []dstep {
	var out []dstep
	if g.left == 0 {
		g.left = 40 + g.r.IntN(260)
		g.fam = -1
		if g.r.IntN(10) < 7 {
			g.fam = g.r.IntN(len(g.families))
		}
		g.lex = g.r.IntN(10) < 4
		for _, k := range diffKeys {
			if g.r.IntN(2) == 0 {
				out = append(out, dstep{{args: []string{"DEL", k}, keys: []string{k}}})
			}
		}
	}
	g.left--
	switch g.r.IntN(150) {
	case 0:
		return append(out, g.watchSteps()...)
	case 1:
		g.replayNow = true
		return append(out, g.rewriteSteps()...)
	}
	out = append(out, g.step())
	return out
}

// rewriteSteps stores a string read from a key elsewhere (COPY, RENAME,
// MOVE, GETEX) and, in the same transaction, writes values of the same
// length over that key and a third: the keyspace rewrites a same-length
// value in place, which must not change the value the first command
// logged (the log replay, diffRun.replayCheck, checks it right after).
func (g *gen) rewriteSteps() []dstep {
	a, b, c := g.key(), g.key(), g.key()
	set := dstep{oneKey(a, "SET", a, "v-"+strconv.Itoa(g.r.IntN(10)))}
	var first dcmd
	switch g.r.IntN(4) {
	case 0:
		first = mkCmd([]string{a, b}, "COPY", a, b)
	case 1:
		first = mkCmd([]string{a, b}, "RENAME", a, b)
	case 2:
		first = oneKey(a, "MOVE", a, "5")
	default:
		first = oneKey(a, "GETEX", a, "EX", "100")
	}
	tx := dstep{{args: []string{"MULTI"}}, first, oneKey(a, "SET", a, "w-1"), oneKey(c, "SET", c, "x-2"), {args: []string{"EXEC"}}}
	return []dstep{set, tx}
}

// watchSteps WATCHes a key, writes it (often with an expiry in the past,
// which deletes it: a change all the same) or not, and runs a transaction
// whose EXEC tells whether the WATCH broke.
func (g *gen) watchSteps() []dstep {
	k := g.key()
	w := dstep{oneKey(k, "WATCH", k)}
	var write dcmd
	switch g.r.IntN(5) {
	case 0:
		write = oneKey(k, "SET", k, g.value(), g.kw("PXAT"), g.pick([]string{"1", "100"}))
	case 1:
		write = oneKey(k, "SET", k, g.value(), g.kw("EXAT"), "1")
	case 2:
		write = oneKey(k, "SET", k, g.value(), g.kw(g.pick([]string{"NX", "XX"})), "PXAT", "1")
	case 3:
		write = oneKey(k, "GETEX", k, g.kw("PXAT"), "1")
	default:
		write = oneKey(k, "GET", k)
	}
	tx := dstep{{args: []string{"MULTI"}}, oneKey(k, "EXISTS", k), dcmd{args: []string{"EXEC"}}}
	return []dstep{w, {write}, tx}
}

func (g *gen) step() dstep {
	if g.r.IntN(100) < 6 {
		n := 1 + g.r.IntN(4)
		st := dstep{{args: []string{"MULTI"}}}
		for range n {
			c := g.command()
			// A lex range removal on mixed scores removes what Redis leaves
			// unspecified; outside a transaction the runner skips it, inside
			// it could not, and the servers' states would part silently.
			for c.name() == "ZREMRANGEBYLEX" {
				c = g.command()
			}
			st = append(st, c)
		}
		end := "EXEC"
		if g.r.IntN(10) == 0 {
			end = "DISCARD"
		}
		return append(st, dcmd{args: []string{end}})
	}
	if f := g.family(); f.bulk != nil && g.r.IntN(1000) < 12 {
		return f.bulk(g)
	}
	return dstep{g.command()}
}

func (g *gen) family() *genFamily {
	if g.fam < 0 || g.r.IntN(50) == 0 {
		return &g.families[g.r.IntN(len(g.families))]
	}
	return &g.families[g.fam]
}

// command draws one command and now and then breaks its arity.
func (g *gen) command() dcmd {
	var c dcmd
	if g.r.IntN(100) < 12 {
		c = g.generic.draw(g)
	} else {
		c = g.family().draw(g)
	}
	if g.r.IntN(100) < 3 && c.name() != "COMMAND" { // COMMAND alone lists everything
		switch g.r.IntN(3) {
		case 0:
			c.args = c.args[:1]
			c.keys = nil
		case 1:
			if len(c.args) > 1 {
				c.args = c.args[:g.r.IntN(len(c.args)-1)+1]
			}
		default:
			c.args = append(c.args, "x")
		}
		c.args = append([]string(nil), c.args...)
	}
	return c
}

// Argument helpers.

func (g *gen) pick(pool []string) string { return pool[g.r.IntN(len(pool))] }
func (g *gen) key() string               { return g.pick(diffKeys) }
func (g *gen) oddOr(pool []string) string {
	if g.r.IntN(100) < 8 {
		return g.pick(diffOdd)
	}
	return g.pick(pool)
}
func (g *gen) field() string  { return g.oddOr(diffFields) }
func (g *gen) value() string  { return g.oddOr(diffValues) }
func (g *gen) member() string { return g.oddOr(diffMembers) }
func (g *gen) intArg() string {
	if g.r.IntN(100) < 12 {
		return g.pick(badInts)
	}
	return g.pick(goodInts)
}
func (g *gen) floatArg() string {
	if g.r.IntN(100) < 12 {
		return g.pick(badFloats)
	}
	return g.pick(goodFloats)
}
func (g *gen) index() string {
	if g.r.IntN(100) < 5 {
		return g.pick([]string{"abc", "9223372036854775807", "-9223372036854775808", "1.5", "100000"})
	}
	return strconv.Itoa(g.r.IntN(21) - 10)
}
func (g *gen) count() string { // small counts, sometimes bad
	if g.r.IntN(100) < 10 {
		return g.pick([]string{"-1", "abc", "0", "9223372036854775807", "-9223372036854775808", "1.5"})
	}
	return strconv.Itoa(g.r.IntN(6))
}
func (g *gen) some(n int, f func() string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = f()
	}
	return out
}
func (g *gen) maybe(pct int) bool { return g.r.IntN(100) < pct }

// kw returns a keyword, now and then in lower case or with a NUL byte and
// junk after it: Redis compares keywords as C strings (up to the NUL).
func (g *gen) kw(w string) string {
	switch g.r.IntN(40) {
	case 0:
		return strings.ToLower(w)
	case 1:
		return w + "\x00"
	case 2:
		return strings.ToLower(w) + "\x00junk"
	}
	return w
}

func mkCmd(keys []string, args ...string) dcmd { return dcmd{args: args, keys: keys} }
func oneKey(k string, args ...string) dcmd     { return dcmd{args: args, keys: []string{k}} }

// Generic key commands: on any type.
var genericEntries = []genEntry{
	{4, func(g *gen) dcmd {
		ks := g.some(1+g.r.IntN(2), g.key)
		return mkCmd(ks, append([]string{"DEL"}, ks...)...)
	}},
	{3, func(g *gen) dcmd {
		ks := g.some(1+g.r.IntN(3), g.key)
		return mkCmd(ks, append([]string{"EXISTS"}, ks...)...)
	}},
	{5, func(g *gen) dcmd { k := g.key(); return oneKey(k, "TYPE", k) }},
	{6, func(g *gen) dcmd { k := g.key(); return oneKey(k, "OBJECT", "ENCODING", k) }},
	{3, func(g *gen) dcmd {
		k := g.key()
		var secs string
		switch n := g.r.IntN(10); {
		case n < 6:
			secs = strconv.Itoa(100 + g.r.IntN(100000))
		case n < 8:
			secs = g.pick([]string{"0", "-1", "-100"})
		default:
			secs = g.pick(badInts)
		}
		c := oneKey(k, "EXPIRE", k, secs)
		if g.maybe(30) {
			c.args = append(c.args, g.kw(g.pick([]string{"NX", "XX", "GT", "LT", "nx", "BAD"})))
		}
		return c
	}},
	{2, func(g *gen) dcmd { k := g.key(); return oneKey(k, "PERSIST", k) }},
	{3, func(g *gen) dcmd { k := g.key(); return oneKey(k, "TTL", k) }},
	{2, func(g *gen) dcmd { a, b := g.key(), g.key(); return mkCmd([]string{a, b}, "RENAME", a, b) }},
	{2, func(g *gen) dcmd {
		a, b := g.key(), g.key()
		c := mkCmd([]string{a, b}, "COPY", a, b)
		if g.maybe(50) {
			c.args = append(c.args, g.kw("REPLACE"))
		}
		return c
	}},
	// Between databases 5 and 6 only: the main run uses database 0 and the
	// minimiser database 9.
	{2, func(g *gen) dcmd {
		k := g.key()
		return oneKey(k, "MOVE", k, g.pick([]string{"5", "5", "6", "abc", "99", "-1", "5\x00"}))
	}},
	{1, func(g *gen) dcmd { return mkCmd(nil, "SWAPDB", "5", g.pick([]string{"6", "6", "6", "x", "99", "5"})) }},
	{2, func(g *gen) dcmd { k := g.key(); return oneKey(k, "DUMP", k) }},
	{3, func(g *gen) dcmd {
		src, dst := g.key(), g.key()
		payload := dumpOwn + src
		switch n := g.r.IntN(10); {
		case n < 4:
			payload = dumpCross + src
		case n == 4:
			payload = g.pick([]string{"", "x", "\x00\x05hello\x0a\x00"})
		}
		c := mkCmd([]string{dst, src}, "RESTORE", dst, g.pick([]string{"0", "0", "0", "100000", "-1", "abc"}), payload)
		if g.maybe(60) {
			c.args = append(c.args, g.kw("REPLACE"))
		}
		if g.maybe(10) {
			c.args = append(c.args, g.kw("ABSTTL"))
		}
		if g.maybe(10) {
			c.args = append(c.args, g.kw(g.pick([]string{"IDLETIME", "FREQ"})), g.pick([]string{"10", "-1", "300", "x"}))
		}
		return c
	}},
	{2, func(g *gen) dcmd {
		// The keys of some other command, as the command table finds them.
		var c dcmd
		if g.maybe(20) {
			c = g.generic.draw(g)
		} else {
			c = g.family().draw(g)
		}
		if g.maybe(10) {
			c.args = append([]string{g.pick([]string{"nosuch", "client", "object", "ping", "eval"})}, c.args[1:]...)
		}
		return mkCmd(nil, append([]string{"COMMAND", "GETKEYS"}, c.args...)...)
	}},
}

var stringEntries = []genEntry{
	{6, func(g *gen) dcmd {
		k := g.key()
		c := oneKey(k, "SET", k, g.value())
		if g.maybe(20) {
			c.args = append(c.args, g.kw(g.pick([]string{"NX", "XX"})))
		}
		if g.maybe(15) {
			c.args = append(c.args, g.kw("GET"))
		}
		if g.maybe(15) {
			switch g.r.IntN(4) {
			case 0:
				c.args = append(c.args, g.kw("EX"), g.pick([]string{"1000", "5000", "0", "-1", "abc"}))
			case 1:
				c.args = append(c.args, g.kw("PX"), g.pick([]string{"1000000", "5000000", "0"}))
			case 2: // mostly in the past: the key is deleted
				c.args = append(c.args, g.kw(g.pick([]string{"EXAT", "PXAT"})), g.pick([]string{"1", "100", "4102444800000", "0", "abc"}))
			default:
				c.args = append(c.args, g.kw("KEEPTTL"))
			}
		}
		return c
	}},
	{5, func(g *gen) dcmd { k := g.key(); return oneKey(k, "GET", k) }},
	{4, func(g *gen) dcmd { k := g.key(); return oneKey(k, "INCR", k) }},
	{3, func(g *gen) dcmd { k := g.key(); return oneKey(k, "APPEND", k, g.value()) }},
	{1, func(g *gen) dcmd {
		ks := g.some(2, g.key)
		c := mkCmd(ks, "LCS", ks[0], ks[1])
		switch g.r.IntN(4) {
		case 0:
			c.args = append(c.args, "LEN")
		case 1:
			c.args = append(c.args, "IDX")
			if g.maybe(50) {
				c.args = append(c.args, "MINMATCHLEN", g.pick([]string{"0", "1", "2", "-1", "x"}))
			}
			if g.maybe(50) {
				c.args = append(c.args, "WITHMATCHLEN")
			}
		}
		return c
	}},
	{3, func(g *gen) dcmd {
		k := g.key()
		bit := g.pick([]string{"0", "1", "1"})
		if g.maybe(5) {
			bit = g.pick([]string{"2", "-1", "x"})
		}
		return oneKey(k, "SETBIT", k, g.bitOffset(), bit)
	}},
	{2, func(g *gen) dcmd { k := g.key(); return oneKey(k, "GETBIT", k, g.bitOffset()) }},
	{2, func(g *gen) dcmd {
		k := g.key()
		c := oneKey(k, "BITCOUNT", k)
		if g.maybe(60) {
			c.args = append(c.args, g.index(), g.index())
			if g.maybe(50) {
				c.args = append(c.args, g.kw(g.pick([]string{"BIT", "BYTE"})))
			}
		}
		return c
	}},
	{2, func(g *gen) dcmd {
		k := g.key()
		c := oneKey(k, "BITPOS", k, g.pick([]string{"0", "1", "1", "2"}))
		if g.maybe(60) {
			c.args = append(c.args, g.index())
			if g.maybe(60) {
				c.args = append(c.args, g.index())
				if g.maybe(50) {
					c.args = append(c.args, g.kw(g.pick([]string{"BIT", "BYTE"})))
				}
			}
		}
		return c
	}},
	{3, func(g *gen) dcmd { k := g.key(); return g.bitfieldOps(oneKey(k, "BITFIELD", k), false) }},
	{1, func(g *gen) dcmd { k := g.key(); return g.bitfieldOps(oneKey(k, "BITFIELD_RO", k), true) }},
	{2, func(g *gen) dcmd {
		op := g.pick([]string{"AND", "OR", "XOR", "NOT"})
		ks := g.some(2+g.r.IntN(2), g.key)
		if op == "NOT" && !g.maybe(10) {
			ks = ks[:2]
		}
		return mkCmd(ks, append([]string{"BITOP", op}, ks...)...)
	}},
}

// bitfieldOps appends one to three BITFIELD operations (GET only for
// BITFIELD_RO, mostly).
func (g *gen) bitfieldOps(c dcmd, ro bool) dcmd {
	for range 1 + g.r.IntN(3) {
		typ := g.pick([]string{"i", "u"}) + strconv.Itoa(1+g.r.IntN(64))
		if g.maybe(5) {
			typ = g.pick([]string{"u64", "i65", "x8", "i0"})
		}
		off := g.bitOffset()
		if g.maybe(20) {
			off = "#" + strconv.Itoa(g.r.IntN(6))
		}
		val := g.pick([]string{"0", "1", "-1", "5", "-100", "127", "128", "255", "256", "1000",
			"9223372036854775807", "-9223372036854775808", "x"})
		switch {
		case g.maybe(25):
			c.args = append(c.args, g.kw("OVERFLOW"), g.pick([]string{"WRAP", "SAT", "FAIL", "sat", "bad"}))
		case ro && !g.maybe(10), g.maybe(40):
			c.args = append(c.args, g.kw("GET"), typ, off)
		default:
			c.args = append(c.args, g.kw(g.pick([]string{"SET", "INCRBY"})), typ, off, val)
		}
	}
	return c
}

// bitOffset is a bit offset within a few bytes, sometimes a bad one.
func (g *gen) bitOffset() string {
	if g.maybe(5) {
		return g.pick([]string{"-1", "x", "4294967296", "1.5"})
	}
	return strconv.Itoa(g.r.IntN(80))
}

var hashEntries = []genEntry{
	{8, func(g *gen) dcmd {
		k := g.key()
		c := oneKey(k, "HSET", k)
		for range 1 + g.r.IntN(3) {
			c.args = append(c.args, g.field(), g.value())
		}
		return c
	}},
	{2, func(g *gen) dcmd { k := g.key(); return oneKey(k, "HSETNX", k, g.field(), g.value()) }},
	{4, func(g *gen) dcmd { k := g.key(); return oneKey(k, "HGET", k, g.field()) }},
	{2, func(g *gen) dcmd {
		k := g.key()
		return oneKey(k, append([]string{"HMGET", k}, g.some(1+g.r.IntN(3), g.field)...)...)
	}},
	{3, func(g *gen) dcmd { k := g.key(); return oneKey(k, "HGETALL", k) }},
	{3, func(g *gen) dcmd {
		k := g.key()
		return oneKey(k, append([]string{"HDEL", k}, g.some(1+g.r.IntN(2), g.field)...)...)
	}},
	{2, func(g *gen) dcmd { k := g.key(); return oneKey(k, "HEXISTS", k, g.field()) }},
	{2, func(g *gen) dcmd { k := g.key(); return oneKey(k, "HLEN", k) }},
	{2, func(g *gen) dcmd { k := g.key(); return oneKey(k, "HKEYS", k) }},
	{2, func(g *gen) dcmd { k := g.key(); return oneKey(k, "HVALS", k) }},
	{2, func(g *gen) dcmd { k := g.key(); return oneKey(k, "HSTRLEN", k, g.field()) }},
	{4, func(g *gen) dcmd { k := g.key(); return oneKey(k, "HINCRBY", k, g.field(), g.intArg()) }},
	{4, func(g *gen) dcmd { k := g.key(); return oneKey(k, "HINCRBYFLOAT", k, g.field(), g.floatArg()) }},
}

func (g *gen) setMember() string {
	if g.maybe(45) {
		return g.pick([]string{"1", "2", "3", "-7", "100", "0", "-9223372036854775808", "9223372036854775807"})
	}
	return g.member()
}

var setEntries = []genEntry{
	{8, func(g *gen) dcmd {
		k := g.key()
		return oneKey(k, append([]string{"SADD", k}, g.some(1+g.r.IntN(3), g.setMember)...)...)
	}},
	{3, func(g *gen) dcmd {
		k := g.key()
		return oneKey(k, append([]string{"SREM", k}, g.some(1+g.r.IntN(2), g.setMember)...)...)
	}},
	{3, func(g *gen) dcmd { k := g.key(); return oneKey(k, "SMEMBERS", k) }},
	{2, func(g *gen) dcmd { k := g.key(); return oneKey(k, "SISMEMBER", k, g.setMember()) }},
	{2, func(g *gen) dcmd {
		k := g.key()
		return oneKey(k, append([]string{"SMISMEMBER", k}, g.some(1+g.r.IntN(3), g.setMember)...)...)
	}},
	{2, func(g *gen) dcmd { k := g.key(); return oneKey(k, "SCARD", k) }},
	{6, func(g *gen) dcmd {
		ks := g.some(1+g.r.IntN(3), g.key)
		return mkCmd(ks, append([]string{g.pick([]string{"SINTER", "SUNION", "SDIFF"})}, ks...)...)
	}},
	{5, func(g *gen) dcmd {
		ks := g.some(2+g.r.IntN(3), g.key)
		return mkCmd(ks, append([]string{g.pick([]string{"SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"})}, ks...)...)
	}},
	{3, func(g *gen) dcmd {
		a, b := g.key(), g.key()
		return mkCmd([]string{a, b}, "SMOVE", a, b, g.setMember())
	}},
	{3, func(g *gen) dcmd {
		ks := g.some(1+g.r.IntN(3), g.key)
		n := strconv.Itoa(len(ks))
		if g.maybe(10) {
			n = g.pick([]string{"0", "-1", "abc", "5", strconv.Itoa(len(ks) + 1)})
		}
		c := mkCmd(ks, append([]string{"SINTERCARD", n}, ks...)...)
		if g.maybe(40) {
			c.args = append(c.args, "LIMIT", g.count())
		}
		return c
	}},
}

func (g *gen) score() string {
	if g.maybe(35) || (g.lex && g.maybe(95)) {
		return "0"
	}
	return g.floatArg()
}

var zsetEntries = []genEntry{
	{10, func(g *gen) dcmd {
		k := g.key()
		c := oneKey(k, "ZADD", k)
		for _, f := range []string{"NX", "XX", "GT", "LT", "CH", "INCR"} {
			if g.maybe(12) {
				c.args = append(c.args, g.kw(f))
			}
		}
		g.r.Shuffle(len(c.args)-2, func(i, j int) { c.args[2+i], c.args[2+j] = c.args[2+j], c.args[2+i] })
		n := 1 + g.r.IntN(3)
		if g.maybe(50) {
			n = 1
		}
		for range n {
			c.args = append(c.args, g.score(), g.member())
		}
		return c
	}},
	{3, func(g *gen) dcmd {
		k := g.key()
		return oneKey(k, append([]string{"ZREM", k}, g.some(1+g.r.IntN(2), g.member)...)...)
	}},
	{3, func(g *gen) dcmd { k := g.key(); return oneKey(k, "ZINCRBY", k, g.floatArg(), g.member()) }},
	{2, func(g *gen) dcmd { k := g.key(); return oneKey(k, "ZSCORE", k, g.member()) }},
	{2, func(g *gen) dcmd {
		k := g.key()
		return oneKey(k, append([]string{"ZMSCORE", k}, g.some(1+g.r.IntN(3), g.member)...)...)
	}},
	{2, func(g *gen) dcmd { k := g.key(); return oneKey(k, "ZCARD", k) }},
	{2, func(g *gen) dcmd {
		k := g.key()
		return oneKey(k, "ZCOUNT", k, g.pick(scoreBounds), g.pick(scoreBounds))
	}},
	{2, func(g *gen) dcmd {
		k := g.key()
		return oneKey(k, "ZLEXCOUNT", k, g.pick(lexBounds), g.pick(lexBounds))
	}},
	{3, func(g *gen) dcmd {
		k := g.key()
		return oneKey(k, g.pick([]string{"ZRANK", "ZREVRANK"}), k, g.member())
	}},
	{8, func(g *gen) dcmd {
		k := g.key()
		c := oneKey(k, "ZRANGE", k)
		switch g.r.IntN(3) {
		case 0:
			c.args = append(c.args, g.index(), g.index())
		case 1:
			c.args = append(c.args, g.pick(scoreBounds), g.pick(scoreBounds), "BYSCORE")
		default:
			c.args = append(c.args, g.pick(lexBounds), g.pick(lexBounds), "BYLEX")
		}
		if g.maybe(30) {
			c.args = append(c.args, "REV")
		}
		if g.maybe(25) {
			c.args = append(c.args, "LIMIT", g.index(), g.index())
		}
		if g.maybe(30) {
			c.args = append(c.args, g.kw("WITHSCORES"))
		}
		return c
	}},
	{4, func(g *gen) dcmd {
		k := g.key()
		c := oneKey(k, g.pick([]string{"ZRANGEBYSCORE", "ZREVRANGEBYSCORE"}), k, g.pick(scoreBounds), g.pick(scoreBounds))
		if g.maybe(40) {
			c.args = append(c.args, "WITHSCORES")
		}
		if g.maybe(30) {
			c.args = append(c.args, "LIMIT", g.index(), g.index())
		}
		return c
	}},
	{3, func(g *gen) dcmd {
		k := g.key()
		c := oneKey(k, "ZRANGEBYLEX", k, g.pick(lexBounds), g.pick(lexBounds))
		if g.maybe(30) {
			c.args = append(c.args, "LIMIT", g.index(), g.index())
		}
		return c
	}},
	{1, func(g *gen) dcmd {
		k := g.key()
		return oneKey(k, "ZREMRANGEBYSCORE", k, g.pick(scoreBounds), g.pick(scoreBounds))
	}},
	{1, func(g *gen) dcmd { k := g.key(); return oneKey(k, "ZREMRANGEBYRANK", k, g.index(), g.index()) }},
	{1, func(g *gen) dcmd {
		k := g.key()
		return oneKey(k, "ZREMRANGEBYLEX", k, g.pick(lexBounds), g.pick(lexBounds))
	}},
	{3, func(g *gen) dcmd {
		k := g.key()
		c := oneKey(k, g.pick([]string{"ZPOPMIN", "ZPOPMAX"}), k)
		if g.maybe(50) {
			c.args = append(c.args, g.count())
		}
		return c
	}},
	{4, func(g *gen) dcmd { // ZUNION, ZINTER, ZDIFF and their STORE forms
		name := g.pick([]string{"ZUNION", "ZINTER", "ZDIFF", "ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"})
		ks := g.some(1+g.r.IntN(3), g.key)
		args := []string{name}
		all := ks
		if strings.HasSuffix(name, "STORE") {
			dst := g.key()
			args, all = append(args, dst), append([]string{dst}, ks...)
		}
		args = append(args, g.numKeys(len(ks)))
		args = append(args, ks...)
		if !strings.HasPrefix(name, "ZDIFF") || g.maybe(3) {
			if g.maybe(30) {
				args = append(args, "WEIGHTS")
				for range ks {
					args = append(args, g.floatArg())
				}
			}
			if g.maybe(25) {
				args = append(args, "AGGREGATE", g.pick([]string{"SUM", "MIN", "MAX", "min", "avg"}))
			}
		}
		if g.maybe(40) {
			args = append(args, g.kw("WITHSCORES"))
		}
		return mkCmd(all, args...)
	}},
	{2, func(g *gen) dcmd {
		ks := g.some(1+g.r.IntN(3), g.key)
		c := mkCmd(ks, append([]string{"ZINTERCARD", g.numKeys(len(ks))}, ks...)...)
		if g.maybe(40) {
			c.args = append(c.args, "LIMIT", g.count())
		}
		return c
	}},
}

// numKeys is the numkeys argument for n keys, sometimes a wrong one.
func (g *gen) numKeys(n int) string {
	if g.maybe(8) {
		return g.pick([]string{"0", "-1", "abc", "1.5", strconv.Itoa(n + 1)})
	}
	return strconv.Itoa(n)
}

var listEntries = []genEntry{
	{8, func(g *gen) dcmd {
		k := g.key()
		return oneKey(k, append([]string{g.pick([]string{"LPUSH", "RPUSH"}), k}, g.some(1+g.r.IntN(3), g.member)...)...)
	}},
	{2, func(g *gen) dcmd {
		k := g.key()
		return oneKey(k, append([]string{g.pick([]string{"LPUSHX", "RPUSHX"}), k}, g.some(1+g.r.IntN(2), g.member)...)...)
	}},
	{4, func(g *gen) dcmd {
		k := g.key()
		c := oneKey(k, g.pick([]string{"LPOP", "RPOP"}), k)
		if g.maybe(40) {
			c.args = append(c.args, g.count())
		}
		return c
	}},
	{4, func(g *gen) dcmd { k := g.key(); return oneKey(k, "LRANGE", k, g.index(), g.index()) }},
	{1, func(g *gen) dcmd { k := g.key(); return oneKey(k, "LTRIM", k, g.index(), g.index()) }},
	{2, func(g *gen) dcmd { k := g.key(); return oneKey(k, "LINDEX", k, g.index()) }},
	{2, func(g *gen) dcmd { k := g.key(); return oneKey(k, "LSET", k, g.index(), g.member()) }},
	{2, func(g *gen) dcmd { k := g.key(); return oneKey(k, "LLEN", k) }},
	{2, func(g *gen) dcmd {
		k := g.key()
		return oneKey(k, "LREM", k, g.pick([]string{"0", "1", "-1", "2", "-2", "abc"}), g.member())
	}},
	{2, func(g *gen) dcmd {
		k := g.key()
		return oneKey(k, "LINSERT", k, g.kw(g.pick([]string{"BEFORE", "AFTER", "before", "MIDDLE"})), g.member(), g.member())
	}},
	{3, func(g *gen) dcmd {
		k := g.key()
		c := oneKey(k, "LPOS", k, g.member())
		if g.maybe(40) {
			c.args = append(c.args, "RANK", g.pick([]string{"1", "2", "-1", "-2", "0", "abc", "-9223372036854775808"}))
		}
		if g.maybe(40) {
			c.args = append(c.args, "COUNT", g.pick([]string{"0", "1", "2", "-1", "abc"}))
		}
		if g.maybe(20) {
			c.args = append(c.args, "MAXLEN", g.pick([]string{"0", "1", "3", "-1"}))
		}
		return c
	}},
	{3, func(g *gen) dcmd {
		a, b := g.key(), g.key()
		ends := []string{"LEFT", "RIGHT", "left", "UP"}
		return mkCmd([]string{a, b}, "LMOVE", a, b, g.kw(g.pick(ends)), g.kw(g.pick(ends)))
	}},
	{2, func(g *gen) dcmd { a, b := g.key(), g.key(); return mkCmd([]string{a, b}, "RPOPLPUSH", a, b) }},
}

// streamID returns a new explicit ID, now and then one that is not valid
// or not new.
func (g *gen) streamID() string {
	switch n := g.r.IntN(100); {
	case n < 6:
		return g.pick([]string{"1-0", "0-0", "0-1", "abc", "1-x", "-1", "18446744073709551615-18446744073709551615", strconv.FormatInt(g.sid-1, 10)})
	case n < 15:
		return strconv.FormatInt(g.sid, 10) + "-*"
	case n < 25:
		id := strconv.FormatInt(g.sid, 10) + "-" + strconv.Itoa(1+g.r.IntN(3))
		g.sid++
		return id
	}
	id := strconv.FormatInt(g.sid, 10)
	g.sid++
	if g.maybe(50) {
		id += "-0"
	}
	return id
}

// rangeID returns an ID near those given out, or a special one.
func (g *gen) rangeID() string {
	switch n := g.r.IntN(10); {
	case n < 2:
		return g.pick([]string{"-", "+", "0", "abc", "(-", "(+"})
	case n < 4:
		return "(" + strconv.FormatInt(1+g.r.Int64N(g.sid), 10)
	}
	id := strconv.FormatInt(1+g.r.Int64N(g.sid), 10)
	if g.maybe(30) {
		id += "-" + strconv.Itoa(g.r.IntN(3))
	}
	return id
}

func (g *gen) trimArgs() []string {
	out := []string{}
	if g.maybe(50) {
		out = append(out, "MAXLEN")
		if g.maybe(40) {
			out = append(out, g.pick([]string{"=", "~"}))
		}
		out = append(out, g.pick([]string{"0", "1", "3", "5", "10", "50", "-1", "abc"}))
	} else {
		out = append(out, "MINID")
		if g.maybe(40) {
			out = append(out, g.pick([]string{"=", "~"}))
		}
		out = append(out, g.rangeID())
	}
	if g.maybe(10) {
		out = append(out, "LIMIT", g.pick([]string{"0", "1", "10", "-1"}))
	}
	return out
}

// geoCoord returns a longitude and a latitude near one of a few centres
// (so that searches find several points), now and then a bad one.
func (g *gen) geoCoord() (string, string) {
	if g.maybe(3) {
		return g.pick([]string{"181", "x", "0", "inf"}), g.pick([]string{"86", "0", "-85.05112878", "y"})
	}
	centres := [][2]float64{{2.35, 48.85}, {13.4, 52.5}, {179.95, 0}, {-73.98, 40.75}}
	c := centres[g.r.IntN(len(centres))]
	lon := c[0] + (g.r.Float64()-0.5)*0.2
	lat := c[1] + (g.r.Float64()-0.5)*0.2
	return strconv.FormatFloat(max(min(lon, 180), -180), 'f', 6, 64), strconv.FormatFloat(lat, 'f', 6, 64)
}

func (g *gen) geoUnit() string { return g.pick([]string{"m", "km", "mi", "ft", "KM", "yd"}) }

// geoOptions are a search's reply options, order and count.
func (g *gen) geoOptions(store bool) []string {
	var out []string
	if !store {
		for _, o := range []string{"WITHDIST", "WITHCOORD", "WITHHASH"} {
			if g.maybe(30) {
				out = append(out, o)
			}
		}
	}
	if g.maybe(50) {
		out = append(out, g.pick([]string{"ASC", "DESC"}))
	}
	if g.maybe(40) {
		out = append(out, "COUNT", g.pick([]string{"1", "2", "5", "0"}))
		if g.maybe(30) {
			out = append(out, "ANY")
		}
	}
	return out
}

var geoEntries = []genEntry{
	{6, func(g *gen) dcmd {
		k := g.key()
		c := oneKey(k, "GEOADD", k)
		if g.maybe(20) {
			c.args = append(c.args, g.pick([]string{"NX", "XX", "CH"}))
		}
		for range 1 + g.r.IntN(3) {
			lon, lat := g.geoCoord()
			c.args = append(c.args, lon, lat, g.member())
		}
		return c
	}},
	{2, func(g *gen) dcmd {
		k := g.key()
		return oneKey(k, append([]string{"GEOPOS", k}, g.some(1+g.r.IntN(2), g.member)...)...)
	}},
	{1, func(g *gen) dcmd {
		k := g.key()
		return oneKey(k, append([]string{"GEOHASH", k}, g.some(1+g.r.IntN(2), g.member)...)...)
	}},
	{2, func(g *gen) dcmd {
		k := g.key()
		c := oneKey(k, "GEODIST", k, g.member(), g.member())
		if g.maybe(50) {
			c.args = append(c.args, g.geoUnit())
		}
		return c
	}},
	{3, func(g *gen) dcmd {
		k := g.key()
		c := oneKey(k, "GEOSEARCH", k)
		if g.maybe(50) {
			c.args = append(c.args, "FROMMEMBER", g.member())
		} else {
			lon, lat := g.geoCoord()
			c.args = append(c.args, "FROMLONLAT", lon, lat)
		}
		if g.maybe(50) {
			c.args = append(c.args, "BYRADIUS", g.pick([]string{"1", "5", "10", "50", "-1"}), g.geoUnit())
		} else {
			c.args = append(c.args, "BYBOX", g.pick([]string{"2", "10", "40"}), g.pick([]string{"2", "10", "40"}), g.geoUnit())
		}
		c.args = append(c.args, g.geoOptions(false)...)
		return c
	}},
	{2, func(g *gen) dcmd {
		ks := g.some(2, g.key)
		lon, lat := g.geoCoord()
		var c dcmd
		if g.maybe(50) {
			c = mkCmd(ks, "GEOSEARCHSTORE", ks[0], ks[1], "FROMLONLAT", lon, lat, "BYRADIUS", g.pick([]string{"5", "20", "100"}), "km")
			if g.maybe(40) {
				c.args = append(c.args, "STOREDIST")
			}
		} else {
			c = mkCmd(ks, "GEORADIUS", ks[1], lon, lat, g.pick([]string{"5", "20", "100"}), "km", g.pick([]string{"STORE", "STOREDIST"}), ks[0])
		}
		c.args = append(c.args, g.geoOptions(true)...)
		return c
	}},
	{1, func(g *gen) dcmd {
		k := g.key()
		c := oneKey(k, g.pick([]string{"GEORADIUSBYMEMBER", "GEORADIUSBYMEMBER_RO"}), k, g.member(), g.pick([]string{"1", "10", "100"}), "km")
		c.args = append(c.args, g.geoOptions(false)...)
		return c
	}},
}

var hllEntries = []genEntry{
	{6, func(g *gen) dcmd {
		k := g.key()
		return oneKey(k, append([]string{"PFADD", k}, g.some(g.r.IntN(4), g.member)...)...)
	}},
	{4, func(g *gen) dcmd {
		ks := g.some(1+g.r.IntN(3), g.key)
		return mkCmd(ks, append([]string{"PFCOUNT"}, ks...)...)
	}},
	{2, func(g *gen) dcmd {
		ks := g.some(1+g.r.IntN(3), g.key)
		return mkCmd(ks, append([]string{"PFMERGE"}, ks...)...)
	}},
}

// bulkHLL adds enough elements to turn a HyperLogLog dense (its sparse
// form passes 3000 bytes near 2,000 of them) or to grow a sparse one.
func bulkHLL(g *gen) dstep {
	k := g.key()
	c := oneKey(k, "PFADD", k)
	n := 100 + g.r.IntN(200)
	if g.maybe(50) {
		n = 2500
	}
	base := g.r.IntN(1000000)
	for i := range n {
		c.args = append(c.args, "h"+strconv.Itoa(base+i))
	}
	return dstep{c}
}

var streamEntries = []genEntry{
	{10, func(g *gen) dcmd {
		k := g.key()
		c := oneKey(k, "XADD", k)
		if g.maybe(10) {
			c.args = append(c.args, "NOMKSTREAM")
		}
		if g.maybe(15) {
			c.args = append(c.args, g.trimArgs()...)
		}
		c.args = append(c.args, g.streamID())
		for range 1 + g.r.IntN(2) {
			c.args = append(c.args, g.field(), g.value())
		}
		return c
	}},
	{3, func(g *gen) dcmd { k := g.key(); return oneKey(k, "XLEN", k) }},
	{4, func(g *gen) dcmd {
		k := g.key()
		c := oneKey(k, g.pick([]string{"XRANGE", "XREVRANGE"}), k, g.rangeID(), g.rangeID())
		if g.maybe(30) {
			c.args = append(c.args, "COUNT", g.count())
		}
		return c
	}},
	{3, func(g *gen) dcmd { // XREAD without BLOCK (or BLOCK inside MULTI, which does not wait)
		ks := g.some(1+g.r.IntN(2), g.key)
		args := []string{"XREAD"}
		if g.maybe(30) {
			args = append(args, "COUNT", g.count())
		}
		args = append(args, "STREAMS")
		args = append(args, ks...)
		for range ks {
			if g.maybe(20) {
				args = append(args, "$")
			} else {
				args = append(args, strings.TrimPrefix(g.rangeID(), "("))
			}
		}
		return mkCmd(ks, args...)
	}},
	{1, func(g *gen) dcmd {
		k := g.key()
		c := oneKey(k, "XSETID", k, strings.TrimPrefix(g.rangeID(), "("))
		if g.maybe(30) {
			c.args = append(c.args, "ENTRIESADDED", g.pick([]string{"0", "1", "5", "100", "-1", "x"}))
		}
		if g.maybe(30) {
			c.args = append(c.args, "MAXDELETEDID", strings.TrimPrefix(g.rangeID(), "("))
		}
		return c
	}},
	{2, func(g *gen) dcmd { k := g.key(); return oneKey(k, append([]string{"XTRIM", k}, g.trimArgs()...)...) }},
	{2, func(g *gen) dcmd {
		k := g.key()
		return oneKey(k, append([]string{"XDEL", k}, g.some(1+g.r.IntN(2), g.rangeID)...)...)
	}},
}

// sortEntry draws SORT and SORT_RO of a key: numeric or ALPHA, either
// order, a LIMIT, a STORE; with nosort, sometimes BY nosort (not for
// sets: Redis leaves a set's own order to its hash table). No BY or GET
// pattern: what it would read lies in other families' keys.
func sortEntry(nosort bool) genEntry {
	return genEntry{3, func(g *gen) dcmd {
		k := g.key()
		name := g.pick([]string{"SORT", "SORT_RO"})
		args := []string{name, k}
		keys := []string{k}
		if nosort && g.maybe(20) {
			args = append(args, "BY", "nosort")
		}
		if g.maybe(40) {
			args = append(args, g.pick([]string{"ASC", "DESC", "desc"}))
		}
		if g.maybe(50) {
			args = append(args, "ALPHA")
		}
		if g.maybe(30) {
			args = append(args, "LIMIT", g.index(), g.count())
		}
		if name == "SORT" && g.maybe(20) {
			d := g.key()
			args, keys = append(args, "STORE", d), append(keys, d)
		}
		return mkCmd(keys, args...)
	}}
}

// streamGroupEntries draw consumer-group commands on the stream keys.
// Nothing time-dependent is compared: XPENDING only in its summary form,
// XINFO only GROUPS, and a min-idle-time is 0 or 10^9 ms, which a delivery
// made now never reaches and one XCLAIM dated at TIME 1000 always has.
var streamGroupEntries = []genEntry{
	{4, func(g *gen) dcmd {
		k := g.key()
		// The subcommand is never mangled (g.kw): Redis finds a
		// subcommand by hashing its whole name, NULs included, and
		// compares names as C strings, so "CREATE\x00" is CREATE when its
		// hash falls in CREATE's bucket, which depends on the process's
		// random hash seed.
		c := oneKey(k, "XGROUP", g.pick([]string{"CREATE", "create"}), k, g.group(), g.groupID())
		if g.maybe(30) {
			c.args = append(c.args, g.kw("MKSTREAM"))
		}
		if g.maybe(15) {
			c.args = append(c.args, "ENTRIESREAD", g.pick([]string{"-1", "0", "2", "-2", "x"}))
		}
		return c
	}},
	{1, func(g *gen) dcmd {
		k := g.key()
		c := oneKey(k, "XGROUP", "SETID", k, g.group(), g.groupID())
		if g.maybe(30) {
			c.args = append(c.args, "ENTRIESREAD", g.pick([]string{"-1", "0", "3"}))
		}
		return c
	}},
	{1, func(g *gen) dcmd { k := g.key(); return oneKey(k, "XGROUP", "DESTROY", k, g.group()) }},
	{1, func(g *gen) dcmd {
		k := g.key()
		return oneKey(k, "XGROUP", g.pick([]string{"CREATECONSUMER", "DELCONSUMER"}), k, g.group(), g.consumer())
	}},
	{6, func(g *gen) dcmd {
		ks := g.some(1+g.r.IntN(2), g.key)
		args := []string{"XREADGROUP", "GROUP", g.group(), g.consumer()}
		if g.maybe(40) {
			args = append(args, "COUNT", g.count())
		}
		if g.maybe(15) {
			args = append(args, "NOACK")
		}
		args = append(args, "STREAMS")
		args = append(args, ks...)
		for range ks {
			if g.maybe(70) {
				args = append(args, ">")
			} else {
				args = append(args, strings.TrimPrefix(g.rangeID(), "("))
			}
		}
		return mkCmd(ks, args...)
	}},
	{3, func(g *gen) dcmd {
		k := g.key()
		return oneKey(k, append([]string{"XACK", k, g.group()}, g.some(1+g.r.IntN(3), g.rangeID)...)...)
	}},
	{2, func(g *gen) dcmd { k := g.key(); return oneKey(k, "XPENDING", k, g.group()) }},
	{3, func(g *gen) dcmd {
		k := g.key()
		c := oneKey(k, append([]string{"XCLAIM", k, g.group(), g.consumer(), g.minIdle()}, g.some(1+g.r.IntN(3), g.rangeID)...)...)
		if g.maybe(50) {
			c.args = append(c.args, "TIME", "1000")
		}
		if g.maybe(20) {
			c.args = append(c.args, "RETRYCOUNT", g.pick([]string{"0", "3", "x"}))
		}
		for _, o := range []string{"FORCE", "JUSTID"} {
			if g.maybe(25) {
				c.args = append(c.args, o)
			}
		}
		if g.maybe(15) {
			c.args = append(c.args, "LASTID", strings.TrimPrefix(g.rangeID(), "("))
		}
		return c
	}},
	{2, func(g *gen) dcmd {
		k := g.key()
		c := oneKey(k, "XAUTOCLAIM", k, g.group(), g.consumer(), g.minIdle(), g.rangeID())
		if g.maybe(40) {
			c.args = append(c.args, "COUNT", g.count())
		}
		if g.maybe(30) {
			c.args = append(c.args, "JUSTID")
		}
		return c
	}},
	{2, func(g *gen) dcmd { k := g.key(); return oneKey(k, "XINFO", "GROUPS", k) }},
}

func (g *gen) group() string    { return g.pick([]string{"g1", "g2", "g3"}) }
func (g *gen) consumer() string { return g.pick([]string{"c1", "c2", "c3"}) }
func (g *gen) minIdle() string  { return g.pick([]string{"0", "0", "1000000000", "x"}) }

// groupID is a group's start: "$", or an ID near those given out.
func (g *gen) groupID() string {
	if g.maybe(25) {
		return "$"
	}
	return strings.TrimPrefix(g.rangeID(), "(")
}

// Bulk steps: one write of 130 or more elements (or, for streams, a
// transaction of as many XADDs), to cross encoding thresholds.

func bulkHash(g *gen) dstep {
	k := g.key()
	c := oneKey(k, "HSET", k)
	for i := range 130 + g.r.IntN(20) {
		c.args = append(c.args, "bf"+strconv.Itoa(i), strconv.Itoa(i))
	}
	return dstep{c}
}

func bulkSet(g *gen) dstep {
	k := g.key()
	c := oneKey(k, "SADD", k)
	n, ints := 130+g.r.IntN(20), g.maybe(50)
	if ints && g.maybe(50) {
		n = 520
	}
	for i := range n {
		if ints {
			c.args = append(c.args, strconv.Itoa(i*3-50))
		} else {
			c.args = append(c.args, "bm"+strconv.Itoa(i))
		}
	}
	return dstep{c}
}

func bulkZSet(g *gen) dstep {
	k := g.key()
	c := oneKey(k, "ZADD", k)
	for i := range 130 + g.r.IntN(20) {
		c.args = append(c.args, strconv.Itoa(i%40), "bz"+strconv.Itoa(i))
	}
	return dstep{c}
}

func bulkList(g *gen) dstep {
	k := g.key()
	c := oneKey(k, g.pick([]string{"LPUSH", "RPUSH"}), k)
	for i := range 130 + g.r.IntN(100) {
		c.args = append(c.args, "bl"+strconv.Itoa(i%17))
	}
	return dstep{c}
}

func bulkStream(g *gen) dstep {
	k := g.key()
	st := dstep{{args: []string{"MULTI"}}}
	for range 110 + g.r.IntN(40) {
		st = append(st, oneKey(k, "XADD", k, strconv.FormatInt(g.sid, 10), "f", "v"))
		g.sid++
	}
	return append(st, dcmd{args: []string{"EXEC"}})
}

// diffCommandNames lists every command the generator may draw, for the
// probe of what the build under test knows.
var diffCommandNames = []string{
	"DEL", "EXISTS", "TYPE", "OBJECT", "EXPIRE", "PERSIST", "TTL", "RENAME", "COPY",
	"MOVE", "SWAPDB", "DUMP", "RESTORE", "COMMAND", "WATCH", "GETEX",
	"SET", "GET", "INCR", "APPEND", "LCS", "SETBIT", "GETBIT", "BITCOUNT", "BITPOS", "BITOP",
	"BITFIELD", "BITFIELD_RO",
	"HSET", "HSETNX", "HGET", "HMGET", "HGETALL", "HDEL", "HEXISTS", "HLEN", "HKEYS", "HVALS",
	"HSTRLEN", "HINCRBY", "HINCRBYFLOAT",
	"SADD", "SREM", "SMEMBERS", "SISMEMBER", "SMISMEMBER", "SCARD", "SINTER", "SUNION", "SDIFF",
	"SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE", "SMOVE", "SINTERCARD",
	"ZADD", "ZREM", "ZINCRBY", "ZSCORE", "ZMSCORE", "ZCARD", "ZCOUNT", "ZLEXCOUNT", "ZRANK",
	"ZREVRANK", "ZRANGE", "ZRANGEBYSCORE", "ZREVRANGEBYSCORE", "ZRANGEBYLEX", "ZREMRANGEBYSCORE",
	"ZREMRANGEBYRANK", "ZREMRANGEBYLEX", "ZPOPMIN", "ZPOPMAX",
	"ZUNION", "ZINTER", "ZDIFF", "ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE", "ZINTERCARD",
	"LPUSH", "RPUSH", "LPUSHX", "RPUSHX", "LPOP", "RPOP", "LRANGE", "LTRIM", "LINDEX", "LSET",
	"LLEN", "LREM", "LINSERT", "LPOS", "LMOVE", "RPOPLPUSH",
	"XADD", "XLEN", "XRANGE", "XREVRANGE", "XTRIM", "XDEL", "XREAD", "XSETID", "PFADD", "PFCOUNT", "PFMERGE",
	"XGROUP", "XREADGROUP", "XACK", "XPENDING", "XCLAIM", "XAUTOCLAIM", "XINFO", "SORT", "SORT_RO",
	"GEOADD", "GEOPOS", "GEOHASH", "GEODIST", "GEOSEARCH", "GEOSEARCHSTORE", "GEORADIUS", "GEORADIUSBYMEMBER",
	"GEORADIUSBYMEMBER_RO",
}
