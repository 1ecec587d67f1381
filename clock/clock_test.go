package clock

import (
	"testing"
	"time"
)

func TestMonotonicNeverDecreases(t *testing.T) {
	c := NewMonotonic()
	if d := c.Now() - time.Now().UnixNano(); d > int64(time.Second) || d < -int64(time.Second) {
		t.Fatalf("clock is %v away from the wall clock", time.Duration(d))
	}
	prev := c.Now()
	for i := 0; i < 100000; i++ {
		n := c.Now()
		if n < prev {
			t.Fatalf("went backwards: %d < %d", n, prev)
		}
		prev = n
	}
}

func TestManual(t *testing.T) {
	m := NewManual(100)
	m.Advance(5)
	if m.Now() != 105 {
		t.Fatalf("got %d", m.Now())
	}
	m.Set(7)
	if m.Now() != 7 {
		t.Fatalf("got %d", m.Now())
	}
}

func TestFloor(t *testing.T) {
	base := NewManual(100)
	f := NewFloor(base)
	if f.Now() != 100 {
		t.Fatalf("Now = %d, want the base 100", f.Now())
	}
	f.Raise(500)
	f.Raise(300) // never lowers
	if f.Now() != 500 || f.Level() != 500 {
		t.Fatalf("Now = %d, Level = %d, want 500", f.Now(), f.Level())
	}
	base.Set(700)
	if f.Now() != 700 {
		t.Fatalf("Now = %d, want the base 700 once it passes the floor", f.Now())
	}
}
