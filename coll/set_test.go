package coll

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/turnstile/turnstile/shards"
)

func bs(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func setMembers(s *Set) []string {
	var out []string
	s.Each(func(m []byte) bool { out = append(out, string(m)); return true })
	return out
}

// checkSet compares every read of s against ref, and the persistent form.
func checkSet(t *testing.T, s *Set, ref map[string]bool) {
	t.Helper()
	if s.Len() != len(ref) {
		t.Fatalf("len %d, want %d (%s)", s.Len(), len(ref), s.Encoding())
	}
	got := setMembers(s)
	seen := map[string]bool{}
	for i, m := range got {
		if !ref[m] || seen[m] {
			t.Fatalf("Each gave %q (member %v, seen %v)", m, ref[m], seen[m])
		}
		seen[m] = true
		if at := string(s.At(i, nil)); at != m {
			t.Fatalf("At(%d) = %q, Each gave %q", i, at, m)
		}
		if !s.IsMember([]byte(m)) {
			t.Fatalf("IsMember(%q) false", m)
		}
	}
	if s.enc == encIntset && !slices.IsSortedFunc(got, func(a, b string) int {
		x, _ := strconv.ParseInt(a, 10, 64)
		y, _ := strconv.ParseInt(b, 10, 64)
		return cmp.Compare(x, y)
	}) {
		t.Fatalf("intset not ascending: %v", got)
	}
	bin := s.AppendBinary(nil)
	d, err := Decode(shards.KindSet, bin)
	if err != nil {
		t.Fatal(err)
	}
	ds := d.(*Set)
	if ds.Encoding() != s.Encoding() || !slices.Equal(setMembers(ds), got) || !bytes.Equal(ds.AppendBinary(nil), bin) {
		t.Fatalf("decoded %s %v, want %s %v", ds.Encoding(), setMembers(ds), s.Encoding(), got)
	}
}

// TestSetMatchesMap drives sets of each kind of member through their
// encodings and checks every read against a plain map.
func TestSetMatchesMap(t *testing.T) {
	gens := map[string]func(r *rand.Rand) string{
		"ints": func(r *rand.Rand) string { return strconv.Itoa(r.IntN(700) - 350) },
		"wide": func(r *rand.Rand) string { return strconv.FormatInt(r.Int64N(1<<40)-1<<39, 10) },
		"mixed": func(r *rand.Rand) string {
			return []string{"", "m", "007", "-0", "+1"}[r.IntN(5)] + strconv.Itoa(r.IntN(200))
		},
		"long": func(r *rand.Rand) string { return strings.Repeat("x", 60+r.IntN(8)) + strconv.Itoa(r.IntN(150)) },
		"strs": func(r *rand.Rand) string { return "s" + strconv.Itoa(r.IntN(160)) },
		"limits": func(r *rand.Rand) string {
			return strconv.FormatInt([]int64{math.MinInt64, math.MaxInt64, 0, -1, 1 << 15, -1<<15 - 1, 1 << 31}[r.IntN(7)], 10)
		},
	}
	for name, gen := range gens {
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			s := NewSet()
			ref := map[string]bool{}
			encs := map[string]bool{}
			for i := 0; i < 2000; i++ {
				var args []string
				for range 1 + r.IntN(4) {
					args = append(args, gen(r))
				}
				op := OpSAdd
				if r.IntN(3) == 0 {
					op = OpSRem
				}
				var want int64
				for _, a := range args {
					if ref[a] == (op == OpSRem) {
						want++
					}
					ref[a] = op == OpSAdd
					if op == OpSRem {
						delete(ref, a)
					}
				}
				n, _, err := Apply(s, op, bs(args...))
				if err != nil || n != want {
					t.Fatalf("%s %v: n=%d want %d err=%v", op, args, n, want, err)
				}
				for _, a := range args {
					if s.IsMember([]byte(a)) != ref[a] {
						t.Fatalf("IsMember(%q) = %v after %s %v", a, !ref[a], op, args)
					}
				}
				encs[s.Encoding()] = true
				if i%97 == 0 {
					checkSet(t, s, ref)
				}
			}
			checkSet(t, s, ref)
			c := s.CloneObject().(*Set)
			Apply(c, OpSAdd, bs("clone-only"))
			Apply(c, OpSRem, bs(setMembers(c)[0]))
			checkSet(t, s, ref)
			t.Logf("encodings seen: %v", encs)
		})
	}
}

