package server

import (
	"testing"

	"github.com/turnstile/turnstile/coll"
	"github.com/turnstile/turnstile/shards"
)

// TestXSetIDFields: XSETID sets the last ID, entries added and the largest
// deleted ID; a MAXDELETEDID of 0-0, or none, keeps the recorded one, and
// no ENTRIESADDED keeps the count (no reply shows them: XINFO is not
// implemented, so the compat script cannot).
func TestXSetIDFields(t *testing.T) {
	s, c := newPathClient(t)
	run := func(args ...string) { // the state shows what it did (feed drops replies)
		t.Helper()
		feed(t, s, c, []byte(encodeCommand(args...)))
	}
	stream := func() *coll.Stream {
		t.Helper()
		e, _, found := s.dbs[0].Find([]byte("s"))
		if !found {
			t.Fatal("no stream")
		}
		return e.Obj.(*coll.Stream)
	}
	check := func(when string, last, maxDel coll.StreamID, added uint64) {
		t.Helper()
		st := stream()
		if st.LastID() != last || st.MaxDeletedID() != maxDel || st.EntriesAdded() != added {
			t.Fatalf("%s: last %v, max deleted %v, added %d; want %v, %v, %d", when,
				st.LastID(), st.MaxDeletedID(), st.EntriesAdded(), last, maxDel, added)
		}
	}
	for _, id := range []string{"1-0", "2-0", "3-0"} {
		run("XADD", "s", id, "f", "v")
	}
	run("XDEL", "s", "3-0")
	check("after XDEL", coll.StreamID{Ms: 3}, coll.StreamID{Ms: 3}, 3)
	run("XSETID", "s", "10-0", "MAXDELETEDID", "0-0")
	check("MAXDELETEDID 0-0", coll.StreamID{Ms: 10}, coll.StreamID{Ms: 3}, 3)
	run("XSETID", "s", "11-0", "ENTRIESADDED", "7")
	check("ENTRIESADDED", coll.StreamID{Ms: 11}, coll.StreamID{Ms: 3}, 7)
	run("XSETID", "s", "12-0", "MAXDELETEDID", "11-5")
	check("MAXDELETEDID", coll.StreamID{Ms: 12}, coll.StreamID{Ms: 11, Seq: 5}, 7)
	run("XSETID", "s", "2-5") // below the largest deleted ID: allowed, as in Redis
	check("below max deleted", coll.StreamID{Ms: 2, Seq: 5}, coll.StreamID{Ms: 11, Seq: 5}, 7)
	// Such a stream survives a dump (snapshots, DUMP-free copies, Raft).
	v, err := coll.Decode(shards.KindStream, stream().AppendBinary(nil))
	if err != nil {
		t.Fatalf("decoding the stream: %v", err)
	}
	if st := v.(*coll.Stream); st.LastID() != (coll.StreamID{Ms: 2, Seq: 5}) || st.MaxDeletedID() != (coll.StreamID{Ms: 11, Seq: 5}) {
		t.Fatalf("decoded: last %v, max deleted %v", st.LastID(), st.MaxDeletedID())
	}
}
