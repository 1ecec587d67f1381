//go:build linux

package faulttest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/turnstile/turnstile/internal/testport"
)

// node is one turnstile process: its loopback IP, RESP port, directory and
// arguments stay the same across restarts.
type node struct {
	idx     int
	ip      string // 127.0.0.(idx+1)
	port    int    // RESP
	dir     string
	logPath string // stdout and stderr of every run, appended
	bin     string
	args    []string

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when the running process has exited
	paused  bool
	stopped bool // the harness ended it (a kill or term), so its exit is expected
	crashed string
}

func (n *node) addr() string { return net.JoinHostPort(n.ip, strconv.Itoa(n.port)) }

// start runs the process; it does not wait for it to serve.
func (n *node) start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		return fmt.Errorf("node %d already running", n.idx)
	}
	f, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("node %d log: %w", n.idx, err)
	}
	fmt.Fprintf(f, "=== %s start: %s %q\n", time.Now().Format("15:04:05.000"), n.bin, n.args)
	cmd := exec.Command(n.bin, n.args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("node %d start: %w", n.idx, err)
	}
	n.cmd, n.done, n.paused, n.stopped = cmd, make(chan struct{}), false, false
	go n.wait(cmd, n.done, f)
	return nil
}

// wait reaps the process and notes an exit the harness did not cause.
func (n *node) wait(cmd *exec.Cmd, done chan struct{}, f *os.File) {
	err := cmd.Wait()
	fmt.Fprintf(f, "=== %s exit: %v\n", time.Now().Format("15:04:05.000"), err)
	f.Close()
	n.mu.Lock()
	if !n.stopped && n.crashed == "" {
		n.crashed = fmt.Sprintf("node %d exited by itself: %v", n.idx, err)
	}
	if n.cmd == cmd {
		n.cmd = nil
	}
	n.mu.Unlock()
	close(done)
}

func (n *node) alive() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil
}

func (n *node) isPaused() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil && n.paused
}

// signal sends sig to the running process; it reports false when there is
// none.
func (n *node) signal(sig syscall.Signal) (chan struct{}, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return nil, false
	}
	switch sig {
	case syscall.SIGKILL, syscall.SIGTERM:
		n.stopped = true
	case syscall.SIGSTOP:
		n.paused = true
	case syscall.SIGCONT:
		n.paused = false
	}
	n.cmd.Process.Signal(sig)
	return n.done, true
}

// kill9 kills the process with SIGKILL (no shutdown code runs) and reaps it.
func (n *node) kill9() {
	if done, ok := n.signal(syscall.SIGKILL); ok {
		<-done
	}
}

// term stops the process with SIGTERM (resuming it first if paused) and
// waits up to 10 s for it to exit before killing it.
func (n *node) term() {
	n.signal(syscall.SIGCONT)
	done, ok := n.signal(syscall.SIGTERM)
	if !ok {
		return
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		n.kill9()
	}
}

func (n *node) pause()  { n.signal(syscall.SIGSTOP) }
func (n *node) resume() { n.signal(syscall.SIGCONT) }

// waitServing waits until the node answers PING, or fails after timeout
// or when the process has exited.
func (n *node) waitServing(timeout time.Duration) error {
	rc := redis.NewClient(&redis.Options{Addr: n.addr(), MaxRetries: -1, Protocol: 2,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, DisableIdentity: true})
	defer rc.Close()
	deadline := time.Now().Add(timeout)
	for {
		if !n.alive() {
			return fmt.Errorf("node %d is not running", n.idx)
		}
		err := rc.Ping(context.Background()).Err()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %d does not answer PING after %v: %v", n.idx, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tail returns the last lines of the node's log.
func (n *node) tail(lines int) string {
	b, err := os.ReadFile(n.logPath)
	if err != nil {
		return err.Error()
	}
	b = bytes.TrimRight(b, "\n")
	for i, cut := len(b)-1, 0; i >= 0; i-- {
		if b[i] == '\n' {
			cut++
			if cut == lines {
				return string(b[i+1:])
			}
		}
	}
	return string(b)
}

// crash reports an exit the harness did not cause, once.
func (n *node) crash() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := n.crashed
	n.crashed = ""
	return c
}

// freePort returns a port nothing listens on at ip now, which no
// outgoing connection can take before the node listens (internal/testport).
func freePort(t testing.TB, ip string) int {
	t.Helper()
	return testport.Free(t, ip)
}