func TestSetEncodings(t *testing.T) {
	s := NewSet()
	Apply(s, OpSAdd, bs("3", "-1", "2", "3"))
	if s.Encoding() != "intset" || fmt.Sprint(setMembers(s)) != "[-1 2 3]" {
		t.Fatalf("%s %v", s.Encoding(), setMembers(s))
	}
	// Widths 2, 4, 8: a wide member widens the array, a removal does not narrow it.
	Apply(s, OpSAdd, bs("70000"))
	if s.w != 4 {
		t.Fatalf("width %d", s.w)
	}
	Apply(s, OpSAdd, bs("-9223372036854775808"))
	Apply(s, OpSRem, bs("-9223372036854775808", "70000"))
	if s.w != 8 || fmt.Sprint(setMembers(s)) != "[-1 2 3]" || s.IsMember([]byte("70000")) {
		t.Fatalf("width %d %v", s.w, setMembers(s))
	}
	// Non-canonical integers are strings: the intset becomes a listpack,
	// members in ascending order, then the new one.
	Apply(s, OpSAdd, bs("02"))
	if s.Encoding() != "listpack" || fmt.Sprint(setMembers(s)) != "[-1 2 3 02]" {
		t.Fatalf("%s %v", s.Encoding(), setMembers(s))
	}
	Apply(s, OpSRem, bs("02"))
	Apply(s, OpSAdd, bs("1"))
	if s.Encoding() != "listpack" || fmt.Sprint(setMembers(s)) != "[-1 2 3 1]" {
		t.Fatalf("%s %v", s.Encoding(), setMembers(s))
	}
	// A 65-byte member makes a hashtable; 64 bytes does not.
	Apply(s, OpSAdd, [][]byte{bytes.Repeat([]byte("a"), 64)})
	if s.Encoding() != "listpack" {
		t.Fatal(s.Encoding())
	}
	Apply(s, OpSAdd, [][]byte{bytes.Repeat([]byte("a"), 65)})
	if s.Encoding() != "hashtable" || s.Len() != 6 {
		t.Fatal(s.Encoding(), s.Len())
	}

	// 128 strings fit a listpack, the 129th does not.
	s = NewSet()
	for i := range 128 {
		Apply(s, OpSAdd, bs("m"+strconv.Itoa(i)))
	}
	if s.Encoding() != "listpack" {
		t.Fatal(s.Encoding())
	}
	Apply(s, OpSAdd, bs("m0"))
	Apply(s, OpSAdd, bs("m128"))
	if s.Encoding() != "hashtable" || s.Len() != 129 {
		t.Fatal(s.Encoding(), s.Len())
	}

	// 512 integers fit an intset, the 513th does not.
	s = NewSet()
	for i := range 512 {
		Apply(s, OpSAdd, bs(strconv.Itoa(i*7)))
	}
	if s.Encoding() != "intset" {
		t.Fatal(s.Encoding())
	}
	Apply(s, OpSAdd, bs("1"))
	if s.Encoding() != "hashtable" || s.Len() != 513 {
		t.Fatal(s.Encoding(), s.Len())
	}
	// An intset of 128 members takes a string as a hashtable.
	s = NewSet()
	for i := range 128 {
		Apply(s, OpSAdd, bs(strconv.Itoa(i)))
	}
	Apply(s, OpSAdd, bs("x"))
	if s.Encoding() != "hashtable" {
		t.Fatal(s.Encoding())
	}

	// Redis 7.2's size hint: SADD of more arguments than the encoding
	// holds converts ahead, even when they repeat.
	hint := func(first string, n int) string {
		s := NewSet()
		args := bs(first)
		for len(args) < n {
			args = append(args, []byte("1"))
		}
		Apply(s, OpSAdd, args)
		return s.Encoding()
	}
	for _, c := range []struct {
		first string
		n     int
		want  string
	}{{"1", 512, "intset"}, {"1", 513, "hashtable"}, {"a", 128, "listpack"}, {"a", 129, "hashtable"}} {
		if got := hint(c.first, c.n); got != c.want {
			t.Errorf("SADD %s + %d args: %s, want %s", c.first, c.n, got, c.want)
		}
	}
	s = NewSet()
	Apply(s, OpSAdd, bs("a"))
	Apply(s, OpSAdd, bytes.Fields(bytes.Repeat([]byte("a "), 129)))
	if s.Encoding() != "hashtable" || s.Len() != 1 {
		t.Fatal(s.Encoding(), s.Len())
	}

	if _, _, err := Apply(s, OpSAdd, nil); err == nil {
		t.Fatal("SADD without members applied")
	}
	if _, _, err := Apply(s, OpHSet, bs("f", "v")); err == nil {
		t.Fatal("HSET applied to a set")
	}
	if n, changed, _ := Apply(s, OpSRem, bs("nope")); n != 0 || changed {
		t.Fatal("SREM of a non-member changed the set")
	}
}

