package server

import (
	"testing"
)

// TestCollectionWriteAllocs: the common collection writes, and a small
// MULTI ... EXEC around them, allocate nothing per call once their key
// exists (the op arguments a handler builds live in the execution's
// reusable buffers; the MULTI queue reuses the connection's arena). The
// log is off: its flusher allocates now and then on its own goroutine,
// which AllocsPerRun would count.
func TestCollectionWriteAllocs(t *testing.T) {
	s, c := newPathClient(t)
	for _, req := range []string{
		encodeCommand("HINCRBY", "h", "f", "1"),
		encodeCommand("HSET", "h", "g", "v"),
		encodeCommand("SADD", "s", "m"),
		encodeCommand("RPUSH", "l", "v", "w") + encodeCommand("LPOP", "l"),
		encodeCommand("ZADD", "z", "1", "m"),
		encodeCommand("MULTI") + encodeCommand("HINCRBY", "h", "f", "1") + encodeCommand("ZADD", "z", "2", "m") +
			encodeCommand("PEXPIRE", "z", "60000") + encodeCommand("EXEC"),
	} {
		b := []byte(req)
		feed(t, s, c, b) // creates the keys
		if n := testing.AllocsPerRun(200, func() { feed(t, s, c, b) }); n > 0 {
			t.Errorf("%q: %.1f allocations per call", req, n)
		}
	}
}
