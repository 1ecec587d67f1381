package server

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/turnstile/turnstile/internal/testport"
)

// testPKI is a CA, a server certificate for 127.0.0.1 and localhost and a
// client certificate, made for one test and written as PEM files to a
// temporary directory.
type testPKI struct {
	dir        string
	caFile     string
	serverCert string
	serverKey  string
	clientCert string
	clientKey  string
	pool       *x509.CertPool    // the CA, for clients
	client     tls.Certificate   // the client certificate, for go-redis
	serverLeaf *x509.Certificate // the server certificate, to recognise it
	caCert     *x509.Certificate
	caKey      *ecdsa.PrivateKey
	nextSerial int64
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	p := &testPKI{dir: t.TempDir(), nextSerial: 1}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(p.serial()),
		Subject:               pkix.Name{CommonName: "turnstile test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p.caCert, _ = x509.ParseCertificate(der)
	p.caKey = key
	p.caFile = filepath.Join(p.dir, "ca.crt")
	writePEM(t, p.caFile, "CERTIFICATE", der)
	p.pool = x509.NewCertPool()
	p.pool.AddCert(p.caCert)
	p.serverCert, p.serverKey, p.serverLeaf = p.issue(t, "server", x509.ExtKeyUsageServerAuth)
	p.clientCert, p.clientKey, _ = p.issue(t, "client", x509.ExtKeyUsageClientAuth)
	p.client, err = tls.LoadX509KeyPair(p.clientCert, p.clientKey)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *testPKI) serial() int64 { p.nextSerial++; return p.nextSerial - 1 }

// issue makes a certificate signed by the CA, valid for 127.0.0.1 and
// localhost, and writes it and its key to name.crt and name.key.
func (p *testPKI) issue(t testing.TB, name string, usage x509.ExtKeyUsage) (certFile, keyFile string, leaf *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(p.dir, name+".crt"), filepath.Join(p.dir, name+".key")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", kder)
	leaf, _ = x509.ParseCertificate(der)
	return certFile, keyFile, leaf
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// tlsClientConfig is a client's configuration trusting the test CA, with
// the client certificate if withCert.
func (p *testPKI) tlsClientConfig(withCert bool) *tls.Config {
	// X25519 alone: the default hybrid post-quantum key exchange costs
	// much more under the race detector.
	c := &tls.Config{RootCAs: p.pool, ServerName: "127.0.0.1", CurvePreferences: []tls.CurveID{tls.X25519}}
	if withCert {
		c.Certificates = []tls.Certificate{p.client}
	}
	return c
}

// newTLSTestServer starts a server with a plain and a TLS listener, both
// on free loopback ports, the TLS one configured from p (auth-clients
// yes unless mod changes it), and returns it with both addresses.
func newTLSTestServer(t testing.TB, p *testPKI, mod ...func(*Config)) (s *Server, plain, tlsAddr string) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Port = 0
	cfg.Shards = 16
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.TLS.CertFile, cfg.TLS.KeyFile, cfg.TLS.CACertFile = p.serverCert, p.serverKey, p.caFile
	for _, m := range mod {
		m(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	tln, err := s.listenTLS(cfg.Bind, 0)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), ln, tln) }()
	select {
	case <-s.Ready():
	case err := <-done:
		t.Fatalf("server stopped while loading: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("server did not finish loading")
	}
	t.Cleanup(func() {
		s.Close()
		waitServe(t, done, "server did not stop", t.Errorf)
	})
	return s, ln.Addr().String(), tln.Addr().String()
}

// dialTLSRaw opens a raw RESP connection over TLS.
func dialTLSRaw(t testing.TB, addr string, conf *tls.Config) (*rawConn, error) {
	t.Helper()
	d := &net.Dialer{Timeout: 2 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, conf)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, br: bufio.NewReader(c)}, nil
}

