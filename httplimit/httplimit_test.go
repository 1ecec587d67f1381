package httplimit

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/turnstile/turnstile/server"
)

// startTurnstile runs a Turnstile server in the test on a free port.
func startTurnstile(t *testing.T) string {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Port = 0
	cfg.Persist.Dir = t.TempDir()
	cfg.Persist.Save = nil
	cfg.Logger = slog.New(slog.DiscardHandler)
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), ln) }()
	<-s.Ready()
	t.Cleanup(func() { s.Close(); <-done })
	return ln.Addr().String()
}

func client(t *testing.T, addr string) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func get(t *testing.T, url, user string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("X-User", user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func byUser(r *http.Request) string { return r.Header.Get("X-User") }

var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "served\n") })

// TestMiddlewareEndToEnd: three requests per minute per user through HTTP:
// 200s with the RateLimit headers, then 429 with Retry-After, the headers
// and a problem+json body; another user is not affected.
func TestMiddlewareEndToEnd(t *testing.T) {
	l, err := New(client(t, startTurnstile(t)), Rule{Name: "per-user", Algorithm: "FIXED", Limit: 3, Period: time.Minute}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(l.Middleware(byUser)(ok))
	defer srv.Close()
	for i := range 3 {
		resp, body := get(t, srv.URL, "u42")
		if resp.StatusCode != 200 || body != "served\n" {
			t.Fatalf("request %d: %d %q", i+1, resp.StatusCode, body)
		}
		if got := resp.Header.Get("RateLimit-Policy"); got != `"per-user";q=3;w=60` {
			t.Fatalf("RateLimit-Policy: %q", got)
		}
		if got := resp.Header.Get("RateLimit"); !strings.HasPrefix(got, `"per-user";r=`+string(rune('2'-i))+";t=") {
			t.Fatalf("RateLimit: %q", got)
		}
	}
	resp, body := get(t, srv.URL, "u42")
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("4th request: %d", resp.StatusCode)
	}
	retry := resp.Header.Get("Retry-After")
	if retry == "" || retry == "0" || len(retry) > 2 {
		t.Fatalf("Retry-After: %q (the window's end, 1-60 s)", retry)
	}
	if resp.Header.Get("Content-Type") != "application/problem+json" || !strings.Contains(body, `"status":429`) ||
		resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("429 response: %v %q", resp.Header, body)
	}
	if resp, _ := get(t, srv.URL, "u43"); resp.StatusCode != 200 {
		t.Fatalf("another user: %d", resp.StatusCode)
	}
}

// TestPolicies: named rules on the server through RL.CHECK.
func TestPolicies(t *testing.T) {
	rdb := client(t, startTurnstile(t))
	ctx := context.Background()
	if err := rdb.Do(ctx, "RL.POLICY", "SET", "login", "sliding", "2", "1m").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Do(ctx, "RL.POLICY", "SET", "ip", "gcra", "100", "1m").Err(); err != nil {
		t.Fatal(err)
	}
	l, err := New(rdb, Rule{Policies: []string{"ip", "login"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if res := l.Allow(ctx, "u1"); !res.Allowed || res.Err != nil {
			t.Fatalf("call %d: %+v", i+1, res)
		}
	}
	res := l.Allow(ctx, "u1")
	if res.Allowed || res.Denier != "login" || res.RetryAfter <= 0 || res.Limit != 2 {
		t.Fatalf("3rd call: %+v", res)
	}
	h := http.Header{}
	l.Headers(h, res)
	if !strings.HasPrefix(h.Get("RateLimit"), `"login";r=0;t=`) || h.Get("Retry-After") == "" {
		t.Fatalf("headers: %v", h)
	}
}

// TestFailModes: with Turnstile unreachable, fail open lets requests
// through and fail closed answers 503; after Failures failures the breaker
// stops calling.
func TestFailModes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close() // nothing listens there now
	rdb := client(t, dead)
	open, _ := New(rdb, Rule{Limit: 1, Period: time.Second}, Options{Failures: 2, Cooldown: time.Hour})
	for i := range 3 {
		res := open.Allow(context.Background(), "k")
		if !res.Allowed || !res.Unavailable || res.Err == nil {
			t.Fatalf("fail open, call %d: %+v", i+1, res)
		}
		if wantOpen := i >= 2; strings.Contains(res.Err.Error(), "breaker open") != wantOpen {
			t.Fatalf("call %d: %v (breaker open from the 3rd call)", i+1, res.Err)
		}
	}
	closed, _ := New(rdb, Rule{Limit: 1, Period: time.Second, FailClosed: true}, Options{})
	srv := httptest.NewServer(closed.Middleware(byUser)(ok))
	defer srv.Close()
	if resp, body := get(t, srv.URL, "u"); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "unavailable") {
		t.Fatalf("fail closed: %d %q", resp.StatusCode, body)
	}
}

// TestBreakerHalfOpen: after the cool-down one trial call goes through;
// its success closes the breaker, its failure opens it again.
func TestBreakerHalfOpen(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	b := &breaker{failures: 2, cooldown: time.Second, now: func() time.Time { return now }}
	b.done(false)
	if !b.allow() {
		t.Fatal("open after one failure of two")
	}
	b.done(false)
	if b.allow() {
		t.Fatal("closed after two failures")
	}
	now = now.Add(time.Second)
	if !b.allow() {
		t.Fatal("no trial after the cool-down")
	}
	if b.allow() {
		t.Fatal("a second call during the trial")
	}
	b.done(false)
	if b.allow() {
		t.Fatal("closed after a failed trial")
	}
	now = now.Add(time.Second)
	if !b.allow() {
		t.Fatal("no trial after the second cool-down")
	}
	b.done(true)
	if !b.allow() || b.open() {
		t.Fatal("still open after a good trial")
	}
}
