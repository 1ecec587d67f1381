package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseConfigFileAndFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "turnstile.conf")
	conf := "# comment\nport 7000\nrequirepass \"s3cret\"\nmaxclients 5\n\nshards 8\n"
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, _, err := parseConfig([]string{"--config", path, "--port", "7001"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Port != 7001 || cfg.RequirePass != "s3cret" || cfg.MaxClients != 5 || cfg.Shards != 8 {
		t.Fatalf("got port %d pass %q maxclients %d shards %d", cfg.Port, cfg.RequirePass, cfg.MaxClients, cfg.Shards)
	}
}

func TestParseConfigErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.conf")
	os.WriteFile(path, []byte("nosuchdirective 1\n"), 0o600)
	for _, args := range [][]string{
		{"--port", "70000"},
		{"--maxclients", "0"},
		{"--loglevel", "loud"},
		{"extra"},
		{"--config", path},
		{"--config", filepath.Join(t.TempDir(), "missing.conf")},
	} {
		if _, _, _, err := parseConfig(args); err == nil {
			t.Errorf("%v: expected an error", args)
		}
	}
}

// TestRunServesAndStops starts the real binary's run function on a free
// port, talks to it, then cancels the context and expects a clean return.
func TestRunServesAndStops(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var logs bytes.Buffer
	done := make(chan error, 1)
	dir := t.TempDir()
	go func() { done <- run(ctx, nil, []string{"--port", strconv.Itoa(port), "--dir", dir}, &logs) }()
	var c net.Conn
	for i := 0; i < 100; i++ {
		if c, err = net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	c.Write([]byte("PING\r\n"))
	buf := make([]byte, 7)
	if n, _ := c.Read(buf); string(buf[:n]) != "+PONG\r\n" {
		t.Fatalf("got %q", buf[:n])
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("run did not return after cancel")
	}
	if !strings.Contains(logs.String(), "turnstile starting") {
		t.Errorf("missing start-up log line: %s", logs.String())
	}
	// The default save rules (as redis.conf's) snapshot at shutdown.
	if _, err := os.Stat(filepath.Join(dir, "dump.tsr")); err != nil {
		t.Errorf("no snapshot written at shutdown: %v", err)
	}
}