// TestSetMemoryUsage checks the figure covers the members' bytes in
// each encoding.
func TestSetMemoryUsage(t *testing.T) {
	s := NewSet()
	payload := 0
	for i := range 600 {
		m := strconv.Itoa(i * 1000)
		if i >= 300 {
			m = "s" + m
		}
		Apply(s, OpSAdd, bs(m))
		payload += len(m)
		min := s.Len() * 2 // intset: at least 2 bytes a member
		if s.enc != encIntset {
			min = payload
		}
		if got := s.MemoryUsage(); got < min {
			t.Fatalf("%d members (%s): %d bytes, want at least %d", s.Len(), s.Encoding(), got, min)
		}
	}
	if s.Encoding() != "hashtable" {
		t.Fatal(s.Encoding())
	}
}

// TestStrTableScan checks the cursor never skips a member present for a
// whole scan while members are removed and added between calls.
func TestStrTableScan(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 50 {
		s := NewSet()
		for i := range 300 {
			Apply(s, OpSAdd, bs("k"+strconv.Itoa(i)))
		}
		removed := map[string]bool{}
		seen := map[string]bool{}
		cursor, calls := uint64(0), 0
		for {
			cursor = s.Scan(cursor, 1+r.IntN(20), func(m []byte) { seen[string(m)] = true })
			calls++
			if cursor == 0 {
				break
			}
			for range r.IntN(6) {
				m := string(s.At(r.IntN(s.Len()), nil))
				Apply(s, OpSRem, bs(m))
				removed[m] = true
			}
			Apply(s, OpSAdd, bs(fmt.Sprintf("new%d-%d", round, calls)))
		}
		for i := range 300 {
			if m := "k" + strconv.Itoa(i); !removed[m] && !seen[m] {
				t.Fatalf("round %d: %s never returned", round, m)
			}
		}
	}
	// A small set is returned whole, cursor 0, whatever the cursor.
	s := NewSet()
	Apply(s, OpSAdd, bs("a", "b"))
	var got []string
	if c := s.Scan(12345, 1, func(m []byte) { got = append(got, string(m)) }); c != 0 || len(got) != 2 {
		t.Fatal(c, got)
	}
}

func TestHashAtAndScan(t *testing.T) {
	for _, n := range []int{3, 200} {
		h := NewHash()
		for i := range n {
			Apply(h, OpHSet, bs("f"+strconv.Itoa(i), "v"+strconv.Itoa(i)))
		}
		i := 0
		h.Each(func(f, v []byte) bool {
			af, av := h.At(i)
			if !bytes.Equal(af, f) || !bytes.Equal(av, v) {
				t.Fatalf("At(%d) = %s %s, Each %s %s", i, af, av, f, v)
			}
			i++
			return true
		})
		seen := map[string]string{}
		cursor := uint64(0)
		for {
			cursor = h.Scan(cursor, 10, func(f, v []byte) { seen[string(f)] = string(v) })
			if cursor == 0 {
				break
			}
		}
		if len(seen) != n || seen["f1"] != "v1" {
			t.Fatalf("scan saw %d fields", len(seen))
		}
	}
}

