package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestSIGHUPReloadsPolicies: SIGHUP reads the policy file again; a file
// with a mistake leaves the rules in force.
func TestSIGHUPReloadsPolicies(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policies.json")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"rules": [{"id": "a", "algorithm": "fixed", "limit": 5, "per": "1m"}]}`)
	port := freePort(t)
	cmd := cliCommand("--port", strconv.Itoa(port), "--dir", dir, "--save", "", "--policies", path)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), MaxRetries: -1})
	defer rc.Close()
	list := func() []string { v, _ := rc.Do(ctx, "RL.POLICY", "LIST").StringSlice(); return v }
	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			if l := list(); len(l) == 1 && l[0] == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("rules %v, want [%s]", list(), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("a")
	write(`{"rules": [{"id": "b", "algorithm": "log", "limit": 5, "per": "1m"}]}`)
	cmd.Process.Signal(syscall.SIGHUP)
	waitFor("b")
	write(`{"rules": [{"id": "c", "algorithm": "log"}]}`) // a mistake: b stays
	cmd.Process.Signal(syscall.SIGHUP)
	time.Sleep(200 * time.Millisecond)
	waitFor("b")
}
