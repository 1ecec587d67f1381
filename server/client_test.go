package server

import "testing"

// countingClock counts its readings and advances 1 µs per reading.
type countingClock struct{ reads int64 }

func (c *countingClock) Now() int64 {
	c.reads++
	return c.reads * 1000
}

// TestCommandTimeSharedInBatch: commands of one pipelined batch share a
// clock reading, clockBatch at most, and a new read from the socket
// (clockUses reset) reads the clock again.
func TestCommandTimeSharedInBatch(t *testing.T) {
	clk := &countingClock{}
	c := &client{s: &Server{clock: clk}}
	prev := int64(0)
	for i := range 3 * clockBatch {
		now := c.commandTime()
		if want := int64(i/clockBatch+1) * 1000; now != want {
			t.Fatalf("command %d ran at %d, want %d", i, now, want)
		}
		if now < prev {
			t.Fatalf("time went backwards: %d after %d", now, prev)
		}
		prev = now
	}
	c.commandTime() // the first of a fourth group
	c.clockUses = 0 // as after a read from the socket
	if now := c.commandTime(); now != 5000 || clk.reads != 5 {
		t.Fatalf("after a socket read: time %d after %d clock reads, want 5000 after 5", now, clk.reads)
	}
}
