package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
)

// TLS: a second listener, next to the plain port, whose connections are
// *tls.Conn (crypto/tls). The connection loop is the same: a *tls.Conn has
// no file descriptor to give (it is not a syscall.Conn), so it is served by
// the portable serveStream loop over Read and Write, and the raw socket
// loop of plain connections (conn_raw_linux.go) is untouched. Deadlines,
// which kill and the wake-ups of outq.go and blocking.go set from other
// goroutines, pass through to the socket; a read deadline that expires
// inside a TLS record leaves the record's bytes buffered in the tls.Conn,
// so a wake-up loses nothing.
//
// The handshake happens in the connection's goroutine, on its first read,
// never in the accept loop: a peer that never completes it holds one
// goroutine, like a plain client that never sends (timeout closes both).
//
// The settings (tls-cert-file, tls-key-file, tls-ca-cert-file,
// tls-auth-clients, tls-protocols) can change at run time with CONFIG SET,
// as in Redis, where that is how certificates are rotated: the new
// *tls.Config is built (files read, checked) before anything is applied,
// then stored atomically; handshakes after that use it, established
// connections keep theirs. Setting the same file names again reloads the
// files. A failure leaves everything as it was. tls-port cannot change at
// run time.

// TLSConfig is the TLS listener's configuration (the tls-* rows of
// config_params.go).
type TLSConfig struct {
	Port        int    // tls-port; 0: no TLS listener
	CertFile    string // tls-cert-file: the server's PEM certificate (chain)
	KeyFile     string // tls-key-file: its PEM private key
	CACertFile  string // tls-ca-cert-file: PEM CA certificates client certificates must chain to
	AuthClients string // tls-auth-clients: yes (a client certificate is required), optional, no
	Protocols   string // tls-protocols: "TLSv1.2 TLSv1.3"...; "": TLS 1.2 and 1.3

	// built is CONFIG SET's: the configuration the first tls row's check
	// built from the settings, for set to store.
	built *tls.Config
}

// tlsState is the running server's TLS configuration.
type tlsState struct {
	mu       sync.Mutex // guards settings
	settings TLSConfig  // the effective settings (CONFIG GET)
	// conf is what new handshakes use; nil while there is no TLS
	// listener.
	conf atomic.Pointer[tls.Config]
}

// tlsListener marks the TLS listener among those Serve accepts on.
type tlsListener struct{ net.Listener }

// tlsVersions are tls-protocols' names, in order.
var tlsVersions = []struct {
	name    string
	version uint16
}{{"tlsv1", tls.VersionTLS10}, {"tlsv1.1", tls.VersionTLS11}, {"tlsv1.2", tls.VersionTLS12}, {"tlsv1.3", tls.VersionTLS13}}

// parseTLSProtocols returns the lowest and highest version tls-protocols
// names. Go's TLS takes a range, so "TLSv1 TLSv1.2" also allows TLS 1.1.
// "" is TLS 1.2 and 1.3, Redis's default.
func parseTLSProtocols(v string) (lo, hi uint16, err error) {
	for _, tok := range strings.Fields(v) {
		found := false
		for _, tv := range tlsVersions {
			if strings.EqualFold(tok, tv.name) {
				found = true
				if lo == 0 || tv.version < lo {
					lo = tv.version
				}
				hi = max(hi, tv.version)
			}
		}
		if !found {
			return 0, 0, errBadTLSProtocols
		}
	}
	if lo == 0 {
		return tls.VersionTLS12, tls.VersionTLS13, nil
	}
	return lo, hi, nil
}

var errBadTLSProtocols = configError("Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.")

var tlsAuthClientsCodec = codec[string]{
	parse: func(v string) (string, error) {
		switch v = strings.ToLower(v); v {
		case "no", "yes", "optional":
			return v, nil
		}
		return "", oneOfError("no", "yes", "optional")
	},
	format: func(v string) string { return v },
}