// tlsPing runs PING with go-redis over TLS; nil if PONG came back.
func tlsPing(addr string, conf *tls.Config) error {
	c := redis.NewClient(&redis.Options{Addr: addr, TLSConfig: conf, MaxRetries: -1, DisableIdentity: true,
		DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second,
		DialerRetries: 1, DialerRetryBackoff: func(int) time.Duration { return 0 }}) // a refused handshake is final
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return c.Ping(ctx).Err()
}

// TestTLSAuthClients: with go-redis, per tls-auth-clients mode (the first
// from the start-up config, the others set with CONFIG SET), a client with
// and without a certificate; the plain port serves next to it.
func TestTLSAuthClients(t *testing.T) {
	p := newTestPKI(t)
	_, plain, addr := newTLSTestServer(t, p, func(c *Config) { c.TLS.AuthClients = "yes" })
	ctl := dialRaw(t, plain)
	for _, tc := range []struct {
		mode               string
		withCert, withoutC bool // whether PING succeeds
	}{
		{"yes", true, false},
		{"optional", true, true},
		{"no", true, true},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			if got := ctl.do("CONFIG", "SET", "tls-auth-clients", tc.mode); got != "+OK\r\n" {
				t.Fatalf("CONFIG SET tls-auth-clients %s = %q", tc.mode, got)
			}
			if err := tlsPing(addr, p.tlsClientConfig(true)); (err == nil) != tc.withCert {
				t.Errorf("with a client certificate: PING err = %v", err)
			}
			if err := tlsPing(addr, p.tlsClientConfig(false)); (err == nil) != tc.withoutC {
				t.Errorf("without a client certificate: PING err = %v", err)
			}
			if got := ctl.do("PING"); got != "+PONG\r\n" {
				t.Errorf("plain port: PING = %q", got)
			}
			// A client that does not trust the server's CA refuses it.
			distrust := p.tlsClientConfig(true)
			distrust.RootCAs = x509.NewCertPool()
			if err := tlsPing(addr, distrust); err == nil {
				t.Error("a client without the CA accepted the server's certificate")
			}
		})
	}
}

// TestTLSConnectionLoop runs what depends on the connection loop over TLS:
// pipelining across TLS records, a pub/sub message (another connection
// wakes the subscriber with an expired read deadline, which must not
// break the TLS stream), a blocked BLPOP woken by a push, CLIENT KILL, and
// a client that sends plain RESP to the TLS port.
func TestTLSConnectionLoop(t *testing.T) {
	p := newTestPKI(t)
	_, plain, addr := newTLSTestServer(t, p)
	conf := p.tlsClientConfig(true)
	c, err := dialTLSRaw(t, addr, conf)
	if err != nil {
		t.Fatal(err)
	}
	// 2000 pipelined SETs, larger than a TLS record, in one write.
	var b strings.Builder
	val := strings.Repeat("v", 100)
	for i := range 2000 {
		b.WriteString(encodeCommand("SET", "k"+string(rune('a'+i%26)), val))
	}
	c.send(b.String())
	for i := range 2000 {
		if got := c.readReply(); got != "+OK\r\n" {
			t.Fatalf("reply %d = %q", i, got)
		}
	}
	if got := c.do("GET", "ka"); got != "$100\r\n"+val+"\r\n" {
		t.Fatalf("GET = %q", got)
	}

	sub, err := dialTLSRaw(t, addr, conf)
	if err != nil {
		t.Fatal(err)
	}
	if got := sub.do("SUBSCRIBE", "ch"); !strings.Contains(got, "subscribe") {
		t.Fatalf("SUBSCRIBE = %q", got)
	}
	for i := range 3 { // each message is a wake-up by read deadline
		if got := dialRaw(t, plain).do("PUBLISH", "ch", "m"); got != ":1\r\n" {
			t.Fatalf("PUBLISH = %q", got)
		}
		if got := sub.readReply(); got != "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\nm\r\n" {
			t.Fatalf("message %d = %q", i, got)
		}
	}

	bl, err := dialTLSRaw(t, addr, conf)
	if err != nil {
		t.Fatal(err)
	}
	bl.send(encodeCommand("BLPOP", "list", "5"))
	time.Sleep(50 * time.Millisecond)
	c.do("RPUSH", "list", "x")
	if got := bl.readReply(); got != "*2\r\n$4\r\nlist\r\n$1\r\nx\r\n" {
		t.Fatalf("BLPOP = %q", got)
	}
	if got := bl.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING after BLPOP = %q", got)
	}

	// CLIENT KILL of a TLS client ends it.
	if got := bl.do("CLIENT", "SETNAME", "victim"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	id := strings.TrimSuffix(strings.TrimPrefix(bl.do("CLIENT", "ID"), ":"), "\r\n")
	if got := c.do("CLIENT", "KILL", "ID", id); got != ":1\r\n" {
		t.Fatalf("CLIENT KILL = %q", got)
	}
	bl.expectClosed()

	// Plain RESP on the TLS port: the handshake fails, the connection is
	// closed, the server goes on.
	junk := dialRaw(t, addr)
	junk.send(encodeCommand("PING"))
	junk.expectClosed()
	if got := c.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING = %q", got)
	}
}

