package testport

import (
	"net"
	"strconv"
	"testing"
)

// Free's ports lie below the ephemeral range, can be listened on, and
// are never handed out twice.
func TestFree(t *testing.T) {
	seen := map[int]bool{}
	top := ephemeralStart()
	for range 50 {
		p := Free(t, "127.0.0.1")
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
		if top-lowest >= 1000 && (p < lowest || p >= top) {
			t.Fatalf("port %d outside [%d, %d)", p, lowest, top)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d: %v", p, err)
		}
		ln.Close()
	}
}

// bindable, Free's check, reports a port something listens on as taken.
func TestFreeSkipsBound(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if bindable(ln.Addr().String()) {
		t.Fatalf("%s is listened on, yet bindable", ln.Addr())
	}
}
