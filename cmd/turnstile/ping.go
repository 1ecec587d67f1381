package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// pingTimeout bounds the whole of `turnstile ping`: connect, handshake,
// request and reply.
const pingTimeout = 3 * time.Second

// ping implements `turnstile ping [-h HOST] [-p PORT] [--tls [--cacert F]
// [--cert F --key F]]`, the container's health check (the distroless image
// has no shell and no redis-cli): it sends PING and succeeds if the server
// answers PONG, or NOAUTH (it is up and wants a password, which a health
// check need not know). Any other answer (LOADING, MISCONF...), or none
// within pingTimeout, is a failure. The flags are redis-cli's. With --tls
// and no --cacert the server's certificate is not verified: the check only
// asks whether the server is alive.
func ping(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("ping", flag.ContinueOnError)
	host := fs.String("h", "127.0.0.1", "server host")
	port := fs.Int("p", 6379, "server port")
	useTLS := fs.Bool("tls", false, "connect with TLS")
	caFile := fs.String("cacert", "", "CA certificate file to verify the server with (default: not verified)")
	certFile := fs.String("cert", "", "client certificate file (tls-auth-clients yes)")
	keyFile := fs.String("key", "", "client private key file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	addr := net.JoinHostPort(*host, strconv.Itoa(*port))
	deadline := time.Now().Add(pingTimeout)
	conn, err := net.DialTimeout("tcp", addr, pingTimeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(deadline)
	if *useTLS {
		conf := &tls.Config{ServerName: *host, InsecureSkipVerify: *caFile == ""}
		if *caFile != "" {
			pem, err := os.ReadFile(*caFile)
			if err != nil {
				return err
			}
			conf.RootCAs = x509.NewCertPool()
			if !conf.RootCAs.AppendCertsFromPEM(pem) {
				return fmt.Errorf("%s: no PEM certificate in it", *caFile)
			}
		}
		if *certFile != "" || *keyFile != "" {
			cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
			if err != nil {
				return err
			}
			conf.Certificates = []tls.Certificate{cert}
		}
		tc := tls.Client(conn, conf)
		if err := tc.Handshake(); err != nil {
			return fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
		conn = tc
	}
	if _, err := io.WriteString(conn, "*1\r\n$4\r\nPING\r\n"); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return fmt.Errorf("no reply from %s: %w", addr, err)
	}
	line = strings.TrimRight(line, "\r\n")
	switch {
	case line == "+PONG":
		fmt.Fprintln(out, "PONG")
		return nil
	case strings.HasPrefix(line, "-NOAUTH"):
		fmt.Fprintln(out, "up (a password is required)")
		return nil
	}
	return errors.New(strings.TrimPrefix(line, "-"))
}
