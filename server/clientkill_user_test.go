package server

import "testing"

// TestClientKillUser: CLIENT KILL USER name closes the connections
// authenticated as that user (and only those); an unknown user is
// Redis's error.
func TestClientKillUser(t *testing.T) {
	_, addr, _ := newTestServer(t)
	admin := dialRaw(t, addr)
	if got := admin.do("ACL", "SETUSER", "bob", "on", ">pw", "~*", "+@all"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	bob := dialRaw(t, addr)
	if got := bob.do("AUTH", "bob", "pw"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	other := dialRaw(t, addr)
	if got := admin.do("CLIENT", "KILL", "USER", "bob"); got != ":1\r\n" {
		t.Fatalf("CLIENT KILL USER bob: %q", got)
	}
	bob.expectClosed()
	if got := other.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("another user's connection: %q", got)
	}
	if got := admin.do("CLIENT", "KILL", "USER", "nobody"); got != "-ERR No such user 'nobody'\r\n" {
		t.Fatalf("unknown user: %q", got)
	}
}
