package coll

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/turnstile/turnstile/shards"
)

// listMem recomputes what MemoryUsage keeps as a running count.
func listMem(l *List) int {
	m := listBaseMem + cap(l.one.buf)
	for _, nd := range l.nodes {
		m += cap(nd.buf) + listNodeMem
	}
	return m
}

func listElems(l *List) []string {
	var out []string
	l.Each(0, false, func(_ int, e []byte) bool { out = append(out, string(e)); return true })
	return out
}

// checkList compares l with ref through every read.
func checkList(t *testing.T, l *List, ref []string, what string) {
	t.Helper()
	if l.Len() != len(ref) {
		t.Fatalf("%s: len %d, want %d", what, l.Len(), len(ref))
	}
	if got := listElems(l); fmt.Sprint(got) != fmt.Sprint(ref) && len(ref) > 0 {
		t.Fatalf("%s: elements differ\n got %q\nwant %q", what, got, ref)
	}
	var rev []string
	if len(ref) > 0 {
		l.Each(len(ref)-1, true, func(i int, e []byte) bool {
			if ref[i] != string(e) {
				t.Fatalf("%s: reverse element %d = %q, want %q", what, i, e, ref[i])
			}
			rev = append(rev, string(e))
			return true
		})
	}
	if len(rev) != len(ref) {
		t.Fatalf("%s: reverse walk saw %d elements", what, len(rev))
	}
	for i := range ref {
		if e, ok := l.Index(int64(i)); !ok || string(e) != ref[i] {
			t.Fatalf("%s: Index(%d) = %q %v, want %q", what, i, e, ok, ref[i])
		}
		if e, _ := l.Index(int64(i - len(ref))); string(e) != ref[i] {
			t.Fatalf("%s: Index(%d) = %q", what, i-len(ref), e)
		}
	}
	if _, ok := l.Index(int64(len(ref))); ok {
		t.Fatalf("%s: Index past the end found", what)
	}
	if m := listMem(l); m != l.MemoryUsage() {
		t.Fatalf("%s: MemoryUsage %d, recomputed %d", what, l.MemoryUsage(), m)
	}
	lp := lpHeader
	for _, e := range ref {
		lp += lpEntrySize([]byte(e))
	}
	if !l.quick && l.one.lp != lp {
		t.Fatalf("%s: listpack size %d, want %d", what, l.one.lp, lp)
	}
	for _, nd := range l.nodes {
		if nd.n == 0 {
			t.Fatalf("%s: empty node in the chain", what)
		}
	}
}

func apply(t *testing.T, v Value, op Op, args ...string) int64 {
	t.Helper()
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	n, _, err := Apply(v, op, b)
	if err != nil {
		t.Fatalf("%s %q: %v", op, args, err)
	}
	return n
}

