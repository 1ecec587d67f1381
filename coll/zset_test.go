package coll

import (
	"bytes"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strconv"
	"testing"

	"github.com/turnstile/turnstile/shards"
)

// zref is the model: entries sorted by (score, member).
type zref []zrefEnt

type zrefEnt struct {
	m string
	s float64
}

func (r zref) sorted() zref {
	slices.SortFunc(r, func(a, b zrefEnt) int {
		switch {
		case a.s < b.s:
			return -1
		case a.s > b.s:
			return 1
		}
		return bytes.Compare([]byte(a.m), []byte(b.m))
	})
	return r
}

func (r zref) find(m string) int {
	for i, e := range r {
		if e.m == m {
			return i
		}
	}
	return -1
}

func zdump(z *ZSet) zref {
	var out zref
	z.Each(func(m []byte, s float64) bool {
		out = append(out, zrefEnt{string(m), s})
		return true
	})
	return out
}

func zargs(a ...string) [][]byte {
	out := make([][]byte, len(a))
	for i, s := range a {
		out[i] = []byte(s)
	}
	return out
}

func fmtScore(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func zcheckAll(t *testing.T, z *ZSet, ref zref, ctx string) {
	t.Helper()
	got := zdump(z)
	if len(got) != len(ref) || z.Len() != len(ref) {
		t.Fatalf("%s: %d members (Len %d), want %d\n got %v\nwant %v", ctx, len(got), z.Len(), len(ref), got, ref)
	}
	for i := range ref {
		if got[i].m != ref[i].m || got[i].s != ref[i].s {
			t.Fatalf("%s: entry %d = %v, want %v", ctx, i, got[i], ref[i])
		}
		s, ok := z.Score([]byte(ref[i].m))
		if !ok || s != ref[i].s {
			t.Fatalf("%s: score %q = %v %v", ctx, ref[i].m, s, ok)
		}
		r, s2, ok := z.Rank([]byte(ref[i].m), false)
		rr, _, _ := z.Rank([]byte(ref[i].m), true)
		if !ok || r != i || rr != len(ref)-1-i || s2 != s {
			t.Fatalf("%s: rank %q = %d/%d %v", ctx, ref[i].m, r, rr, ok)
		}
	}
	// Reverse walks and partial walks.
	var rev zref
	z.Walk(0, len(ref), true, func(m []byte, s float64) bool {
		rev = append(rev, zrefEnt{string(m), s})
		return true
	})
	for i := range rev {
		if rev[i] != ref[len(ref)-1-i] {
			t.Fatalf("%s: reverse entry %d = %v", ctx, i, rev[i])
		}
	}
	if len(ref) > 3 {
		var part zref
		z.Walk(1, 2, true, func(m []byte, s float64) bool {
			part = append(part, zrefEnt{string(m), s})
			return true
		})
		if len(part) != 2 || part[0] != ref[len(ref)-2] || part[1] != ref[len(ref)-3] {
			t.Fatalf("%s: walk(1,2,rev) = %v", ctx, part)
		}
	}
	if _, ok := z.Score([]byte("absent")); ok {
		t.Fatalf("%s: absent member has a score", ctx)
	}
	d, err := Decode(shards.KindZSet, z.AppendBinary(nil))
	if err != nil {
		t.Fatalf("%s: decode: %v", ctx, err)
	}
	if dz := d.(*ZSet); dz.Encoding() != z.Encoding() || !bytes.Equal(dz.AppendBinary(nil), z.AppendBinary(nil)) {
		t.Fatalf("%s: decoded differs", ctx)
	}
}

var zscores = []float64{0, 1, -1, 2, 2.5, -3.25, 1e300, math.Inf(1), math.Inf(-1), 1 << 62, -(1 << 62), 1<<62 + 1024, 1764600000000, 7, 7, 7}

func zmember(rng *rand.Rand, pool int) string {
	i := rng.Intn(pool)
	switch i % 7 {
	case 5:
		return "7-" + strconv.Itoa(i) // prefixed by a score's decimal form
	case 6:
		return "1764600000000" + strconv.Itoa(i%3) + "x"
	case 0:
		return strconv.Itoa(i*7919 - 300)
	case 1:
		return "0" + strconv.Itoa(i) // not canonical
	case 2:
		return "m" + strconv.Itoa(i)
	case 3:
		return strconv.FormatInt(1764600000000+int64(i), 10)
	}
	return string(rune('a'+i%26)) + strconv.Itoa(i)
}

// TestZSetMatchesModel drives sorted sets through both forms with random
// ops and checks every read against a sorted slice.
func TestZSetMatchesModel(t *testing.T) {
	for _, tc := range []struct {
		pool int
		long bool
	}{{40, false}, {300, false}, {60, true}} {
		rng := rand.New(rand.NewSource(int64(tc.pool)))
		z := NewZSet()
		var ref zref
		for step := 0; step < 3000; step++ {
			ctx := fmt.Sprintf("pool %d step %d", tc.pool, step)
			switch k := rng.Intn(10); {
			case k < 6:
				var args []string
				for j := rng.Intn(3); j >= 0; j-- {
					s := zscores[rng.Intn(len(zscores))]
					m := zmember(rng, tc.pool)
					if tc.long && rng.Intn(50) == 0 {
						m = string(bytes.Repeat([]byte{'x'}, 65)) + m
					}
					args = append(args, fmtScore(s), m)
				}
				var added int64
				for j := 0; j < len(args); j += 2 {
					s, _ := strconv.ParseFloat(args[j], 64)
					if i := ref.find(args[j+1]); i >= 0 {
						ref[i].s = s
					} else {
						ref = append(ref, zrefEnt{args[j+1], s})
						added++
					}
				}
				ref.sorted()
				n, _, err := Apply(z, OpZAdd, zargs(args...))
				if err != nil || n != added {
					t.Fatalf("%s: zadd %v: n=%d err=%v, want %d", ctx, args, n, err, added)
				}
			case k < 7:
				m := zmember(rng, tc.pool)
				want := int64(0)
				if i := ref.find(m); i >= 0 {
					ref = slices.Delete(ref, i, i+1)
					want = 1
				}
				if n, _, err := Apply(z, OpZRem, zargs(m)); err != nil || n != want {
					t.Fatalf("%s: zrem %s: %d %v", ctx, m, n, err)
				}
			case k < 8:
				a, b := zscores[rng.Intn(len(zscores))], zscores[rng.Intn(len(zscores))]
				minEx, maxEx := rng.Intn(2) == 0, rng.Intn(2) == 0
				lo, hi := fmtScore(a), fmtScore(b)
				if minEx {
					lo = "(" + lo
				}
				if maxEx {
					hi = "(" + hi
				}
				r, ok := ParseScoreRange([]byte(lo), []byte(hi))
				if !ok {
					t.Fatalf("range %s %s", lo, hi)
				}
				var keep zref
				var want int64
				for _, e := range ref {
					if r.gteMin(e.s) && r.lteMax(e.s) {
						want++
					} else {
						keep = append(keep, e)
					}
				}
				l, h := z.ScoreRanks(r)
				if int64(h-l) != want {
					t.Fatalf("%s: count %s %s = %d, want %d", ctx, lo, hi, h-l, want)
				}
				if rng.Intn(3) == 0 {
					n, _, err := Apply(z, OpZRemRangeByScore, zargs(lo, hi))
					if err != nil || n != want {
						t.Fatalf("%s: zremrangebyscore %s %s: %d %v, want %d", ctx, lo, hi, n, err, want)
					}
					ref = keep
				}
			case k < 9:
				if len(ref) == 0 {
					continue
				}
				a := rng.Intn(len(ref))
				b := a + rng.Intn(min(3, len(ref)-a))
				n, _, err := Apply(z, OpZRemRangeByRank, zargs(strconv.Itoa(a), strconv.Itoa(b)))
				if err != nil || n != int64(b-a+1) {
					t.Fatalf("%s: zremrangebyrank %d %d: %d %v", ctx, a, b, n, err)
				}
				ref = slices.Delete(ref, a, b+1)
			default:
				zcheckAll(t, z, ref, ctx)
			}
		}
		zcheckAll(t, z, ref, "end")
		if tc.pool == 300 && z.Encoding() != "skiplist" {
			t.Fatalf("encoding %s with %d members", z.Encoding(), z.Len())
		}
		c := z.CloneObject().(*ZSet)
		Apply(c, OpZAdd, zargs("12345", ref[0].m))
		if s, _ := z.Score([]byte(ref[0].m)); s != ref[0].s {
			t.Fatal("clone shares state")
		}
	}
}

// TestZSetLex checks lexicographic ranges (all scores equal) in both forms.
func TestZSetLex(t *testing.T) {
	for _, n := range []int{20, 200} {
		z := NewZSet()
		var ref []string
		for i := 0; i < n; i++ {
			m := fmt.Sprintf("%c%d", 'a'+i%26, i)
			if i%3 == 0 {
				m = strconv.Itoa(i * 13)
			}
			Apply(z, OpZAdd, zargs("0", m))
			ref = append(ref, m)
		}
		slices.Sort(ref)
		bounds := []string{"-", "+", "[a", "(a", "[b5", "(b5", "[1", "(13", "[z", "[", "(", "[c10", "(c10"}
		for _, lo := range bounds {
			for _, hi := range bounds {
				r, _ := ParseLexRange([]byte(lo), []byte(hi))
				var want []string
				for _, m := range ref {
					if r.gteMin([]byte(m)) && r.lteMax([]byte(m)) {
						want = append(want, m)
					}
				}
				l, h := z.LexRanks(r)
				var got []string
				z.Walk(l, h-l, false, func(m []byte, _ float64) bool {
					got = append(got, string(m))
					return true
				})
				if !slices.Equal(got, want) {
					t.Fatalf("n=%d %s %s: got %v, want %v", n, lo, hi, got, want)
				}
			}
		}
		c := z.CloneObject().(*ZSet)
		k, _, err := Apply(c, OpZRemRangeByLex, zargs("[b", "(c"))
		want := 0
		for _, m := range ref {
			if m >= "b" && m < "c" {
				want++
			}
		}
		if err != nil || int(k) != want || c.Len() != n-want {
			t.Fatalf("zremrangebylex: %d %v, want %d", k, err, want)
		}
	}
}

func TestZSetPackedForm(t *testing.T) {
	z := NewZSet()
	Apply(z, OpZAdd, zargs("-0", "a", "1764600000000", "1764600000000", "2.5", "007"))
	if z.Encoding() != "listpack" {
		t.Fatal(z.Encoding())
	}
	if s, _ := z.Score([]byte("a")); math.Signbit(s) {
		t.Fatal("packed form kept -0 (Redis's listpack stores 0)")
	}
	// tag+score+member: 1+0+2 for a, 1+8+4 for 007, 1+6+0 for the timestamp.
	if len(z.packed) != 3+13+7 {
		t.Fatalf("packed %d bytes: %x", len(z.packed), z.packed)
	}
	if got := fmt.Sprint(zdump(z)); got != "[{a 0} {007 2.5} {1764600000000 1.7646e+12}]" {
		t.Fatal(got)
	}
	if _, _, err := Apply(z, OpZAdd, zargs("nan", "x")); err == nil {
		t.Fatal("NaN score applied")
	}
	if _, _, err := Apply(z, OpZRemRangeByRank, zargs("1", "5")); err == nil {
		t.Fatal("rank out of range applied")
	}
	// A member that starts with its integral score stores only the rest.
	before := len(z.packed)
	Apply(z, OpZAdd, zargs("1764600000001", "1764600000001-17"))
	if len(z.packed)-before != 1+6+1+3 {
		t.Fatalf("prefixed member took %d bytes", len(z.packed)-before)
	}
	Apply(z, OpZAdd, zargs("1764600000002", "1764600000001-17"))
	if s, _ := z.Score([]byte("1764600000001-17")); s != 1764600000002 || z.Len() != 4 {
		t.Fatalf("moved prefixed member: %v, %d members", s, z.Len())
	}
	Apply(z, OpZRem, zargs("1764600000001-17"))
	// Thresholds.
	for i := 0; i < maxPackedEntries-3; i++ {
		Apply(z, OpZAdd, zargs(strconv.Itoa(i), "m"+strconv.Itoa(i)))
	}
	if z.Len() != maxPackedEntries || z.Encoding() != "listpack" {
		t.Fatalf("%d %s", z.Len(), z.Encoding())
	}
	Apply(z, OpZAdd, zargs("1", "one more"))
	if z.Encoding() != "skiplist" {
		t.Fatal(z.Encoding())
	}
	y := NewZSet()
	Apply(y, OpZAdd, zargs("1", string(bytes.Repeat([]byte{'x'}, 64))))
	if y.Encoding() != "listpack" {
		t.Fatal(y.Encoding())
	}
	Apply(y, OpZAdd, zargs("1", string(bytes.Repeat([]byte{'x'}, 65))))
	if y.Encoding() != "skiplist" {
		t.Fatal(y.Encoding())
	}
	// Skiplist keeps -0, and an equal score (0 == -0) does not move it.
	Apply(y, OpZAdd, zargs("-0", "z"))
	Apply(y, OpZAdd, zargs("0", "z"))
	if s, _ := y.Score([]byte("z")); !math.Signbit(s) {
		t.Fatal("skiplist lost -0")
	}
}

func TestParseScore(t *testing.T) {
	for s, want := range map[string]float64{
		"1": 1, "-1": -1, "+5": 5, "007": 7, ".5": 0.5, "5.": 5, "1e3": 1000, "inf": math.Inf(1),
		"+inf": math.Inf(1), "-inf": math.Inf(-1), "-Infinity": math.Inf(-1), "0x10": 16, "0x1p3": 8,
		"4e-320": 4e-320, "0e-400": 0, "123456789012345678": 123456789012345678,
	} {
		if f, ok := ParseScore([]byte(s)); !ok || f != want {
			t.Errorf("ParseScore(%q) = %v %v, want %v", s, f, ok, want)
		}
	}
	for _, s := range []string{"", " 1", "1 ", "nan", "NaN", "1e400", "-1e400", "1e-400", "1_0", "0x", "abc", "1e", "--1", "(1"} {
		if f, ok := ParseScore([]byte(s)); ok {
			t.Errorf("ParseScore(%q) = %v, want an error", s, f)
		}
	}
	for f, want := range map[float64]string{
		0.1: "0.10000000000000001", 1e20: "1e+20", 1.5e-7: "1.4999999999999999e-07", 3: "3",
		math.Inf(1): "inf", math.Inf(-1): "-inf", 123456789012345678: "1.2345678901234568e+17",
	} {
		if got := string(AppendScore(nil, f)); got != want {
			t.Errorf("AppendScore(%v) = %s, want %s", f, got, want)
		}
	}
	for f, want := range map[float64]string{
		123456789012345678: "123456789012345680", 1 << 62: "4611686018427387904", 1<<62 + 1024: "4.6116860184273889e+18",
		math.Copysign(0, -1): "-0", 0.5: "0.5",
	} {
		if got := string(AppendScoreString(nil, f)); got != want {
			t.Errorf("AppendScoreString(%v) = %s, want %s", f, got, want)
		}
	}
}

func TestCanonicalInt(t *testing.T) {
	for _, s := range []string{"0", "1", "-1", "9223372036854775807", "-9223372036854775808", "1764600000000"} {
		if v, ok := canonicalInt([]byte(s)); !ok || strconv.FormatInt(v, 10) != s {
			t.Errorf("%s: %d %v", s, v, ok)
		}
	}
	for _, s := range []string{"", "-", "-0", "01", "+1", "9223372036854775808", "-9223372036854775809", "1a", "99999999999999999999"} {
		if _, ok := canonicalInt([]byte(s)); ok {
			t.Errorf("%s accepted", s)
		}
	}
}

func FuzzDecodeZSet(f *testing.F) {
	z := NewZSet()
	Apply(z, OpZAdd, zargs("1", "a", "2.5", "17", "inf", "-3", "5", "5-x"))
	f.Add(z.AppendBinary(nil))
	for i := 0; i < 130; i++ {
		Apply(z, OpZAdd, zargs(strconv.Itoa(i), strconv.Itoa(i*3)))
	}
	f.Add(z.AppendBinary(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decodeZSet(b)
		if err != nil {
			return
		}
		if got := v.AppendBinary(nil); !bytes.Equal(got, b) {
			t.Fatalf("re-encoded %x, read %x", got, b)
		}
		// The decoded value must be usable.
		v.Each(func([]byte, float64) bool { return true })
		Apply(v, OpZAdd, zargs("5", "new"))
		if v.Len() > 0 {
			Apply(v, OpZRemRangeByRank, zargs("0", "0"))
		}
	})
}

func TestParseScoreRange(t *testing.T) {
	for _, c := range []struct {
		min, max string
		ok       bool
		r        ScoreRange
	}{
		{"1", "2", true, ScoreRange{Min: 1, Max: 2}},
		{"(1", "(2", true, ScoreRange{Min: 1, Max: 2, MinEx: true, MaxEx: true}},
		{"(", "", true, ScoreRange{MinEx: true}},
		{" 1", "1e400", true, ScoreRange{Min: 1, Max: math.Inf(1)}},
		{"-inf", "+inf", true, ScoreRange{Min: math.Inf(-1), Max: math.Inf(1)}},
		{"1e-400", "0x10", true, ScoreRange{Max: 16}},
		{"((1", "2", false, ScoreRange{}},
		{"1", "nan", false, ScoreRange{}},
		{"x", "1", false, ScoreRange{}},
		{" ", "1", false, ScoreRange{}},
		{"1 ", "1", false, ScoreRange{}},
	} {
		r, ok := ParseScoreRange([]byte(c.min), []byte(c.max))
		if ok != c.ok || (ok && r != c.r) {
			t.Errorf("%q %q: %+v %v", c.min, c.max, r, ok)
		}
	}
}

// FuzzZSetApply applies arbitrary ops with arbitrary arguments (as a
// damaged log could hold): Apply must not panic, and the value must stay
// well-formed (its persistent form decodes to the same bytes).
func FuzzZSetApply(f *testing.F) {
	f.Add(uint8(OpZAdd), []byte("1\x00a\x002.5\x00007"), false)
	f.Add(uint8(OpZRemRangeByScore), []byte("(1\x00+inf"), true)
	f.Add(uint8(OpZRemRangeByLex), []byte("[a\x00(b"), false)
	f.Add(uint8(OpZRemRangeByRank), []byte("0\x003"), true)
	f.Fuzz(func(t *testing.T, op uint8, packed []byte, big bool) {
		z := NewZSet()
		n := 20
		if big {
			n = 150
		}
		for i := 0; i < n; i++ {
			Apply(z, OpZAdd, zargs(strconv.Itoa(i%7), strconv.Itoa(i*31)))
		}
		args := bytes.Split(packed, []byte{0})
		Apply(z, Op(op%uint8(numOps)), args)
		b := z.AppendBinary(nil)
		d, err := decodeZSet(b)
		if err != nil {
			t.Fatalf("after %s %q: %v", Op(op%uint8(numOps)), args, err)
		}
		if !bytes.Equal(d.AppendBinary(nil), b) || d.Len() != z.Len() {
			t.Fatal("round trip differs")
		}
	})
}

// TestZSetFormatPinned pins the persistent form (snapshots and logs hold
// it): a change to the packed encoding must come with a new form byte.
func TestZSetFormatPinned(t *testing.T) {
	z := NewZSet()
	Apply(z, OpZAdd, zargs("1764600000000", "1764600000000", "1764600000000", "1764600000000-7", "2.5", "a", "-1", "-5"))
	big := NewZSet()
	Apply(big, OpZAdd, zargs("1", string(bytes.Repeat([]byte{'x'}, 65)), "-0", "b"))
	for _, c := range []struct {
		z    *ZSet
		want string
	}{
		// Packed: form 0, 4 members, 31 bytes: (-1, "-5") tag 11 in 1+1
		// bytes; (2.5, "a") tag 99, a float64 and a length-prefixed
		// string; (1764600000000, itself) tag 06, the member 0 bytes;
		// (1764600000000, "1764600000000-7") tag a6 and "-7".
		{z, "00041f110107990000000000000440016106005cb6b43503a6005cb6b43503022d37"},
		// Skiplist: form 1, 2 members, each a length-prefixed member and a
		// float64 (negative zero kept).
		{big, "010201620000000000000080417878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878000000000000f03f"},
	} {
		if got := fmt.Sprintf("%x", c.z.AppendBinary(nil)); got != c.want {
			t.Errorf("form %s", got)
		}
	}
}
