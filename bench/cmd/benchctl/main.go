// Command benchctl drives the parts of bench/run.sh that need a client
// next to redis-benchmark, against Turnstile or redis-server: for the
// persistence part (PERSIST=1) it waits for a restarted server to finish
// loading, times a log rewrite, and keeps snapshots running back to back
// while redis-benchmark measures latency; for the expiry part (EXPIRE=1)
// it traces DBSIZE while keys expire.
//
// It keeps one connection and does not start processes while it polls: a
// shell loop starting redis-cli every 0.1 s doubled the -P 1 probe's p99
// by itself (measured on Turnstile, with no key expiring at all).
//
//	benchctl ready -port P -since NS [-pid PID] [-key K] [-timeout D]
//	    Sends EXISTS K until the reply is not a LOADING error, and prints the
//	    seconds since NS (Unix nanoseconds, taken just before the server was
//	    started) and the reply: "1.234 1".
//	benchctl rewrite -port P [-timeout D]
//	    Sends BGREWRITEAOF, then polls INFO persistence until
//	    aof_rewrite_in_progress and aof_rewrite_scheduled are 0; prints the
//	    seconds from sending to done.
//	benchctl bgsave-loop -port P [-timeout D]
//	    Until SIGTERM or SIGINT: BGSAVE, poll INFO persistence until
//	    rdb_bgsave_in_progress:0, check rdb_last_bgsave_status:ok, repeat.
//	    On the signal it lets the running snapshot finish, then prints
//	    "snapshots N seconds S": completed snapshots and their total time.
//	benchctl dbsize-trace -port P -since NS -until K [-every D] [-timeout D]
//	    Sends DBSIZE every D (default 0.1 s) and prints one line per reply,
//	    "NS_SINCE COUNT": nanoseconds since NS (Unix ns) and the reply;
//	    stops after the first reply of at most K, or at the timeout (not
//	    an error: the trace then shows how far expiry got).
//
// It speaks just enough RESP for that, with the standard library only.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// poll is how often INFO persistence is read while waiting; a few requests
// a second, next to the tens of thousands redis-benchmark sends.
const poll = 10 * time.Millisecond

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	port := fs.Int("port", 0, "server port on 127.0.0.1")
	timeout := fs.Duration("timeout", 300*time.Second, "give up after this long")
	since := fs.Int64("since", 0, "ready: Unix ns the restart began")
	pid := fs.Int("pid", 0, "ready: fail at once when this process is gone")
	keyName := fs.String("key", "key:000000000000", "ready: key for EXISTS")
	until := fs.Int64("until", 0, "dbsize-trace: stop once DBSIZE is at most this")
	every := fs.Duration("every", 100*time.Millisecond, "dbsize-trace: time between DBSIZE requests")
	fs.Parse(os.Args[2:])
	if *port <= 0 || fs.NArg() > 0 {
		usage()
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(*port))
	deadline := time.Now().Add(*timeout)
	var err error
	switch os.Args[1] {
	case "ready":
		err = ready(addr, *since, *pid, *keyName, deadline)
	case "rewrite":
		err = rewrite(addr, deadline)
	case "bgsave-loop":
		err = bgsaveLoop(addr, deadline)
	case "dbsize-trace":
		err = dbsizeTrace(addr, *since, *until, *every, deadline)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchctl "+os.Args[1]+":", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: benchctl ready|rewrite|bgsave-loop|dbsize-trace -port P [flags]")
	os.Exit(2)
}

// ready reconnects until the server accepts, then repeats EXISTS until it
// answers something other than LOADING.
func ready(addr string, since int64, pid int, key string, deadline time.Time) error {
	if since == 0 {
		since = time.Now().UnixNano()
	}
	var c *conn
	for {
		if time.Now().After(deadline) {
			return errors.New("timed out waiting for the server to load")
		}
		if pid > 0 && processGone(pid) {
			return fmt.Errorf("server process %d exited while loading", pid)
		}
		if c == nil {
			var err error
			if c, err = dial(addr); err != nil {
				time.Sleep(2 * time.Millisecond)
				continue
			}
		}
		v, err := c.do("EXISTS", key)
		var re respError
		switch {
		case errors.As(err, &re) && strings.HasPrefix(string(re), "LOADING"):
			time.Sleep(2 * time.Millisecond)
			continue
		case errors.As(err, &re):
			return fmt.Errorf("EXISTS %s: %w", key, err)
		case err != nil:
			// Connection dropped (for example the server restarting its
			// listener): dial again.
			c.close()
			c = nil
			time.Sleep(2 * time.Millisecond)
			continue
		}
		secs := float64(time.Now().UnixNano()-since) / 1e9
		c.close()
		fmt.Printf("%.3f %v\n", secs, v)
		return nil
	}
}

// info returns INFO persistence as a map.
func info(c *conn) (map[string]string, error) {
	v, err := c.do("INFO", "persistence")
	if err != nil {
		return nil, err
	}
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("INFO replied %T", v)
	}
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		k, val, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok {
			m[k] = val
		}
	}
	return m, nil
}