// TestListMatchesSlice drives lists through random ops in both forms and
// compares them with a plain slice after each.
func TestListMatchesSlice(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		l := NewList()
		var ref []string
		elem := func() string {
			switch r.IntN(10) {
			case 0:
				return strconv.Itoa(r.IntN(1 << 20))
			case 1:
				return string(bytes.Repeat([]byte{'b'}, r.IntN(300)))
			case 2:
				if seed%2 == 0 {
					return string(bytes.Repeat([]byte{'B'}, 9000)) // its own node
				}
			}
			return "e" + strconv.Itoa(r.IntN(40))
		}
		target := 200 + r.IntN(5000)
		for step := 0; step < 3000; step++ {
			what := fmt.Sprintf("seed %d step %d", seed, step)
			switch k := r.IntN(10); {
			case k < 3 || len(ref) < target/2 && k < 6:
				var args []string
				for range 1 + r.IntN(5) {
					args = append(args, elem())
				}
				if r.IntN(2) == 0 {
					if n := apply(t, l, OpRPush, args...); n != int64(len(ref)+len(args)) {
						t.Fatalf("%s: rpush n=%d", what, n)
					}
					ref = append(ref, args...)
				} else {
					apply(t, l, OpLPush, args...)
					for _, a := range args {
						ref = append([]string{a}, ref...)
					}
				}
			case k == 3:
				c := r.IntN(8)
				n := apply(t, l, OpLPop, strconv.Itoa(c))
				if want := min(c, len(ref)); n != int64(want) {
					t.Fatalf("%s: lpop %d n=%d", what, c, n)
				}
				ref = ref[min(c, len(ref)):]
			case k == 4:
				c := r.IntN(8)
				apply(t, l, OpRPop, strconv.Itoa(c))
				ref = ref[:len(ref)-min(c, len(ref))]
			case k == 5 && len(ref) > 0:
				i, e := r.IntN(len(ref)), elem()
				apply(t, l, OpLSet, strconv.Itoa(i), e)
				ref[i] = e
			case k == 6:
				i, e := r.IntN(len(ref)+1), elem()
				apply(t, l, OpLInsert, strconv.Itoa(i), e)
				ref = append(ref[:i], append([]string{e}, ref[i:]...)...)
			case k == 7 && r.IntN(10) == 0:
				if len(ref) == 0 {
					break
				}
				start := r.IntN(len(ref))
				stop := start + r.IntN(len(ref)-start)
				if r.IntN(5) == 0 {
					start = stop + 1
				}
				n := apply(t, l, OpLTrim, strconv.Itoa(start), strconv.Itoa(stop))
				before := len(ref)
				if stop < start {
					ref = nil
				} else {
					ref = append([]string(nil), ref[start:stop+1]...)
				}
				if n != int64(before-len(ref)) {
					t.Fatalf("%s: ltrim n=%d", what, n)
				}
			case k == 8:
				e := "e" + strconv.Itoa(r.IntN(40))
				c := r.IntN(7) - 3
				n := apply(t, l, OpLRem, strconv.Itoa(c), e)
				var want []string
				removed := 0
				if c >= 0 {
					for _, x := range ref {
						if x == e && (c == 0 || removed < c) {
							removed++
							continue
						}
						want = append(want, x)
					}
				} else {
					for i := len(ref) - 1; i >= 0; i-- {
						if ref[i] == e && removed < -c {
							removed++
							continue
						}
						want = append([]string{ref[i]}, want...)
					}
				}
				if n != int64(removed) {
					t.Fatalf("%s: lrem %d %s n=%d want %d", what, c, e, n, removed)
				}
				ref = want
			case k == 9 && len(ref) > 0:
				e := ref[r.IntN(len(ref))]
				rank := int64(r.IntN(5) + 1)
				if r.IntN(2) == 0 {
					rank = -rank
				}
				count, maxlen := int64(r.IntN(3)), int64(r.IntN(len(ref)+1))
				got := l.Pos([]byte(e), rank, count, maxlen)
				var want []int64
				matched := int64(0)
				for s := range ref {
					if maxlen > 0 && int64(s) >= maxlen {
						break
					}
					i := s
					if rank < 0 {
						i = len(ref) - 1 - s
					}
					if ref[i] == e {
						if matched++; matched >= absInt64(rank) {
							want = append(want, int64(i))
							if count > 0 && int64(len(want)) >= count {
								break
							}
						}
					}
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("%s: pos %q rank %d count %d maxlen %d = %v, want %v", what, e, rank, count, maxlen, got, want)
				}
			}
			if step%50 == 0 || len(ref) < 20 {
				checkList(t, l, ref, what)
			}
		}
		checkList(t, l, ref, "end")
		c := l.CloneObject().(*List)
		checkList(t, c, ref, "clone")
		apply(t, c, OpRPush, "x")
		if len(ref) > 0 {
			apply(t, c, OpLSet, "0", "changed")
		}
		checkList(t, l, ref, "original after clone change")
		d, err := Decode(shards.KindList, l.AppendBinary(nil))
		if err != nil {
			t.Fatal(err)
		}
		checkList(t, d.(*List), ref, "decoded")
	}
}

