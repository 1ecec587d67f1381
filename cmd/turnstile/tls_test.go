package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key to
// dir and returns their paths.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	return certFile, keyFile
}

// TestRunRefusesBadTLSFiles: the binary does not start with a TLS port
// whose files are missing or not configured, and says why.
func TestRunRefusesBadTLSFiles(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.crt")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-port", "1"}, "no tls-cert-file configured"},
		{[]string{"--tls-port", strconv.Itoa(freePort(t)), "--tls-cert-file", missing, "--tls-key-file", missing, "--tls-auth-clients", "no"},
			"loading tls-cert-file " + missing},
		{[]string{"--tls-port", "1", "--tls-cert-file", missing, "--tls-key-file", missing},
			"tls-ca-cert-file must be set"},
	} {
		done := make(chan error, 1)
		args := append([]string{"--port", strconv.Itoa(freePort(t)), "--dir", dir, "--save", ""}, tc.args...)
		go func() { done <- run(context.Background(), nil, args, io.Discard) }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v: run = %v, want an error with %q", tc.args, err, tc.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%v: run did not refuse to start", tc.args)
		}
	}
}

// TestPing: `turnstile ping`, the health check, over the plain and the TLS
// port of the real binary's run, and against nothing.
func TestPing(t *testing.T) {
	dir := t.TempDir()
	cert, key := selfSigned(t, dir)
	port, tlsPort := freePort(t), freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, nil, []string{"--port", strconv.Itoa(port), "--dir", dir, "--save", "",
			"--tls-port", strconv.Itoa(tlsPort), "--tls-cert-file", cert, "--tls-key-file", key, "--tls-auth-clients", "no"}, io.Discard)
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("run did not return after cancel")
		}
	}()
	p, tp := strconv.Itoa(port), strconv.Itoa(tlsPort)
	var out bytes.Buffer
	var err error
	for range 100 { // until the server listens
		if err = ping([]string{"-p", p}, &out); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil || out.String() != "PONG\n" {
		t.Fatalf("ping: %q, %v", out.String(), err)
	}
	for _, args := range [][]string{{"-p", tp, "--tls"}, {"-p", tp, "--tls", "--cacert", cert}} {
		out.Reset()
		if err := ping(args, &out); err != nil || out.String() != "PONG\n" {
			t.Errorf("ping %v: %q, %v", args, out.String(), err)
		}
	}
	// Plain PING to the TLS port, or a CA that did not sign the
	// certificate: failures.
	if err := ping([]string{"-p", tp}, io.Discard); err == nil {
		t.Error("a plain ping of the TLS port succeeded")
	}
	other, _ := selfSigned(t, t.TempDir())
	if err := ping([]string{"-p", tp, "--tls", "--cacert", other}, io.Discard); err == nil {
		t.Error("ping --tls with the wrong CA succeeded")
	}
	// With a password the server answers NOAUTH: up.
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", p))
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "CONFIG SET requirepass s3cret\r\n")
	if line, _ := readLine(c); line != "+OK" {
		t.Fatalf("CONFIG SET requirepass = %q", line)
	}
	c.Close()
	out.Reset()
	if err := ping([]string{"-p", p}, &out); err != nil || !strings.Contains(out.String(), "password") {
		t.Errorf("ping with a password set: %q, %v", out.String(), err)
	}
	if err := ping([]string{"-p", strconv.Itoa(freePort(t))}, io.Discard); err == nil {
		t.Error("ping of a closed port succeeded")
	}
}

func readLine(c net.Conn) (string, error) {
	var b []byte
	one := make([]byte, 1)
	for len(b) < 1024 {
		if _, err := c.Read(one); err != nil {
			return string(b), err
		}
		if one[0] == '\n' {
			return strings.TrimSuffix(string(b), "\r"), nil
		}
		b = append(b, one[0])
	}
	return string(b), nil
}