// TestTLSMaxClients: a TLS connection over maxclients gets Redis's error
// after its handshake, which runs off the accept loop (a plain client is
// refused meanwhile), and is closed.
func TestTLSMaxClients(t *testing.T) {
	p := newTestPKI(t)
	_, plain, addr := newTLSTestServer(t, p, func(c *Config) { c.MaxClients = 1 })
	first, err := dialTLSRaw(t, addr, p.tlsClientConfig(true))
	if err != nil {
		t.Fatal(err)
	}
	if got := first.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING = %q", got)
	}
	// A TCP connection to the TLS port that never starts its handshake
	// does not hold up the refusal of the next clients.
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	const full = "-ERR max number of clients reached\r\n"
	if got := dialRaw(t, plain).readReply(); got != full {
		t.Fatalf("plain client over maxclients got %q", got)
	}
	start := time.Now()
	second, err := dialTLSRaw(t, addr, p.tlsClientConfig(true))
	if err != nil {
		t.Fatal(err)
	}
	if got := second.readReply(); got != full {
		t.Fatalf("TLS client over maxclients got %q", got)
	}
	// The silent connection's refusal waits up to 1 s for its handshake:
	// in the accept loop, it would have delayed this one as long.
	if d := time.Since(start); d > 900*time.Millisecond {
		t.Errorf("the refusal took %v: the accept loop waited for a handshake", d)
	}
	second.expectClosed()
}