// check reports a TLS configuration that cannot work, without reading the
// files (Config.Validate when tls-port is set; Redis checks the settings
// only while TLS is in use, and so does CONFIG SET).
func (t *TLSConfig) check() error {
	if _, _, err := parseTLSProtocols(t.Protocols); err != nil {
		return err
	}
	switch {
	case t.CertFile == "":
		return errors.New("no tls-cert-file configured")
	case t.KeyFile == "":
		return errors.New("no tls-key-file configured")
	case t.AuthClients != "no" && t.CACertFile == "":
		return errors.New("tls-ca-cert-file must be set when tls-auth-clients is yes (the default) or optional")
	}
	return nil
}

// buildTLSConfig reads the files t names and builds the server's
// configuration.
func buildTLSConfig(t TLSConfig) (*tls.Config, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("loading tls-cert-file %s and tls-key-file %s: %w", t.CertFile, t.KeyFile, err)
	}
	lo, hi, err := parseTLSProtocols(t.Protocols)
	if err != nil {
		return nil, err
	}
	conf := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: lo, MaxVersion: hi}
	if t.CACertFile != "" {
		pem, err := os.ReadFile(t.CACertFile)
		if err != nil {
			return nil, fmt.Errorf("loading tls-ca-cert-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("loading tls-ca-cert-file %s: no PEM certificate in it", t.CACertFile)
		}
		conf.ClientCAs = pool
	}
	switch t.AuthClients {
	case "yes":
		conf.ClientAuth = tls.RequireAndVerifyClientCert
	case "optional":
		conf.ClientAuth = tls.VerifyClientCertIfGiven
	default:
		conf.ClientAuth = tls.NoClientCert
	}
	return conf, nil
}

// listenTLS binds addr and returns the TLS listener over it, after
// loading the configured certificate, key and CA: a file that is missing
// or wrong refuses start-up.
func (s *Server) listenTLS(bind string, port int) (net.Listener, error) {
	conf, err := buildTLSConfig(s.tlsSettings())
	if err != nil {
		return nil, fmt.Errorf("TLS: %w", err)
	}
	ln, err := listenBind(bind, port) // every bind address, as the plain port
	if err != nil {
		return nil, fmt.Errorf("tls-port: %w", err)
	}
	s.tls.conf.Store(conf)
	outer := &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		return s.tls.conf.Load(), nil
	}}
	return tlsListener{tls.NewListener(ln, outer)}, nil
}

// tlsSettings returns the effective TLS settings.
func (s *Server) tlsSettings() TLSConfig {
	s.tls.mu.Lock()
	defer s.tls.mu.Unlock()
	return s.tls.settings
}

// checkTLS is the check of the mutable tls-* rows. CONFIG SET parses
// into a scratch Config whose TLS settings start as the effective ones
// (cmd_server.go), so c.TLS is what the command results in; if the TLS
// listener runs, the configuration is built from it (files read; the
// first tls row's check does it for all). An error refuses the whole
// CONFIG SET, in Redis's words; the reason goes to the log. Without a
// TLS listener the settings are only stored, as in Redis.
func (s *Server) checkTLS(c *Config) error {
	if c.TLS.built != nil || s.tls.conf.Load() == nil {
		return nil
	}
	conf, err := buildTLSConfig(c.TLS)
	if err != nil {
		s.log.Warn("CONFIG SET: cannot update the TLS configuration", "err", err)
		return configError("Unable to update TLS configuration. Check server logs.")
	}
	c.TLS.built = conf
	return nil
}

// setTLS applies what checkTLS prepared. Of two CONFIG SETs of tls rows
// at once, the last to apply wins.
func (s *Server) setTLS(c *Config) {
	s.tls.mu.Lock()
	defer s.tls.mu.Unlock()
	s.tls.settings = c.TLS
	s.tls.settings.built = nil
	if c.TLS.built != nil {
		s.tls.conf.Store(c.TLS.built)
	}
}

// tlsRow builds the row of a mutable tls-* string setting.
func tlsRow(name, usage string, field func(*TLSConfig) *string, cd codec[string]) *ConfigParam {
	return row(name, usage, func(c *Config) *string { return field(&c.TLS) }, cd).
		mutable(func(s *Server) string { t := s.tlsSettings(); return cd.format(*field(&t)) },
			func(s *Server, c *Config) { s.setTLS(c) }).
		checked(func(s *Server, c *Config) error { return s.checkTLS(c) })
}
