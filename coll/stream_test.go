package coll

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
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
	Apply(s, OpXGroupCreate, [][]byte{[]byte("g"), []byte("1-0"), []byte("-1")})
	Apply(s, OpXGroupConsumer, [][]byte{[]byte("g"), []byte("c"), []byte("5")})
	Apply(s, OpXGroupClaim, [][]byte{[]byte("g"), []byte("c"), []byte("7"), []byte("one"), []byte("2-0")})
	f.Add(s.AppendBinary(nil))
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

// groupState renders a stream's groups: each group's counters, consumers
// and PEL, for comparisons.
func groupState(s *Stream) string {
	var out []string
	for _, g := range s.Groups() {
		out = append(out, fmt.Sprintf("%s last=%s read=%d", g.Name, g.Last, g.EntriesRead))
		for _, c := range g.Consumers() {
			out = append(out, fmt.Sprintf(" %s seen=%d pel=%v", c.Name, c.Seen, slices.Collect(c.PendingFrom(StreamID{}))))
		}
		for id := range g.PendingFrom(StreamID{}) {
			n := g.Pending(id)
			out = append(out, fmt.Sprintf(" %s %s t=%d n=%d", id, n.Consumer.Name, n.Time, n.Count))
		}
	}
	return fmt.Sprint(out)
}