// TestTLSConfigSet: CONFIG GET lists the tls rows; CONFIG SET of the
// certificate and key reloads them (new handshakes get the new
// certificate), a file that cannot be loaded refuses the whole CONFIG SET
// and changes nothing, and tls-auth-clients changes at once.
func TestTLSConfigSet(t *testing.T) {
	p := newTestPKI(t)
	_, plain, addr := newTLSTestServer(t, p)
	ctl := dialRaw(t, plain)
	if got := ctl.do("CONFIG", "GET", "tls-auth-clients"); got != "*2\r\n$16\r\ntls-auth-clients\r\n$3\r\nyes\r\n" {
		t.Fatalf("CONFIG GET tls-auth-clients = %q", got)
	}
	if got := ctl.do("CONFIG", "GET", "tls-cert-file"); !strings.Contains(got, p.serverCert) {
		t.Fatalf("CONFIG GET tls-cert-file = %q", got)
	}
	served := func() *x509.Certificate {
		t.Helper()
		c, err := tls.Dial("tcp", addr, p.tlsClientConfig(true))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0]
	}
	if got := served(); !got.Equal(p.serverLeaf) {
		t.Fatalf("served certificate %v, want the configured one", got.Subject)
	}

	newCert, newKey, newLeaf := p.issue(t, "server2", x509.ExtKeyUsageServerAuth)
	// A key that does not match the certificate: refused, nothing changes.
	const refused = "-ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - Unable to update TLS configuration. Check server logs.\r\n"
	if got := ctl.do("CONFIG", "SET", "tls-cert-file", newCert, "tls-key-file", p.serverKey); got != refused {
		t.Fatalf("CONFIG SET with a mismatched key = %q", got)
	}
	if got := ctl.do("CONFIG", "SET", "tls-cert-file", filepath.Join(p.dir, "missing.crt")); got != refused {
		t.Fatalf("CONFIG SET with a missing file = %q", got)
	}
	if got := ctl.do("CONFIG", "GET", "tls-cert-file"); !strings.Contains(got, p.serverCert) {
		t.Fatalf("after refused sets, CONFIG GET tls-cert-file = %q", got)
	}
	if got := served(); !got.Equal(p.serverLeaf) {
		t.Fatal("a refused CONFIG SET changed the certificate")
	}
	// Certificate and key together: applied.
	if got := ctl.do("CONFIG", "SET", "tls-cert-file", newCert, "tls-key-file", newKey); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET tls-cert-file tls-key-file = %q", got)
	}
	if got := served(); !got.Equal(newLeaf) {
		t.Fatalf("after CONFIG SET, served %v", got.Subject)
	}
	// The same file names again reload the files (a rotated certificate).
	rotated, rotatedKey, rotatedLeaf := p.issue(t, "server3", x509.ExtKeyUsageServerAuth)
	for _, mv := range [][2]string{{rotated, newCert}, {rotatedKey, newKey}} {
		if err := os.Rename(mv[0], mv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if got := ctl.do("CONFIG", "SET", "tls-cert-file", newCert); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET tls-cert-file (same name) = %q", got)
	}
	if got := served(); !got.Equal(rotatedLeaf) {
		t.Fatalf("after a reload, served %v", got.Subject)
	}

	if err := tlsPing(addr, p.tlsClientConfig(false)); err == nil {
		t.Fatal("tls-auth-clients yes: a client without a certificate was served")
	}
	if got := ctl.do("CONFIG", "SET", "tls-auth-clients", "no"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET tls-auth-clients no = %q", got)
	}
	if err := tlsPing(addr, p.tlsClientConfig(false)); err != nil {
		t.Fatalf("tls-auth-clients no: %v", err)
	}
	if got := ctl.do("CONFIG", "SET", "tls-auth-clients", "maybe"); got != "-ERR CONFIG SET failed (possibly related to argument 'tls-auth-clients') - argument(s) must be one of the following: no, yes, optional\r\n" {
		t.Fatalf("CONFIG SET tls-auth-clients maybe = %q", got)
	}
	if got := ctl.do("CONFIG", "SET", "tls-protocols", "SSLv3"); got != "-ERR CONFIG SET failed (possibly related to argument 'tls-protocols') - Unable to update TLS configuration. Check server logs.\r\n" {
		t.Fatalf("CONFIG SET tls-protocols SSLv3 = %q", got)
	}
	if got := ctl.do("CONFIG", "SET", "tls-port", "1"); got != "-ERR CONFIG SET failed (possibly related to argument 'tls-port') - can't set immutable config\r\n" {
		t.Fatalf("CONFIG SET tls-port = %q", got)
	}
}

