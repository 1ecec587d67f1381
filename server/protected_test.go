package server

import (
	"bufio"
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"
)

// TestProtectedModeDecision: refused only with protected mode on, no
// password and a peer outside 127.0.0.0/8 and ::1.
func TestProtectedModeDecision(t *testing.T) {
	tcp := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 5000} }
	for _, tc := range []struct {
		peer        net.Addr
		protected   bool
		hasPassword bool
		refused     bool
	}{
		{tcp("127.0.0.1"), true, false, false},
		{tcp("127.0.0.2"), true, false, false}, // all of 127/8 is loopback, as in Redis
		{tcp("::1"), true, false, false},
		{tcp("::ffff:127.0.0.1"), true, false, false},
		{tcp("192.0.2.2"), true, false, true},
		{tcp("10.0.0.1"), true, false, true},
		{tcp("fd00::2"), true, false, true},
		{tcp("::ffff:192.0.2.2"), true, false, true},
		{tcp("192.0.2.2"), false, false, false},
		{tcp("192.0.2.2"), true, true, false},
		{tcp("fd00::2"), false, true, false},
		{&net.UnixAddr{Name: "/tmp/s", Net: "unix"}, true, false, false},
		{nil, true, false, false},
	} {
		if got := protectedModeRefuses(tc.protected, tc.hasPassword, tc.peer); got != tc.refused {
			t.Errorf("peer %v protected %v password %v: refused %v, want %v", tc.peer, tc.protected, tc.hasPassword, got, tc.refused)
		}
	}
	if !DefaultConfig().ProtectedMode {
		t.Error("protected mode is off by default")
	}
}

// outsideIP is a local address that is not loopback, to connect from and
// to: a client from it is an outside client. Skips if there is none.
func outsideIP(t *testing.T) net.IP {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skipf("no interface addresses: %v", err)
	}
	var v6 net.IP
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.IsLoopback() || n.IP.IsLinkLocalUnicast() {
			continue
		}
		if n.IP.To4() != nil {
			return n.IP
		}
		if v6 == nil {
			v6 = n.IP
		}
	}
	if v6 == nil {
		t.Skip("no non-loopback local address to connect from")
	}
	return v6
}

// dialFrom connects to port on ip from ip itself.
func dialFrom(t *testing.T, ip net.IP, port string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: ip}}
	c, err := d.Dial("tcp", net.JoinHostPort(ip.String(), port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// expectDenied reads the DENIED error, then the end of the connection.
func expectDenied(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil || line != errProtectedMode {
		t.Fatalf("outside client got %q, %v; want the DENIED error", line, err)
	}
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("the refused connection stays open")
	}
}

func allInterfaces(ip net.IP) string {
	if ip.To4() != nil {
		return "0.0.0.0"
	}
	return "::"
}

// TestProtectedModeOutsideClient: bound to all interfaces with no
// password, a client from a non-loopback local address gets Redis's
// DENIED error and is closed, and counts as a rejected connection; a
// loopback client is served; a password (CONFIG SET requirepass) or
// protected-mode no lets the outside client in.
func TestProtectedModeOutsideClient(t *testing.T) {
	ip := outsideIP(t)
	_, addr, _ := newTestServer(t, func(c *Config) { c.Bind = allInterfaces(ip) })
	_, port, _ := net.SplitHostPort(addr)
	local := dialRaw(t, net.JoinHostPort(map[bool]string{true: "127.0.0.1", false: "::1"}[ip.To4() != nil], port))
	if got := local.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("loopback PING = %q", got)
	}
	if got := local.do("CONFIG", "GET", "protected-mode"); got != "*2\r\n$14\r\nprotected-mode\r\n$3\r\nyes\r\n" {
		t.Fatalf("CONFIG GET protected-mode = %q", got)
	}
	expectDenied(t, dialFrom(t, ip, port))
	if got := local.do("INFO", "stats"); !strings.Contains(got, "rejected_connections:1\r\n") {
		t.Errorf("INFO stats after a refusal: %q", got)
	}

	outside := func() *rawConn {
		c := dialFrom(t, ip, port)
		return &rawConn{t: t, c: c, br: bufio.NewReader(c)}
	}
	local.do("CONFIG", "SET", "requirepass", "s3cret")
	if got := outside().do("PING"); !strings.HasPrefix(got, "-NOAUTH") {
		t.Errorf("with a password, outside PING = %q, want NOAUTH", got)
	}
	local.do("AUTH", "s3cret")
	local.do("CONFIG", "SET", "requirepass", "", "protected-mode", "no")
	if got := outside().do("PING"); got != "+PONG\r\n" {
		t.Errorf("protected-mode no: outside PING = %q", got)
	}
	local.do("CONFIG", "SET", "protected-mode", "yes")
	expectDenied(t, dialFrom(t, ip, port))
}

// TestProtectedModeTLS: an outside TLS client is refused the same way,
// the error written after the handshake (not in the accept loop).
func TestProtectedModeTLS(t *testing.T) {
	ip := outsideIP(t)
	p := newTestPKI(t)
	_, _, addr := newTLSTestServer(t, p, func(c *Config) { c.Bind = allInterfaces(ip) })
	_, port, _ := net.SplitHostPort(addr)
	conf := p.tlsClientConfig(true)
	conf.InsecureSkipVerify = true // the certificate names 127.0.0.1, not ip
	expectDenied(t, tls.Client(dialFrom(t, ip, port), conf))
}
