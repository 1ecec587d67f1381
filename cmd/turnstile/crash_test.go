package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/turnstile/turnstile/internal/testport"
)

// TestMain lets the test binary double as the server, so the crash test can
// run real processes and kill them without building anything.
func TestMain(m *testing.M) {
	redis.SetLogger(quietLogger{})              // dial errors after a kill are expected
	if os.Getenv("TURNSTILE_TEST_CLI") == "1" { // the binary's main (cli_test.go)
		sigs := make(chan os.Signal, 4)
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
		os.Exit(cli(strings.Split(os.Getenv("TURNSTILE_TEST_ARGS"), "\x1f"), sigs, os.Stdout, os.Stderr))
	}
	if os.Getenv("TURNSTILE_TEST_SERVER") == "1" {
		args := strings.Split(os.Getenv("TURNSTILE_TEST_ARGS"), "\x1f")
		sigs := make(chan os.Signal, 4)
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
		if err := run(context.Background(), sigs, args, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serverProcess is the server running as a child process.
type serverProcess struct {
	cmd  *exec.Cmd
	addr string
}

func startServerProcess(t *testing.T, args ...string) *serverProcess {
	t.Helper()
	port := testport.Free(t, "127.0.0.1") // not one a connection can take before the server listens
	args = append(args, "--port", strconv.Itoa(port), "--loglevel", "warning")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TURNSTILE_TEST_SERVER=1", "TURNSTILE_TEST_ARGS="+strings.Join(args, "\x1f"))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serverProcess{cmd: cmd, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	t.Cleanup(func() { p.kill() })
	rc := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
	defer rc.Close()
	deadline := time.Now().Add(20 * time.Second)
	for rc.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("server process did not become ready")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return p
}

func (p *serverProcess) kill() {
	if p.cmd.ProcessState == nil {
		p.cmd.Process.Kill() // SIGKILL: no shutdown code runs
		p.cmd.Wait()
	}
}

// TestKill9LosesNoAcknowledgedWrite runs INCR and CL.THROTTLE load against a
// server process, kills it with SIGKILL at a random moment, restarts it and
// checks that every write a client was told succeeded is still there, for
// each appendfsync policy (SIGKILL leaves the kernel's buffers intact, and
// Turnstile writes the log before it replies, so even "no" loses nothing).
func TestKill9LosesNoAcknowledgedWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills server processes")
	}
	for _, policy := range []string{"always", "everysec", "no"} {
		t.Run(policy, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"--dir", dir, "--appendonly", "yes", "--appendfsync", policy, "--save", ""}
			r := rand.New(rand.NewPCG(uint64(len(policy)), 1))
			acked := map[string]int64{} // key -> highest acknowledged count
			for round := 0; round < 4; round++ {
				p := startServerProcess(t, args...)
				checkAcked(t, p.addr, acked)
				runUntilKilled(t, p, time.Duration(100+r.IntN(400))*time.Millisecond, acked)
			}
			p := startServerProcess(t, args...)
			checkAcked(t, p.addr, acked)
			var total int64
			for _, n := range acked {
				total += n
			}
			if total < 1000 {
				t.Fatalf("only %d acknowledged writes: the test did not exercise much", total)
			}
			t.Logf("%d acknowledged writes over 4 kills, none lost", total)
		})
	}
}

// runUntilKilled runs 8 clients, each on its own counter and limiter, and
// SIGKILLs the server after d. It records the acknowledged counts.
func runUntilKilled(t *testing.T, p *serverProcess, d time.Duration, acked map[string]int64) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	ctx := context.Background()
	for c := 0; c < 8; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			rc := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1, PoolSize: 1})
			defer rc.Close()
			counter, limiter := fmt.Sprint("counter:", c), fmt.Sprint("limiter:", c)
			for i := 0; i < 100000; i++ {
				n, err := rc.Incr(ctx, counter).Result()
				if err != nil {
					return
				}
				mu.Lock()
				acked[counter] = max(acked[counter], n)
				mu.Unlock()
				// A huge burst: every call is allowed and books one more token.
				res, err := rc.Do(ctx, "CL.THROTTLE", limiter, "1000000", "1", "3600").Int64Slice()
				if err != nil {
					return
				}
				if res[0] != 0 {
					t.Errorf("limiter call limited: %v", res)
					return
				}
				mu.Lock()
				acked[limiter]++
				mu.Unlock()
			}
		}(c)
	}
	// Kill after d, but not before the round has some acknowledged writes
	// (fsync always on a loaded machine can be slow), and at most 10 s in.
	count := func() (n int64) {
		mu.Lock()
		defer mu.Unlock()
		for _, v := range acked {
			n += v
		}
		return n
	}
	start := count()
	time.Sleep(d)
	for deadline := time.Now().Add(10 * time.Second); count()-start < 300 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	p.kill()
	wg.Wait()
}

// checkAcked verifies every acknowledged write survived.
func checkAcked(t *testing.T, addr string, acked map[string]int64) {
	t.Helper()
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer rc.Close()
	ctx := context.Background()
	for key, want := range acked {
		var got int64
		if strings.HasPrefix(key, "counter:") {
			v, err := rc.Get(ctx, key).Int64()
			if err != nil {
				t.Fatalf("GET %s: %v", key, err)
			}
			got = v
		} else {
			// A peek (quantity 0) shows how many tokens are booked.
			res, err := rc.Do(ctx, "CL.THROTTLE", key, "1000000", "1", "3600", "0").Int64Slice()
			if err != nil {
				t.Fatalf("peek %s: %v", key, err)
			}
			got = res[1] - res[2] // limit - remaining = tokens in use
		}
		if got < want {
			t.Errorf("%s: %d acknowledged, only %d survived", key, want, got)
		}
		acked[key] = max(want, got) // unacknowledged writes may also have landed
	}
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}