// TestTLSProtocols: tls-protocols bounds the versions a client may use
// (from the start-up config, then set with CONFIG SET).
func TestTLSProtocols(t *testing.T) {
	p := newTestPKI(t)
	_, plain, addr := newTLSTestServer(t, p, func(c *Config) { c.TLS.Protocols = "TLSv1.3" })
	conf := p.tlsClientConfig(true)
	conf.MaxVersion = tls.VersionTLS12
	if err := tlsPing(addr, conf); err == nil {
		t.Error("tls-protocols TLSv1.3 at start-up: a TLS 1.2 client was served")
	}
	ctl := dialRaw(t, plain)
	for _, tc := range []struct {
		protocols   string
		client      uint16 // the only version the client offers
		wantHandled bool
	}{
		{"", tls.VersionTLS12, true},
		{"", tls.VersionTLS13, true},
		{"", tls.VersionTLS11, false},
		{"TLSv1.3", tls.VersionTLS12, false},
		{"tlsv1.3", tls.VersionTLS13, true},
		{"TLSv1.2", tls.VersionTLS13, false},
		{"TLSv1.2", tls.VersionTLS12, true},
		{"TLSv1.2 TLSv1.3", tls.VersionTLS13, true},
	} {
		if got := ctl.do("CONFIG", "SET", "tls-protocols", tc.protocols); got != "+OK\r\n" {
			t.Fatalf("CONFIG SET tls-protocols %q = %q", tc.protocols, got)
		}
		conf := p.tlsClientConfig(true)
		conf.MinVersion, conf.MaxVersion = tc.client, tc.client
		if err := tlsPing(addr, conf); (err == nil) != tc.wantHandled {
			t.Errorf("tls-protocols %q, client version %x: err = %v", tc.protocols, tc.client, err)
		}
	}
	for _, bad := range []string{"TLSv1.4", "SSLv3", "TLSv1.2,TLSv1.3"} {
		if _, _, err := parseTLSProtocols(bad); err == nil {
			t.Errorf("tls-protocols %q accepted", bad)
		}
	}
}

// TestTLSStartupErrors: a TLS port with a missing or unusable file refuses
// to start, saying which.
func TestTLSStartupErrors(t *testing.T) {
	p := newTestPKI(t)
	base := func() Config {
		c := DefaultConfig()
		c.Port, c.Shards = 0, 16
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		c.TLS = TLSConfig{Port: 1, CertFile: p.serverCert, KeyFile: p.serverKey, CACertFile: p.caFile, AuthClients: "yes"}
		return c
	}
	for _, tc := range []struct {
		name string
		mod  func(*TLSConfig)
		want []string // all in the error
	}{
		{"no cert", func(t *TLSConfig) { t.CertFile = "" }, []string{"no tls-cert-file configured"}},
		{"no key", func(t *TLSConfig) { t.KeyFile = "" }, []string{"no tls-key-file configured"}},
		{"no CA", func(t *TLSConfig) { t.CACertFile = "" }, []string{"tls-ca-cert-file must be set"}},
		{"bad protocols", func(t *TLSConfig) { t.Protocols = "TLSv9" }, []string{"Invalid tls-protocols"}},
	} {
		c := base()
		tc.mod(&c.TLS)
		_, err := New(c)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: New err = %v, want %q", tc.name, err, w)
			}
		}
	}
	// No CA is fine when client certificates are not asked for.
	c := base()
	c.TLS.CACertFile, c.TLS.AuthClients = "", "no"
	if _, err := New(c); err != nil {
		t.Errorf("auth-clients no without a CA: %v", err)
	}

	for _, tc := range []struct {
		name string
		mod  func(*TLSConfig)
		want []string
	}{
		{"missing cert", func(t *TLSConfig) { t.CertFile = filepath.Join(p.dir, "nope.crt") }, []string{"tls-cert-file", "nope.crt", "no such file"}},
		{"key for another cert", func(t *TLSConfig) { t.KeyFile = p.clientKey }, []string{"tls-key-file", "private key does not match"}},
		{"missing CA", func(t *TLSConfig) { t.CACertFile = filepath.Join(p.dir, "nope-ca.crt") }, []string{"tls-ca-cert-file", "no such file"}},
		{"CA not PEM", func(t *TLSConfig) { t.CACertFile = p.serverKey }, []string{"tls-ca-cert-file", "no PEM certificate"}},
	} {
		c := base()
		tc.mod(&c.TLS)
		s, err := New(c)
		if err != nil {
			t.Fatalf("%s: New: %v", tc.name, err)
		}
		lns, err := s.Listeners()
		for _, ln := range lns {
			ln.Close()
		}
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: Listeners err = %v, want %q in it", tc.name, err, w)
			}
		}
	}
}

