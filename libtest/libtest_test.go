package libtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/turnstile/turnstile/server"
)

// Environment variables that steer the suite.
const (
	envAddr        = "TURNSTILE_LIBTEST_ADDR" // host:port of a server to test instead of an in-process Turnstile
	envRequireLibs = "TURNSTILE_REQUIRE_LIBS" // "1": a missing node, node_modules or python3-limits fails instead of skipping
)

// serverAddr returns the address of the server under test: the one named by
// TURNSTILE_LIBTEST_ADDR, or else a fresh in-process Turnstile on a free
// loopback port that is stopped when the test ends.
func serverAddr(t *testing.T) string {
	t.Helper()
	if addr := os.Getenv(envAddr); addr != "" {
		return addr
	}
	cfg := server.DefaultConfig()
	cfg.Port = 0
	cfg.Shards = 16
	cfg.Persist.Dir = t.TempDir()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := server.New(cfg)
	if err != nil {
		t.Fatalf("new turnstile: %v", err)
	}
	ln, err := s.Listen()
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("turnstile serve: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("turnstile did not stop within 5 s")
		}
	})
	select {
	case <-s.Ready():
	case err := <-done:
		t.Fatalf("turnstile stopped while loading: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("turnstile did not finish loading within 10 s")
	}
	return ln.Addr().String()
}

var nonAlnum = regexp.MustCompile(`[^A-Za-z0-9]+`)

// keyPrefix returns a prefix unique to this test run, e.g.
// "lt:TestRedisRate:3f9a1c2b:", so that tests sharing a server (redis-server
// through TURNSTILE_LIBTEST_ADDR) never touch each other's keys.
func keyPrefix(t *testing.T) string {
	t.Helper()
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("random prefix: %v", err)
	}
	name := strings.Trim(nonAlnum.ReplaceAllString(t.Name(), "_"), "_")
	return "lt:" + name + ":" + hex.EncodeToString(b[:]) + ":"
}

// goRedis returns a go-redis v9 client for addr with short timeouts, closed
// when the test ends.
func goRedis(t *testing.T, addr string) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{
		Addr:         addr,
		DialTimeout:  2 * time.Second,
		ReadTimeout:  3 * time.Second,
		WriteTimeout: 3 * time.Second,
		MaxRetries:   -1, // a failing command must fail the test, not be retried
	})
	t.Cleanup(func() { rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("ping %s: %v", addr, err)
	}
	return rdb
}

// testCtx returns a context bounded by d, cancelled when the test ends.
func testCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// requireLibs reports whether missing external libraries must fail the test
// rather than skip it.
func requireLibs() bool { return os.Getenv(envRequireLibs) == "1" }

// missing skips the test, or fails it under TURNSTILE_REQUIRE_LIBS=1, because
// something the test needs is not installed.
func missing(t *testing.T, format string, args ...any) {
	t.Helper()
	if requireLibs() {
		t.Fatalf("required by "+envRequireLibs+"=1 but missing: "+format, args...)
	}
	t.Skipf("missing (set "+envRequireLibs+"=1 to fail instead): "+format, args...)
}