func TestStreamGroups(t *testing.T) {
	s := NewStream()
	for i := 1; i <= 5; i++ {
		apply(t, s, OpXAdd, fmt.Sprintf("%d-1", i), "f", "v")
	}
	base := s.MemoryUsage()
	apply(t, s, OpXGroupCreate, "g", "0-0", "-1")
	apply(t, s, OpXGroupCreate, "a", "3-1", "3")
	if _, _, err := Apply(s, OpXGroupCreate, [][]byte{[]byte("g"), []byte("0"), []byte("-1")}); err == nil {
		t.Fatal("a group created twice")
	}
	if n := apply(t, s, OpXGroupConsumer, "g", "bob", "100"); n != 1 {
		t.Fatal("consumer not created")
	}
	if n := apply(t, s, OpXGroupConsumer, "g", "bob", "200"); n != 0 {
		t.Fatal("consumer created twice")
	}
	apply(t, s, OpXGroupConsumer, "g", "alice", "150")
	apply(t, s, OpXGroupClaim, "g", "bob", "300", "one", "1-1", "2-1", "3-1")
	apply(t, s, OpXGroupClaim, "g", "alice", "400", "incr", "2-1", "9-9")
	apply(t, s, OpXGroupClaim, "g", "alice", "500", "7", "3-1")
	apply(t, s, OpXGroupClaim, "g", "alice", "600", "keep", "3-1")
	want := "[a last=3-1 read=3 g last=0-0 read=-1  alice seen=150 pel=[2-1 3-1 9-9]  bob seen=200 pel=[1-1] " +
		" 1-1 bob t=300 n=1  2-1 alice t=400 n=2  3-1 alice t=600 n=7  9-9 alice t=400 n=2]"
	if got := groupState(s); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	c := s.CloneObject().(*Stream)
	d, err := Decode(shards.KindStream, s.AppendBinary(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := groupState(d.(*Stream)); got != want || d.MemoryUsage() != s.MemoryUsage() {
		t.Fatalf("decoded: %s (memory %d, want %d)", got, d.MemoryUsage(), s.MemoryUsage())
	}
	if n := apply(t, s, OpXGroupAck, "g", "2-1", "2-1", "8-8"); n != 1 {
		t.Fatalf("acked %d", n)
	}
	if n := apply(t, s, OpXGroupDelConsumer, "g", "alice"); n != 2 {
		t.Fatalf("delconsumer dropped %d", n)
	}
	apply(t, s, OpXGroupSetID, "g", "5-1", "5")
	if got := groupState(s); got != "[a last=3-1 read=3 g last=5-1 read=5  bob seen=200 pel=[1-1]  1-1 bob t=300 n=1]" {
		t.Fatal(got)
	}
	if groupState(c) != want {
		t.Fatal("the clone shares the groups")
	}
	apply(t, s, OpXGroupDestroy, "g")
	apply(t, s, OpXGroupDestroy, "a")
	if s.GroupCount() != 0 || s.MemoryUsage() != base {
		t.Fatalf("%d groups left, memory %d, want %d", s.GroupCount(), s.MemoryUsage(), base)
	}
	for _, bad := range [][]string{
		{"nog"}, {"nog", "0", "0"}, {"g", "x", "0"}, {"g", "0", "-2"},
	} {
		b := make([][]byte, len(bad))
		for i, a := range bad {
			b[i] = []byte(a)
		}
		if _, _, err := Apply(s, OpXGroupSetID, b); err == nil {
			t.Errorf("setid %q applied", bad)
		}
	}
	apply(t, s, OpXGroupCreate, "g", "0-0", "-1")
	apply(t, s, OpXGroupConsumer, "g", "c", "1")
	for _, bad := range [][]string{
		{"g", "c", "x", "5", "1-1"}, {"g", "c", "1", "-1", "1-1"}, {"g", "c", "1", "one", "x"}, {"g", "nobody", "1", "one", "1-1"},
	} {
		b := make([][]byte, len(bad))
		for i, a := range bad {
			b[i] = []byte(a)
		}
		if _, _, err := Apply(s, OpXGroupClaim, b); err == nil {
			t.Errorf("claim %q applied", bad)
		}
	}
}

// TestStreamLag follows Redis's entries-read and lag rules through reads,
// a deletion ahead of the group, and a group created past the end.
func TestStreamLag(t *testing.T) {
	s := NewStream()
	apply(t, s, OpXGroupCreate, "g", "0-0", "-1")
	if lag, ok := s.Lag(s.Group([]byte("g"))); !ok || lag != 0 {
		t.Fatal("a new stream's lag is 0")
	}
	for i := 1; i <= 4; i++ {
		apply(t, s, OpXAdd, fmt.Sprintf("%d-1", i), "f", "v")
	}
	g := s.Group([]byte("g"))
	if lag, ok := s.Lag(g); !ok || lag != 4 {
		t.Fatalf("lag %d %v", lag, ok)
	}
	last, read := s.Delivered(g, []StreamID{{1, 1}, {2, 1}})
	if last != (StreamID{2, 1}) || read != 2 {
		t.Fatalf("delivered: %s %d", last, read)
	}
	apply(t, s, OpXGroupSetID, "g", last.String(), fmt.Sprint(read))
	apply(t, s, OpXDel, "3-1")
	if lag, ok := s.Lag(g); ok {
		t.Fatalf("a tombstone ahead: lag %d", lag)
	}
	// Redis looks for tombstones from the delivered ID on only: 3-1 lies
	// behind 4-1, so the counter just counts on (to 3, not 4).
	last, read = s.Delivered(g, []StreamID{{4, 1}})
	if last != (StreamID{4, 1}) || read != 3 {
		t.Fatalf("read to the end past a tombstone: %s %d", last, read)
	}
	// Delivered from a group whose counter is unknown: estimated.
	apply(t, s, OpXGroupCreate, "h", "0-0", "-1")
	if last, read = s.Delivered(s.Group([]byte("h")), []StreamID{{4, 1}}); read != 4 {
		t.Fatalf("estimated at the last entry: %s %d", last, read)
	}
}

// TestIDListMatchesModel drives the PEL's chunked ID list with random
// inserts and removes (runs of appends and of removals from the front, as
// a queue makes, and random ones) and checks it against a sorted slice:
// contents, reads from any ID, the count, and no empty or oversized chunk.
func TestIDListMatchesModel(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	var l idList
	var model []StreamID
	next := uint64(1)
	for step := range 20000 {
		switch op := r.IntN(10); {
		case op < 4: // append a new ID
			id := StreamID{Ms: next}
			next += uint64(1 + r.IntN(3))
			l.insert(id)
			model = append(model, id)
		case op < 6 && len(model) > 0: // ack the oldest
			l.remove(model[0])
			model = model[1:]
		case op < 8: // insert anywhere (a claim of an old ID)
			id := StreamID{Ms: uint64(r.IntN(int(next) + 1)), Seq: uint64(r.IntN(2))}
			l.insert(id)
			if i, found := slices.BinarySearchFunc(model, id, cmpID); !found {
				model = slices.Insert(model, i, id)
			}
		default: // remove anywhere, present or not
			id := StreamID{Ms: uint64(r.IntN(int(next) + 1))}
			l.remove(id)
			if i, found := slices.BinarySearchFunc(model, id, cmpID); found {
				model = slices.Delete(model, i, i+1)
			}
		}
		if step%997 == 0 || step == 19999 {
			if got := slices.Collect(l.from(StreamID{})); !slices.Equal(got, model) || l.n != len(model) {
				t.Fatalf("step %d: %d IDs (n %d), want %d", step, len(got), l.n, len(model))
			}
			for _, ch := range l.chunks {
				if len(ch) == 0 || len(ch) > idChunk {
					t.Fatalf("step %d: a chunk of %d", step, len(ch))
				}
			}
			if len(model) > 0 {
				from := model[len(model)/2]
				if got := slices.Collect(l.from(from)); !slices.Equal(got, model[len(model)/2:]) {
					t.Fatalf("step %d: from %s", step, from)
				}
				if last, ok := l.last(); !ok || last != model[len(model)-1] {
					t.Fatalf("step %d: last %s", step, last)
				}
			}
		}
	}
}

func cmpID(a, b StreamID) int {
	switch {
	case a.Less(b):
		return -1
	case b.Less(a):
		return 1
	}
	return 0
}

// BenchmarkDeepPELAck acknowledges the oldest of 100,000 pending entries
// and delivers a new one: a queue's steady state.
func BenchmarkDeepPELAck(b *testing.B) {
	s := NewStream()
	Apply(s, OpXGroupCreate, [][]byte{[]byte("g"), []byte("0"), []byte("-1")})
	Apply(s, OpXGroupConsumer, [][]byte{[]byte("g"), []byte("c"), []byte("0")})
	const depth = 100000
	for i := range depth {
		Apply(s, OpXGroupClaim, [][]byte{[]byte("g"), []byte("c"), []byte("0"), []byte("one"), []byte(strconv.Itoa(i + 1))})
	}
	oldest, next := 1, depth+1
	b.ReportAllocs()
	for b.Loop() {
		Apply(s, OpXGroupAck, [][]byte{[]byte("g"), []byte(strconv.Itoa(oldest))})
		Apply(s, OpXGroupClaim, [][]byte{[]byte("g"), []byte("c"), []byte("0"), []byte("one"), []byte(strconv.Itoa(next))})
		oldest, next = oldest+1, next+1
	}
}
