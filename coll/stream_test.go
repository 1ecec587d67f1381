package coll

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/turnstile/turnstile/shards"
)

func streamIDs(s *Stream, lo, hi StreamID, reverse bool) string {
	var out []string
	s.Range(lo, hi, reverse, func(e *StreamEntry) bool {
		var fv []string
		e.Each(func(b []byte) { fv = append(fv, string(b)) })
		if len(fv) != 2*e.Pairs() {
			panic("pairs")
		}
		out = append(out, e.ID.String()+fmt.Sprint(fv))
		return true
	})
	return fmt.Sprint(out)
}

func TestStreamOps(t *testing.T) {
	s := NewStream()
	for i := 1; i <= 10; i++ {
		apply(t, s, OpXAdd, fmt.Sprintf("%d-%d", i/3, i), "f", fmt.Sprint(i), "g", "x")
	}
	if _, _, err := Apply(s, OpXAdd, [][]byte{[]byte("3-10"), []byte("f"), []byte("v")}); err == nil {
		t.Fatal("an id equal to the last applied")
	}
	if _, _, err := Apply(s, OpXAdd, [][]byte{[]byte("9-0"), []byte("f")}); err == nil {
		t.Fatal("odd pairs applied")
	}
	if s.Len() != 10 || s.LastID() != (StreamID{3, 10}) || s.EntriesAdded() != 10 {
		t.Fatalf("len %d last %s added %d", s.Len(), s.LastID(), s.EntriesAdded())
	}
	if got := streamIDs(s, StreamID{1, 3}, StreamID{2, 6}, false); got != "[1-3[f 3 g x] 1-4[f 4 g x] 1-5[f 5 g x] 2-6[f 6 g x]]" {
		t.Fatal(got)
	}
	if got := streamIDs(s, StreamID{2, 7}, MaxStreamID, true); got != "[3-10[f 10 g x] 3-9[f 9 g x] 2-8[f 8 g x] 2-7[f 7 g x]]" {
		t.Fatal(got)
	}
	if got := streamIDs(s, StreamID{3, 0}, StreamID{2, 0}, false); got != "[]" {
		t.Fatal(got)
	}
	if n := apply(t, s, OpXDel, "1-4", "1-4", "7-7", "0-1"); n != 2 || s.MaxDeletedID() != (StreamID{1, 4}) {
		t.Fatalf("xdel n=%d maxdel %s", n, s.MaxDeletedID())
	}
	if n := apply(t, s, OpXTrim, "MINID", "2-7"); n != 4 || s.Len() != 4 {
		t.Fatalf("minid n=%d len %d", n, s.Len())
	}
	if n := apply(t, s, OpXTrim, "MAXLEN", "1"); n != 3 || s.Len() != 1 {
		t.Fatalf("maxlen n=%d len %d", n, s.Len())
	}
	c := s.CloneObject().(*Stream)
	apply(t, c, OpXTrim, "MAXLEN", "0")
	if s.Len() != 1 || c.Len() != 0 || c.LastID() != s.LastID() {
		t.Fatal("clone shares entries")
	}
	d, err := Decode(shards.KindStream, s.AppendBinary(nil))
	if err != nil {
		t.Fatal(err)
	}
	ds := d.(*Stream)
	if !bytes.Equal(ds.AppendBinary(nil), s.AppendBinary(nil)) || ds.LastID() != s.LastID() || ds.EntriesAdded() != 10 || ds.MaxDeletedID() != s.MaxDeletedID() {
		t.Fatal("decoded stream differs")
	}
	if d.MemoryUsage() != s.MemoryUsage() {
		t.Fatalf("memory %d vs %d", d.MemoryUsage(), s.MemoryUsage())
	}
	e := NewStream()
	apply(t, e, OpXAdd, "1-1", "", "", "h", "")
	apply(t, e, OpXAdd, "1-2", "a", "b")
	if d, err := Decode(shards.KindStream, e.AppendBinary(nil)); err != nil || streamIDs(d.(*Stream), StreamID{}, MaxStreamID, false) != "[1-1[  h ] 1-2[a b]]" {
		t.Fatalf("empty fields: %v", err)
	}
	apply(t, s, OpXSetID, "5-5", "20", "4-0")
	if s.LastID() != (StreamID{5, 5}) || s.EntriesAdded() != 20 {
		t.Fatal("xsetid")
	}
}

