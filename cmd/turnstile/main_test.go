package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/turnstile/turnstile/clock"
	"github.com/turnstile/turnstile/internal/testport"
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
	port := testport.Free(t, "127.0.0.1") // not one a connection can take before the server listens
	ctx, cancel := context.WithCancel(context.Background())
	var logs bytes.Buffer
	done := make(chan error, 1)
	dir := t.TempDir()
	go func() { done <- run(ctx, nil, []string{"--port", strconv.Itoa(port), "--dir", dir}, &logs) }()
	var c net.Conn
	var err error
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
	// The server accepts while it loads and answers LOADING until then,
	// as Redis does: ask again until it is ready.
	r := bufio.NewReader(c)
	for {
		c.Write([]byte("PING\r\n"))
		line, err := r.ReadString('\n')
		if strings.HasPrefix(line, "-LOADING ") {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if line != "+PONG\r\n" {
			t.Fatalf("got %q, %v", line, err)
		}
		break
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
	// The clock keeps its state next to the data, to continue from it.
	var st struct {
		Time   int64 `json:"time_ns"`
		Offset int64 `json:"offset_ns"`
	}
	b, err := os.ReadFile(filepath.Join(dir, clock.StateFile))
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	if d := time.Duration(st.Time - time.Now().UnixNano()).Abs(); err != nil || d > 5*time.Second || st.Offset/1e6 != 0 {
		t.Errorf("clock state %q, %v; want one written at shutdown, now, offset 0", b, err)
	}
	if !strings.Contains(logs.String(), "no clock state yet") {
		t.Errorf("missing the clock's start-up line: %s", logs.String())
	}
}
