//go:build linux

package server

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The open files tests run the server in a child process (this test binary
// again, running only TestFDHelperProcess), whose RLIMIT_NOFILE the child
// lowers for itself: the test process's own limit is never touched.

const fdHelperEnv = "TURNSTILE_FD_HELPER"

// TestFDHelperProcess is not a test of its own: it is the child process of
// the open files tests, run by startFDChild. Its spec (in fdHelperEnv) is
// "<soft limit> <hard limit> <maxclients> <free>": it sets the limit,
// starts a server and, unless free is negative, opens /dev/null until the
// descriptors run out and closes free of them again, so that accepting a
// few more connections exhausts them. It prints "ADDR <address>", and
// "SERVE-ENDED <err>" if Serve returns before the parent closes stdin.
func TestFDHelperProcess(t *testing.T) {
	spec := os.Getenv(fdHelperEnv)
	if spec == "" {
		t.Skip("the child process of the open files tests")
	}
	var cur, hard uint64
	var maxClients, free int
	if _, err := fmt.Sscan(spec, &cur, &hard, &maxClients, &free); err != nil {
		fmt.Println("BAD-SPEC", err)
		os.Exit(2)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: cur, Max: hard}); err != nil {
		fmt.Println("SETRLIMIT", err)
		os.Exit(2)
	}
	cfg := DefaultConfig()
	cfg.Port = 0
	cfg.Shards = 16
	cfg.MaxClients = maxClients
	cfg.Persist.Dir = t.TempDir()
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	s, err := New(cfg)
	if err != nil {
		fmt.Println("NEW", err)
		os.Exit(2)
	}
	ln, err := s.Listen()
	if err != nil {
		fmt.Println("LISTEN", err)
		os.Exit(2)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), ln) }()
	select {
	case <-s.Ready():
	case err := <-done:
		fmt.Println("SERVE-ENDED", err)
		os.Exit(3)
	}
	// files stays reachable until the process exits: an *os.File the GC
	// collects closes its descriptor in a finalizer, which would hand the
	// exhausted descriptors back behind the test's back.
	var files []*os.File
	if free >= 0 {
		for len(files) < 1<<16 {
			f, err := os.Open(os.DevNull)
			if err != nil {
				break
			}
			files = append(files, f)
		}
		for _, f := range files[len(files)-min(free, len(files)):] {
			f.Close()
		}
		// Collect now, so that a descriptor the GC could close goes
		// before the parent measures, not in the middle of it.
		runtime.GC()
		runtime.GC()
	}
	fmt.Println("ADDR", ln.Addr().String())
	parentGone := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(parentGone)
	}()
	select {
	case err := <-done:
		fmt.Println("SERVE-ENDED", err)
		os.Exit(3)
	case <-parentGone:
	case <-time.After(time.Minute):
	}
	runtime.KeepAlive(files)
	os.Exit(0)
}

// fdChild is a server in a child process with its own open files limit.
type fdChild struct {
	t      *testing.T
	cmd    *exec.Cmd
	addr   string
	stdin  io.WriteCloser
	ended  chan string // the SERVE-ENDED line, if Serve returns
	exited chan struct{}
	mu     sync.Mutex
	stderr bytes.Buffer
}

// startFDChild starts TestFDHelperProcess with the given spec and returns
// once it serves; it is stopped when the test ends.
func startFDChild(t *testing.T, soft, hard uint64, maxClients, free int) *fdChild {
	t.Helper()
	ch := &fdChild{t: t, ended: make(chan string, 1), exited: make(chan struct{})}
	ch.cmd = exec.Command(os.Args[0], "-test.run=^TestFDHelperProcess$", "-test.count=1")
	ch.cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d %d %d %d", fdHelperEnv, soft, hard, maxClients, free))
	ch.cmd.Stderr = writerFunc(func(p []byte) (int, error) {
		ch.mu.Lock()
		defer ch.mu.Unlock()
		return ch.stderr.Write(p)
	})
	stdout, err := ch.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if ch.stdin, err = ch.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := ch.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "ADDR "):
				addr <- strings.TrimPrefix(line, "ADDR ")
			case strings.HasPrefix(line, "SERVE-ENDED"), strings.HasPrefix(line, "BAD-SPEC"),
				strings.HasPrefix(line, "SETRLIMIT"), strings.HasPrefix(line, "NEW"), strings.HasPrefix(line, "LISTEN"):
				ch.ended <- line
			}
		}
		ch.cmd.Wait()
		close(ch.exited)
	}()
	t.Cleanup(func() {
		ch.stdin.Close()
		select {
		case <-ch.exited:
		case <-time.After(10 * time.Second):
			ch.cmd.Process.Kill()
			<-ch.exited
		}
	})
	select {
	case ch.addr = <-addr:
	case line := <-ch.ended:
		t.Fatalf("child server failed to start: %s\n%s", line, ch.log())
	case <-time.After(30 * time.Second):
		t.Fatalf("child server did not start\n%s", ch.log())
	}
	return ch
}

func (ch *fdChild) log() string {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.stderr.String()
}

// alive fails the test if the child's server has stopped.
func (ch *fdChild) alive() {
	ch.t.Helper()
	select {
	case line := <-ch.ended:
		ch.t.Fatalf("the server stopped: %s\n%s", line, ch.log())
	case <-ch.exited:
		ch.t.Fatalf("the server process exited\n%s", ch.log())
	default:
	}
}

