package shards

import "testing"

// testObj is a minimal Object: a counter.
type testObj struct{ n int }

func (o *testObj) CloneObject() any { c := *o; return &c }
func (o *testObj) MemoryUsage() int { return 8 }

func TestMutableCopiesOnWriteAfterSnapshot(t *testing.T) {
	m := New(1)
	key := []byte("h")
	m.Lock(0)
	m.Put(key, Entry{Kind: KindHash, Obj: &testObj{n: 1}})
	_, r, _ := m.Find(key)
	first := m.Mutable(r).(*testObj) // not known to be owned: cloned once
	first.n = 2
	_, r, _ = m.Find(key)
	if again := m.Mutable(r).(*testObj); again != first {
		t.Fatal("an object the table owns was cloned again")
	}
	m.BeginSnapshotLocked()
	_, r, _ = m.Find(key)
	after := m.Mutable(r).(*testObj) // the snapshot shares the object now
	if after == first {
		t.Fatal("Mutable during a snapshot returned the shared object")
	}
	after.n = 3
	// A new expiry keeps the (owned) object where it is.
	m.Put(key, Entry{Kind: KindHash, Obj: after, Exp: 99})
	_, r, _ = m.Find(key)
	if got := m.Mutable(r).(*testObj); got != after {
		t.Fatal("changing the expiry lost the object's ownership")
	}
	m.Unlock(0)

	var seen []int
	f := m.SnapshotShard(0)
	if err := f.ForEach(0, func(_ []byte, e Entry) error {
		seen = append(seen, e.Obj.(*testObj).n)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0] != 2 {
		t.Fatalf("snapshot saw %v, want [2] (the value when it began)", seen)
	}
	m.Lock(0)
	e, ok := m.Get(key, 0)
	m.Unlock(0)
	if !ok || e.Obj.(*testObj).n != 3 || e.Exp != 99 {
		t.Fatalf("live value %+v", e)
	}
}

func TestTouchedMarksWatchers(t *testing.T) {
	m := New(1)
	key := []byte("h")
	var w Watch
	m.Lock(0)
	defer m.Unlock(0)
	m.Put(key, Entry{Kind: KindSet, Obj: &testObj{}})
	m.Watch(key, &w)
	_, r, _ := m.Find(key)
	m.Mutable(r)
	if w.Dirty.Load() {
		t.Fatal("Mutable alone marked the watcher")
	}
	m.Touched(r)
	if !w.Dirty.Load() {
		t.Fatal("Touched did not mark the watcher")
	}
}

func TestAddObjectIsOwned(t *testing.T) {
	m := New(1)
	m.Lock(0)
	defer m.Unlock(0)
	o := &testObj{n: 1}
	r, err := m.AddObject([]byte("k"), Entry{Kind: KindSet, Obj: o})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Mutable(r).(*testObj); got != o {
		t.Fatal("a value added by AddObject was copied on its first change")
	}
	m.BeginSnapshotLocked()
	_, r, _ = m.Find([]byte("k"))
	if got := m.Mutable(r).(*testObj); got == o {
		t.Fatal("after a snapshot began, the shared value was not copied")
	}
	full := NewWithLimit(1, 1)
	full.Lock(0)
	defer full.Unlock(0)
	full.Put([]byte("a"), IntEntry(1, 0))
	if _, err := full.AddObject([]byte("b"), Entry{Kind: KindSet, Obj: &testObj{}}); err != ErrFull {
		t.Fatalf("AddObject into a full shard: %v", err)
	}
}
