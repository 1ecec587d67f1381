package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// server is one Turnstile process started for one policy's run.
type server struct {
	cmd    *exec.Cmd
	addr   string
	dir    string        // its data directory (empty: --save "" writes nothing)
	exited chan struct{} // closed when the process has exited
	err    error         // the exit status, valid once exited is closed
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startServer starts bin with the policy's flags plus extra, logging to
// logPath, and waits until it answers PING.
func startServer(bin, maxmem, policy string, extra []string, logPath string) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("free port: %w", err)
	}
	dir, err := os.MkdirTemp("", "flood-"+policy+"-")
	if err != nil {
		return nil, err
	}
	args := []string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--maxmemory", maxmem, "--maxmemory-policy", policy,
		"--save", "", "--appendonly", "no", "--dir", dir,
	}
	args = append(args, extra...)
	logf, err := os.Create(logPath)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		logf.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &server{cmd: cmd, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, exited: make(chan struct{})}
	go func() {
		s.err = cmd.Wait()
		logf.Close()
		close(s.exited)
	}()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if s.gone() {
			s.stop()
			return nil, fmt.Errorf("%s exited at start-up (%v); see %s", bin, s.err, logPath)
		}
		if c, err := dial(s.addr); err == nil {
			r, err := c.do(2*time.Second, "PING")
			c.close()
			if err == nil && r.typ == '+' {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("%s did not answer PING within 15 s; see %s", bin, logPath)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// gone reports whether the process has exited.
func (s *server) gone() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

// stop ends the process (SIGTERM, then SIGKILL after 10 s) and removes its
// directory. It reports whether the process had already exited (crashed).
func (s *server) stop() (crashed bool) {
	crashed = s.gone()
	if !crashed {
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			s.cmd.Process.Kill()
			<-s.exited
		}
	}
	os.RemoveAll(s.dir)
	return crashed
}

// rss reads VmRSS of process pid in bytes.
func rss(pid int) (int64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			f := strings.Fields(string(rest))
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("odd VmRSS line %q", line)
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb * 1024, err
		}
	}
	return 0, errors.New("no VmRSS in /proc/<pid>/status")
}

// info sends INFO section and returns its fields.
func info(c *conn, section string) (map[string]string, error) {
	r, err := c.do(10*time.Second, "INFO", section)
	if err != nil {
		return nil, err
	}
	if r.typ != '$' {
		return nil, fmt.Errorf("INFO %s replied %q %s", section, r.typ, r.str)
	}
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(r.str))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":"); ok {
			m[k] = v
		}
	}
	return m, nil
}

// infoInt returns field k of m as an integer (-1 when missing or not one).
func infoInt(m map[string]string, k string) int64 {
	n, err := strconv.ParseInt(m[k], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// parseBytes reads a memory size the way the server does: a number with an
// optional k, kb, m, mb, g or gb suffix (k = 1000, kb = 1024, as Redis).
func parseBytes(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	units := []struct {
		suffix string
		mult   int64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1000}, {"m", 1000 * 1000}, {"g", 1000 * 1000 * 1000}, {"b", 1}}
	mult := int64(1)
	for _, u := range units {
		if rest, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = rest, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("bad memory size %q", s)
	}
	return n * mult, nil
}