func TestDecodeSetRejects(t *testing.T) {
	for name, b := range map[string][]byte{
		"empty":         {},
		"bad tag":       {3, 0},
		"intset order":  {encIntset, 2, 4, 2},
		"intset dup":    {encIntset, 2, 2, 2},
		"non-minimal":   {encIntset, 1, 0x80, 0},
		"listpack dup":  {encListpack, 2, 1, 'a', 1, 'a'},
		"ht dup":        {encHT, 2, 1, 'a', 1, 'a'},
		"truncated":     {encHT, 2, 1, 'a', 1},
		"trailing":      {encListpack, 1, 1, 'a', 0},
		"huge count":    {encHT, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"long listpack": append([]byte{encListpack, 1, 65}, bytes.Repeat([]byte("a"), 65)...),
	} {
		if _, err := Decode(shards.KindSet, b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

func FuzzDecodeSet(f *testing.F) {
	for _, members := range [][]string{{"1", "-5", "70000"}, {"a", "1"}, {strings.Repeat("z", 70)}} {
		s := NewSet()
		Apply(s, OpSAdd, bs(members...))
		f.Add(s.AppendBinary(nil))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeSet(b)
		if err != nil {
			return
		}
		if got := s.AppendBinary(nil); !bytes.Equal(got, b) {
			t.Fatalf("re-encoded %x, read %x", got, b)
		}
		// The decoded value works: every member is found, and removes.
		for _, m := range setMembers(s) {
			if !s.IsMember([]byte(m)) {
				t.Fatalf("member %q not found", m)
			}
		}
		n := s.Len()
		Apply(s, OpSAdd, bs("fuzz-new"))
		if s.Len() != n+1 {
			t.Fatal("add to decoded set")
		}
	})
}

// FuzzSetOps applies ops from the fuzzer and checks them against a map.
func FuzzSetOps(f *testing.F) {
	f.Add([]byte("\x01a\x011\x00-3\x017\x02x"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := NewSet()
		ref := map[string]bool{}
		for len(b) > 1 {
			op, l := b[0], int(b[1])%8
			b = b[2:]
			l = min(l, len(b))
			m := string(b[:l])
			b = b[l:]
			if op%2 == 0 {
				Apply(s, OpSAdd, bs(m))
				ref[m] = true
			} else {
				Apply(s, OpSRem, bs(m))
				delete(ref, m)
			}
		}
		checkSet(t, s, ref)
	})
}

func benchSetMembers(kind string, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		if kind == "int" {
			out[i] = []byte(strconv.Itoa(i * 3))
		} else {
			out[i] = []byte("member:" + strconv.Itoa(i))
		}
	}
	return out
}

func BenchmarkSetAdd(b *testing.B) {
	for _, c := range []struct {
		kind string
		n    int
	}{{"int", 100}, {"str", 100}, {"str", 1000}} {
		members := benchSetMembers(c.kind, c.n)
		b.Run(fmt.Sprintf("%s-%d", c.kind, c.n), func(b *testing.B) {
			b.ReportAllocs()
			args := make([][]byte, 1)
			for b.Loop() {
				s := NewSet()
				for _, m := range members {
					args[0] = m
					Apply(s, OpSAdd, args)
				}
			}
		})
	}
}

func BenchmarkSetIsMember(b *testing.B) {
	for _, c := range []struct {
		kind string
		n    int
	}{{"int", 500}, {"str", 100}, {"str", 1000}} {
		members := benchSetMembers(c.kind, c.n)
		s := NewSet()
		for _, m := range members {
			Apply(s, OpSAdd, [][]byte{m})
		}
		b.Run(fmt.Sprintf("%s-%s-%d", s.Encoding(), c.kind, c.n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if !s.IsMember(members[i]) {
					b.Fatal("missing")
				}
				i = (i + 7) % len(members)
			}
		})
	}
}