// TestListEncoding checks where the list changes form, against Redis 7.2's
// rule (list-max-listpack-size -2).
func TestListEncoding(t *testing.T) {
	big := func(n int) string { return string(bytes.Repeat([]byte{'a'}, n)) }
	l := NewList()
	apply(t, l, OpRPush, big(8185)) // 7 + 8185 = 8192: fits
	if l.Encoding() != "listpack" {
		t.Fatalf("8185 bytes: %s", l.Encoding())
	}
	l = NewList()
	apply(t, l, OpRPush, big(8186))
	if l.Encoding() != "quicklist" {
		t.Fatalf("8186 bytes: %s", l.Encoding())
	}
	apply(t, l, OpLPush, "a", "b")
	apply(t, l, OpRPop, "1")
	if l.Encoding() != "listpack" || l.Len() != 2 {
		t.Fatalf("after popping the big element: %s %d", l.Encoding(), l.Len())
	}
	// 128+ small elements stay packed (no count limit at -2).
	l = NewList()
	for i := range 1000 {
		apply(t, l, OpRPush, strconv.Itoa(i))
	}
	if l.Encoding() != "listpack" {
		t.Fatalf("1000 small integers: %s (lp %d)", l.Encoding(), l.one.lp)
	}
	for i := range 3000 {
		apply(t, l, OpRPush, "xx"+strconv.Itoa(i))
	}
	if l.Encoding() != "quicklist" || len(l.nodes) < 2 {
		t.Fatalf("4000 elements: %s in %d nodes", l.Encoding(), len(l.nodes))
	}
	for _, nd := range l.nodes {
		// A push's check counts raw lengths, as Redis's: the
		// listpack that became the first node may be a little over.
		if nd.lp > listNodeLimit+16 {
			t.Fatalf("node of %d listpack bytes", nd.lp)
		}
	}
	// Shrinks back at one node of at most 4 KiB, not before.
	apply(t, l, OpLTrim, "0", "999")
	if l.Encoding() != "listpack" {
		t.Fatalf("trimmed to 1000 small integers: %s in %d nodes", l.Encoding(), len(l.nodes))
	}
	checkList(t, l, listElems(l), "trimmed")
}

func TestListBadOps(t *testing.T) {
	l := NewList()
	apply(t, l, OpRPush, "a", "b")
	for _, c := range []struct {
		op   Op
		args []string
	}{
		{OpRPush, nil}, {OpLPop, []string{"-1"}}, {OpLPop, []string{"x"}}, {OpLSet, []string{"2", "x"}},
		{OpLSet, []string{"-1", "x"}}, {OpLTrim, []string{"0", "2"}}, {OpLInsert, []string{"3", "x"}},
		{OpLRem, []string{"x", "a"}}, {OpHSet, []string{"a", "b"}}, {OpLRem, []string{"1"}},
	} {
		args := make([][]byte, len(c.args))
		for i, a := range c.args {
			args[i] = []byte(a)
		}
		if _, _, err := Apply(l, c.op, args); err == nil {
			t.Errorf("%s %q applied", c.op, c.args)
		}
	}
	checkList(t, l, []string{"a", "b"}, "after bad ops")
}

func FuzzDecodeList(f *testing.F) {
	l := NewList()
	Apply(l, OpRPush, [][]byte{[]byte("a"), []byte("12"), bytes.Repeat([]byte{'x'}, 9000)})
	f.Add(l.AppendBinary(nil))
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decodeList(b)
		if err != nil {
			return
		}
		if got := v.AppendBinary(nil); !bytes.Equal(got, b) {
			t.Fatalf("re-encoded %x, read %x", got, b)
		}
	})
}

// The redis-benchmark shapes: many small pushes and pops on one key, and
// LRANGE of the first 100 elements.
func BenchmarkListRPush(b *testing.B) {
	l := NewList()
	arg := [][]byte{[]byte("xxx")}
	b.ReportAllocs()
	for b.Loop() {
		Apply(l, OpRPush, arg)
	}
	b.ReportMetric(float64(l.MemoryUsage())/float64(l.Len()), "B/elem")
}

func BenchmarkListLPushLPop(b *testing.B) {
	l := NewList()
	arg, one := [][]byte{[]byte("xxx")}, [][]byte{[]byte("1")}
	for range 100000 {
		Apply(l, OpLPush, arg)
	}
	b.ReportAllocs()
	for b.Loop() {
		Apply(l, OpLPop, one)
		Apply(l, OpLPush, arg)
	}
}

func BenchmarkListRange100(b *testing.B) {
	l := NewList()
	for range 100000 {
		Apply(l, OpRPush, [][]byte{[]byte("xxx")})
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		l.Range(0, 99, func(e []byte) bool { n += len(e); return true })
	}
}

func BenchmarkListIndexMiddle(b *testing.B) {
	l := NewList()
	for range 100000 {
		Apply(l, OpRPush, [][]byte{[]byte("xxx")})
	}
	b.ReportAllocs()
	for b.Loop() {
		l.Index(50000)
	}
}