// waitInfo polls INFO persistence until every named field is "0".
func waitInfo(c *conn, deadline time.Time, fields ...string) (map[string]string, error) {
	for {
		m, err := info(c)
		if err != nil {
			return nil, err
		}
		done := true
		for _, f := range fields {
			v, ok := m[f]
			if !ok {
				return nil, fmt.Errorf("INFO persistence has no %s", f)
			}
			done = done && v == "0"
		}
		if done {
			return m, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("timed out waiting for %s to be 0", strings.Join(fields, ", "))
		}
		time.Sleep(poll)
	}
}

func rewrite(addr string, deadline time.Time) error {
	c, err := dial(addr)
	if err != nil {
		return err
	}
	defer c.close()
	start := time.Now()
	if _, err := c.do("BGREWRITEAOF"); err != nil {
		return fmt.Errorf("BGREWRITEAOF: %w", err)
	}
	m, err := waitInfo(c, deadline, "aof_rewrite_in_progress", "aof_rewrite_scheduled")
	if err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	if st := m["aof_last_bgrewrite_status"]; st != "ok" {
		return fmt.Errorf("aof_last_bgrewrite_status:%s after the rewrite", st)
	}
	fmt.Printf("%.3f\n", secs)
	return nil
}

func bgsaveLoop(addr string, deadline time.Time) error {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	c, err := dial(addr)
	if err != nil {
		return err
	}
	defer c.close()
	n := 0
	var total time.Duration
	for {
		select {
		case <-stop:
			fmt.Printf("snapshots %d seconds %.3f\n", n, total.Seconds())
			return nil
		default:
		}
		if time.Now().After(deadline) {
			return errors.New("still running at the timeout (was it ever stopped?)")
		}
		start := time.Now()
		if _, err := c.do("BGSAVE"); err != nil {
			var re respError
			if errors.As(err, &re) && strings.Contains(strings.ToLower(string(re)), "in progress") {
				// One started by someone else: wait for it, do not count it.
				if _, err := waitInfo(c, deadline, "rdb_bgsave_in_progress"); err != nil {
					return err
				}
				continue
			}
			return fmt.Errorf("BGSAVE: %w", err)
		}
		m, err := waitInfo(c, deadline, "rdb_bgsave_in_progress")
		if err != nil {
			return err
		}
		if st := m["rdb_last_bgsave_status"]; st != "ok" {
			return fmt.Errorf("rdb_last_bgsave_status:%s after BGSAVE", st)
		}
		n++
		total += time.Since(start)
	}
}

// dbsizeTrace prints "ns-since-since count" every every until DBSIZE is at
// most until or the deadline passes.
func dbsizeTrace(addr string, since, until int64, every time.Duration, deadline time.Time) error {
	if since == 0 {
		since = time.Now().UnixNano()
	}
	c, err := dial(addr)
	if err != nil {
		return err
	}
	defer c.close()
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	for time.Now().Before(deadline) {
		v, err := c.do("DBSIZE")
		if err != nil {
			return fmt.Errorf("DBSIZE: %w", err)
		}
		n, ok := v.(int64)
		if !ok {
			return fmt.Errorf("DBSIZE replied %T", v)
		}
		fmt.Fprintf(w, "%d %d\n", time.Now().UnixNano()-since, n)
		if n <= until {
			return nil
		}
		time.Sleep(every)
	}
	return nil
}

// ----------------------------------------------------------------- RESP --

type respError string

func (e respError) Error() string { return string(e) }

type conn struct {
	nc net.Conn
	r  *bufio.Reader
	w  *bufio.Writer
}

func dial(addr string) (*conn, error) {
	nc, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	return &conn{nc: nc, r: bufio.NewReader(nc), w: bufio.NewWriter(nc)}, nil
}

func (c *conn) close() { c.nc.Close() }

// do sends one command and reads its reply: string (simple or bulk), int64,
// nil, []any, or a respError.
func (c *conn) do(args ...string) (any, error) {
	c.nc.SetDeadline(time.Now().Add(60 * time.Second))
	fmt.Fprintf(c.w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(c.w, "$%d\r\n%s\r\n", len(a), a)
	}
	if err := c.w.Flush(); err != nil {
		return nil, err
	}
	return c.read()
}

func (c *conn) line() (string, error) {
	s, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if len(s) < 3 || s[len(s)-2] != '\r' {
		return "", fmt.Errorf("bad RESP line %q", s)
	}
	return s[:len(s)-2], nil
}

func (c *conn) read() (any, error) {
	s, err := c.line()
	if err != nil {
		return nil, err
	}
	body := s[1:]
	switch s[0] {
	case '+':
		return body, nil
	case '-':
		return nil, respError(body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return nil, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return nil, nil
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = c.read(); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected RESP type %q", s[0])
}