// TestTLSOnly: port 0 with a TLS port turns the plain listener off, as in
// Redis; port 0 without one still picks a free plain port.
func TestTLSOnly(t *testing.T) {
	p := newTestPKI(t)
	port := testport.Free(t, "127.0.0.1") // not one a connection can take before the server listens
	c := DefaultConfig()
	c.Port, c.Shards = 0, 16
	c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	c.TLS = TLSConfig{Port: port, CertFile: p.serverCert, KeyFile: p.serverKey, CACertFile: p.caFile, AuthClients: "yes"}
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	lns, err := s.Listeners()
	if err != nil {
		t.Skipf("the free port was taken meanwhile: %v", err)
	}
	if len(lns) != 1 {
		for _, ln := range lns {
			ln.Close()
		}
		t.Fatalf("%d listeners, want the TLS one only", len(lns))
	}
	if _, ok := lns[0].(tlsListener); !ok || lns[0].Addr().(*net.TCPAddr).Port != port {
		t.Fatalf("listener %T on %v, want TLS on port %d", lns[0], lns[0].Addr(), port)
	}
	// Served, it answers over TLS, and INFO's tcp_port is 0, as Redis's.
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), lns...) }()
	defer func() {
		s.Close()
		waitServe(t, done, "server did not stop", t.Errorf)
	}()
	<-s.Ready()
	tc, err := dialTLSRaw(t, lns[0].Addr().String(), p.tlsClientConfig(true))
	if err != nil {
		t.Fatal(err)
	}
	if got := tc.do("INFO", "server"); !strings.Contains(got, "\r\ntcp_port:0\r\n") {
		t.Errorf("TLS only: INFO server = %q, want tcp_port:0", got)
	}

	c.TLS.Port = 0
	s2, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	lns2, err := s2.Listeners()
	if err != nil {
		t.Fatal(err)
	}
	for _, ln := range lns2 {
		ln.Close()
	}
	if len(lns2) != 1 {
		t.Fatalf("%d listeners without TLS, want 1", len(lns2))
	}
	if _, ok := lns2[0].(tlsListener); ok {
		t.Fatal("a TLS listener without tls-port")
	}

	// Serve with no listener at all fails rather than hangs.
	if err := s2.Serve(context.Background()); err == nil || !strings.Contains(err.Error(), "no listener") {
		t.Fatalf("Serve without listeners: %v", err)
	}
}

// TestTLSRedisCli: redis-cli --tls, with the CA and a client certificate.
func TestTLSRedisCli(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		if os.Getenv("TURNSTILE_REQUIRE_REDIS") == "1" {
			t.Fatal("redis-cli not found and TURNSTILE_REQUIRE_REDIS=1")
		}
		t.Skip("redis-cli not installed")
	}
	p := newTestPKI(t)
	_, _, addr := newTLSTestServer(t, p)
	host, port, _ := net.SplitHostPort(addr)
	run := func(withCert bool, args ...string) (string, error) {
		a := []string{"-h", host, "-p", port, "--tls", "--cacert", p.caFile}
		if withCert {
			a = append(a, "--cert", p.clientCert, "--key", p.clientKey)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, cli, append(a, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := run(true, "SET", "greeting", "hello"); err != nil || out != "OK" {
		t.Fatalf("redis-cli --tls SET: %q, %v", out, err)
	}
	if out, err := run(true, "GET", "greeting"); err != nil || out != "hello" {
		t.Fatalf("redis-cli --tls GET: %q, %v", out, err)
	}
	if out, _ := run(false, "PING"); out == "PONG" {
		t.Fatal("redis-cli --tls without a client certificate was served under tls-auth-clients yes")
	}
}