// softNoFile is the child's soft open files limit, from /proc.
func (ch *fdChild) softNoFile() string {
	ch.t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", ch.cmd.Process.Pid))
	if err != nil {
		ch.t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(strings.TrimPrefix(line, "Max open files")); len(f) >= 2 && strings.HasPrefix(line, "Max open files") {
			return f[0]
		}
	}
	ch.t.Fatalf("no open files limit in /proc/pid/limits:\n%s", b)
	return ""
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestAcceptSurvivesFDExhaustion: when accepting fails because the process
// is out of file descriptors, the server keeps running and serves again
// once connections close. (Before, the accept loop took EMFILE as fatal:
// Serve returned and every client was dropped.)
func TestAcceptSurvivesFDExhaustion(t *testing.T) {
	ch := startFDChild(t, 128, 128, 10000, 4)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	// More connections than free descriptors: the first few are served,
	// the others wait in the backlog while accept fails with EMFILE.
	const n = 30
	for range n {
		c, err := net.DialTimeout("tcp", ch.addr, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		c.SetWriteDeadline(time.Now().Add(2 * time.Second))
		c.Write([]byte(encodeCommand("PING")))
	}
	pongs := 0
	readBy := time.Now().Add(500 * time.Millisecond)
	for _, c := range conns {
		c.SetReadDeadline(readBy)
		if s, err := readRawReply(bufio.NewReader(c)); err == nil && s == "+PONG\r\n" {
			pongs++
		}
	}
	if pongs == 0 || pongs == n {
		t.Fatalf("%d of %d connections answered: the descriptors were not exhausted as planned\n%s", pongs, n, ch.log())
	}
	time.Sleep(300 * time.Millisecond) // accept keeps failing meanwhile
	ch.alive()
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	closed := time.Now()

	// The descriptors come back: a new client is served.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ch.alive()
		c, err := net.DialTimeout("tcp", ch.addr, 2*time.Second)
		if err == nil {
			c.SetDeadline(time.Now().Add(2 * time.Second))
			c.Write([]byte(encodeCommand("PING")))
			s, rerr := readRawReply(bufio.NewReader(c))
			c.Close()
			if rerr == nil && s == "+PONG\r\n" {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not served again after the connections closed\n%s", ch.log())
		}
		time.Sleep(100 * time.Millisecond)
	}
	log := ch.log()
	if !strings.Contains(log, "accepting a connection failed") || !strings.Contains(log, "too many open files") {
		t.Fatalf("the failed accepts were not logged:\n%s", log)
	}
	if k := strings.Count(log, "accepting a connection failed"); k > 3 {
		t.Fatalf("failed accepts logged %d times, want a rate-limited few:\n%s", k, log)
	}
	if time.Since(closed) > 5*time.Second {
		t.Fatalf("served again only %v after the connections closed", time.Since(closed))
	}
}

// TestMaxClientsFitsFDLimit: as Redis, the server raises its soft open
// files limit to maxclients+32 when it can; when the limit cannot carry
// maxclients, it lowers maxclients to the limit minus 32 with a warning,
// and CONFIG SET maxclients beyond what the limit carries is refused with
// Redis's text. (Before, maxclients stayed whatever the limit, and CONFIG
// SET maxclients 100000 was accepted.)
func TestMaxClientsFitsFDLimit(t *testing.T) {
	t.Run("lowered", func(t *testing.T) {
		ch := startFDChild(t, 64, 64, 10000, -1)
		rc := dialRaw(t, ch.addr)
		if got := rc.do("CONFIG", "GET", "maxclients"); got != "*2\r\n$10\r\nmaxclients\r\n$2\r\n32\r\n" {
			t.Fatalf("CONFIG GET maxclients = %q, want 32 (64 - 32 reserved)", got)
		}
		if got := rc.do("INFO", "clients"); !strings.Contains(got, "maxclients:32\r\n") {
			t.Fatalf("INFO clients = %q", got)
		}
		if !strings.Contains(ch.log(), "maxclients reduced") {
			t.Fatalf("no warning logged:\n%s", ch.log())
		}
		want := "-ERR CONFIG SET failed (possibly related to argument 'maxclients') - The operating system is not able to handle the specified number of clients, try with 32\r\n"
		if got := rc.do("CONFIG", "SET", "maxclients", "100000"); got != want {
			t.Fatalf("CONFIG SET maxclients 100000 = %q, want %q", got, want)
		}
		if got := rc.do("CONFIG", "SET", "maxclients", "20"); got != "+OK\r\n" {
			t.Fatalf("CONFIG SET maxclients 20 = %q", got)
		}
		ch.alive()
	})
	t.Run("raised", func(t *testing.T) {
		ch := startFDChild(t, 100, 200, 150, -1)
		if got := ch.softNoFile(); got != "182" {
			t.Fatalf("soft open files limit %s, want 182 (150 clients + 32)", got)
		}
		rc := dialRaw(t, ch.addr)
		if got := rc.do("CONFIG", "GET", "maxclients"); got != "*2\r\n$10\r\nmaxclients\r\n$3\r\n150\r\n" {
			t.Fatalf("CONFIG GET maxclients = %q, want 150", got)
		}
		if got := rc.do("CONFIG", "SET", "maxclients", "168"); got != "+OK\r\n" {
			t.Fatalf("CONFIG SET maxclients 168 = %q", got)
		}
		if got := ch.softNoFile(); got != "200" {
			t.Fatalf("soft open files limit %s after maxclients 168, want 200", got)
		}
		want := "-ERR CONFIG SET failed (possibly related to argument 'maxclients') - The operating system is not able to handle the specified number of clients, try with 168\r\n"
		if got := rc.do("CONFIG", "SET", "maxclients", "169"); got != want {
			t.Fatalf("CONFIG SET maxclients 169 = %q, want %q", got, want)
		}
		if got := rc.do("CONFIG", "GET", "maxclients"); got != "*2\r\n$10\r\nmaxclients\r\n$3\r\n168\r\n" {
			t.Fatalf("CONFIG GET maxclients after the refused SET = %q, want 168", got)
		}
	})
}