// TestStreamMatchesModel drives a stream past many chunks with random
// adds, deletes and trims, checking ranges both ways against a slice.
func TestStreamMatchesModel(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	s := NewStream()
	var ref []StreamID
	mem := func() int {
		m := streamBaseMem
		s.Range(StreamID{}, MaxStreamID, false, func(e *StreamEntry) bool { m += cap(e.packed) + streamEntryMem; return true })
		return m
	}
	var next StreamID
	for step := 0; step < 5000; step++ {
		switch k := r.IntN(20); {
		case k < 12:
			next.Seq += uint64(1 + r.IntN(3))
			if r.IntN(4) == 0 {
				next = StreamID{next.Ms + 1, 0}
			}
			apply(t, s, OpXAdd, next.String(), "f", "v")
			ref = append(ref, next)
		case k < 16 && len(ref) > 0:
			id := ref[r.IntN(len(ref))]
			if apply(t, s, OpXDel, id.String()) != 1 {
				t.Fatalf("xdel %s", id)
			}
			for i, x := range ref {
				if x == id {
					ref = append(ref[:i:i], ref[i+1:]...)
					break
				}
			}
		case k == 16:
			n := r.IntN(len(ref) + 5)
			apply(t, s, OpXTrim, "MAXLEN", fmt.Sprint(n))
			ref = ref[max(len(ref)-n, 0):]
		case k == 17 && len(ref) > 0:
			id := ref[r.IntN(len(ref))]
			apply(t, s, OpXTrim, "MINID", id.String())
			for len(ref) > 0 && ref[0].Less(id) {
				ref = ref[1:]
			}
		}
		if s.Len() != len(ref) {
			t.Fatalf("step %d: len %d, want %d", step, s.Len(), len(ref))
		}
		if step%25 == 0 && len(ref) > 0 {
			lo := StreamID{uint64(r.IntN(int(next.Ms + 2))), uint64(r.IntN(10))}
			hi := StreamID{lo.Ms + uint64(r.IntN(20)), uint64(r.IntN(10))}
			var want []StreamID
			for _, x := range ref {
				if !x.Less(lo) && !hi.Less(x) {
					want = append(want, x)
				}
			}
			for _, rev := range []bool{false, true} {
				var got []StreamID
				s.Range(lo, hi, rev, func(e *StreamEntry) bool { got = append(got, e.ID); return true })
				if rev {
					slices.Reverse(got)
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("step %d: range %s..%s rev %v = %v, want %v", step, lo, hi, rev, got, want)
				}
			}
			if m := mem(); m != s.MemoryUsage() {
				t.Fatalf("step %d: memory %d, recomputed %d", step, s.MemoryUsage(), m)
			}
		}
	}
	for _, ch := range s.chunks {
		if len(ch) == 0 || len(ch) > streamChunk {
			t.Fatalf("chunk of %d entries", len(ch))
		}
	}
}

func TestParseStreamID(t *testing.T) {
	for in, want := range map[string]string{
		"5": "5-7", "5-1": "5-1", "+5": "5-7", "007-01": "7-1", " 1": "1-7",
		"18446744073709551615-18446744073709551615": "18446744073709551615-18446744073709551615",
		"1--05": "1-18446744073709551611",
		"-5":    "", "": "", "1-": "", "1-2-3": "", "18446744073709551616": "", "1-x": "", "1-*": "", "-": "", "+": "", "1--5": "",
	} {
		id, _, ok := ParseStreamID([]byte(in), 7, false)
		got := ""
		if ok {
			got = id.String()
		}
		if got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
	if id, auto, ok := ParseStreamID([]byte("5-*"), 0, true); !ok || !auto || id.Ms != 5 {
		t.Error("5-*")
	}
	if _, ok := (StreamID{math.MaxUint64, math.MaxUint64}).Next(); ok {
		t.Error("next of the max")
	}
	if p, _ := (StreamID{5, 0}).Prev(); p != (StreamID{4, math.MaxUint64}) {
		t.Error("prev")
	}
}

func FuzzDecodeStream(f *testing.F) {
	s := NewStream()
	Apply(s, OpXAdd, [][]byte{[]byte("1-1"), []byte("a"), []byte("1")})
	Apply(s, OpXAdd, [][]byte{[]byte("2-0"), []byte("b"), []byte("2"), []byte("c"), []byte("")})
	Apply(s, OpXDel, [][]byte{[]byte("1-1")})
	f.Add(s.AppendBinary(nil))
	f.Add(NewStream().AppendBinary(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decodeStream(b)
		if err != nil {
			return
		}
		if got := v.AppendBinary(nil); !bytes.Equal(got, b) {
			t.Fatalf("re-encoded %x, read %x", got, b)
		}
	})
}

func BenchmarkStreamXAdd(b *testing.B) {
	s := NewStream()
	args := [][]byte{nil, []byte("field"), []byte("value")}
	b.ReportAllocs()
	var id StreamID
	for b.Loop() {
		id.Seq++
		args[0] = id.AppendText(args[0][:0])
		Apply(s, OpXAdd, args)
	}
}

func BenchmarkStreamRange10(b *testing.B) {
	s := NewStream()
	for i := range 100000 {
		Apply(s, OpXAdd, [][]byte{fmt.Appendf(nil, "1-%d", i+1), []byte("field"), []byte("value")})
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		k := 0
		s.Range(StreamID{1, 50000}, MaxStreamID, false, func(e *StreamEntry) bool { n += e.Pairs(); k++; return k < 10 })
	}
}
