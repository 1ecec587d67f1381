package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestSignalLoop: a signal runs the shutdown; a failed one leaves the
// loop waiting for the next signal, which tries again; a SIGINT while a
// shutdown is under way returns at once; Serve's result ends the loop.
func TestSignalLoop(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	served := make(chan error, 1)
	sigs := make(chan os.Signal, 1)
	results := make(chan error)
	calls := make(chan struct{}, 4)
	shutdown := func() error { calls <- struct{}{}; return <-results }
	done := make(chan error, 1)
	go func() { done <- serveUntilStopped(served, sigs, shutdown, log) }()

	expectCall := func() {
		t.Helper()
		select {
		case <-calls:
		case <-time.After(5 * time.Second):
			t.Fatal("the signal did not start a shutdown")
		}
	}
	sigs <- syscall.SIGTERM
	expectCall()
	sigs <- syscall.SIGTERM // while it runs: ignored
	results <- errors.New("disk full")
	// After the failure a SIGTERM tries again. (A SIGTERM the loop reads
	// before it has seen the failure is ignored, so send until one starts
	// a shutdown; the ones after it are ignored while it runs.)
	retried := false
	for i := 0; i < 500 && !retried; i++ {
		select {
		case sigs <- syscall.SIGTERM:
		default:
		}
		select {
		case <-calls:
			retried = true
		case <-time.After(10 * time.Millisecond):
		}
	}
	if !retried {
		t.Fatal("a SIGTERM after a failed shutdown did not try again")
	}
	select {
	case err := <-done:
		t.Fatalf("the loop ended while the shutdown was still running: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	sigs <- os.Interrupt // SIGINT while shutting down: quit now
	select {
	case err := <-done:
		if !errors.Is(err, errInsist) {
			t.Fatalf("second SIGINT: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a SIGINT during a shutdown did not end the loop")
	}
	select {
	case <-calls:
		t.Fatal("more shutdowns than signals")
	default:
	}

	// A successful shutdown: the loop ends with Serve's result.
	done = make(chan error, 1)
	go func() { done <- serveUntilStopped(served, sigs, func() error { served <- nil; return nil }, log) }()
	sigs <- syscall.SIGTERM
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the loop did not end after a successful shutdown")
	}
}

// TestSIGTERMWhileSaveFailsKeepsServing runs the server as a process
// with the default save rules, makes its directory unusable (moved away),
// and sends SIGTERM: the final snapshot fails, so the process keeps
// serving every key instead of exiting with them lost. Once the directory
// is back, SIGTERM stops it (exit status 0) and the snapshot holds every
// key.
func TestSIGTERMWhileSaveFailsKeepsServing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process")
	}
	base := t.TempDir()
	dir := filepath.Join(base, "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := startServerProcess(t, "--dir", dir)
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: p.addr})
	defer rc.Close()
	const n = 500
	for i := 0; i < n; i++ {
		if err := rc.Set(ctx, fmt.Sprint("key:", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rc.Do(ctx, "CL.THROTTLE", "user", "0", "1", "3600").Err(); err != nil {
		t.Fatal(err)
	}
	away := filepath.Join(base, "away")
	if err := os.Rename(dir, away); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	for round := 0; round < 2; round++ { // SIGTERM again: still refused
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-exited:
			t.Fatalf("the server exited although its final snapshot failed: %v", err)
		case <-time.After(300 * time.Millisecond):
		}
		if got, err := rc.DBSize(ctx).Result(); err != nil || got != n+1 {
			t.Fatalf("after SIGTERM %d: DBSIZE %d, %v; want %d", round+1, got, err, n+1)
		}
	}
	if err := os.Rename(away, dir); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after a successful shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not exit once the snapshot could be written")
	}
	p = startServerProcess(t, "--dir", dir)
	rc2 := redis.NewClient(&redis.Options{Addr: p.addr})
	defer rc2.Close()
	if got, err := rc2.DBSize(ctx).Result(); err != nil || got != n+1 {
		t.Fatalf("after restart: DBSIZE %d, %v; want %d", got, err, n+1)
	}
	// The limiter is still limited: its state survived.
	res, err := rc2.Do(ctx, "CL.THROTTLE", "user", "0", "1", "3600").Int64Slice()
	if err != nil || res[0] != 1 {
		t.Fatalf("limiter after restart: %v, %v; want limited", res, err)
	}
}
