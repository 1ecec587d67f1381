package main

import (
	"testing"
	"time"
)

// TestGCFloorDropsOnce: the ballast is held while the heap without it is
// below its size, dropped (and the garbage released, once) when the heap
// outgrows it, and never taken again.
func TestGCFloorDropsOnce(t *testing.T) {
	const size = 1 << 20
	f := newGCFloor(size)
	released := 0
	f.release = func() { released++ }
	if f.Held() != size || len(f.ballast) != size {
		t.Fatalf("held %d, ballast %d", f.Held(), len(f.ballast))
	}
	for _, live := range []int64{size, size + size/2, 2 * size} { // the heap without it: 0 to the floor
		if f.check(live) || f.Held() != size {
			t.Fatalf("dropped at a live heap of %d (ballast %d)", live, size)
		}
	}
	if !f.check(2*size+1) || f.Held() != 0 || f.ballast != nil || released != 1 {
		t.Fatalf("not dropped past the floor: held %d, released %d", f.Held(), released)
	}
	if f.check(10*size) || f.check(0) || f.Held() != 0 || released != 1 {
		t.Fatalf("after the drop: held %d, released %d", f.Held(), released)
	}
	none := newGCFloor(0)
	none.release = func() { t.Fatal("released without a ballast") }
	if none.Held() != 0 || none.check(1<<40) {
		t.Fatal("a floor of 0 holds or drops something")
	}
}

// TestGCFloorWatchStops: watch returns when stopped, and at once when
// there is no ballast to watch.
func TestGCFloorWatchStops(t *testing.T) {
	done := make(chan struct{})
	go func() { newGCFloor(0).watch(nil, time.Hour); close(done) }()
	<-done
	f := newGCFloor(256 << 20) // not outgrown by this test's heap
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() { f.watch(stop, time.Millisecond); close(stopped) }()
	time.Sleep(20 * time.Millisecond)
	if f.Held() != 256<<20 {
		t.Fatal("the ballast was dropped below its floor")
	}
	close(stop)
	<-stopped
}
