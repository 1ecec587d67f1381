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
