package server

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/turnstile/turnstile/clock"
	"github.com/turnstile/turnstile/internal/testport"
	"github.com/turnstile/turnstile/resp"
)

// TestCompatWithRedis is the differential test: every script in
// testdata/compat is sent line by line to a real redis-server and to
// Turnstile, and the replies must match.
//
// Script format: one command per line in redis-cli syntax; '#' starts a
// comment line; a "~ " prefix lets integer replies differ by up to 2 or
// 1 %, whichever is more (TTLs run on two clocks); a "? " prefix compares only the reply's type; an
// "s " prefix compares aggregates as unordered (set members, whose order
// Redis leaves to its hash table). Each script starts on an empty server.
//
// For pub/sub and invalidations, which involve several connections, a line
// may start with "@name " (before any "~ " or "? ") to run on the connection called name (opened on
// first use, on both servers; lines without it use the first one), and a
// line of just "<" (after the prefixes) sends nothing and reads the next
// reply that connection receives (a message, an invalidation).
//
// For blocking commands: a "> " prefix (after the others) sends the
// command and reads nothing (a later "<" line reads its reply), and a line
// "!blocked N" waits, on both servers, until INFO reports N blocked
// clients (so that the next line runs after the blocking command blocked).
//
// Without redis-server on PATH the test is skipped, unless
// TURNSTILE_REQUIRE_REDIS=1 (CI sets it), which makes that a failure.
func TestCompatWithRedis(t *testing.T) {
	redisAddr := startRedis(t)
	_, addr, _ := newTestServer(t, func(c *Config) { c.Clock = clock.NewMonotonic() })
	files, err := filepath.Glob("testdata/compat/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no compat scripts: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			runCompatScript(t, f, redisAddr, addr)
		})
	}
}

func runCompatScript(t *testing.T, path, redisAddr, tsAddr string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, got := dialRaw(t, redisAddr), dialRaw(t, tsAddr)
	for _, c := range []*rawConn{want, got} {
		if r := c.do("FLUSHALL"); r != "+OK\r\n" {
			t.Fatalf("FLUSHALL: %q", r)
		}
	}
	named := map[string][2]*rawConn{"": {want, got}}
	var control [2]*rawConn // for "!blocked N", opened on first use
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if n, ok := strings.CutPrefix(line, "!blocked "); ok {
			if control[0] == nil {
				control = [2]*rawConn{dialRaw(t, redisAddr), dialRaw(t, tsAddr)}
			}
			for j, c := range control {
				if !waitBlocked(c, strings.TrimSpace(n)) {
					t.Fatalf("%s:%d: %s: blocked_clients never became %s", filepath.Base(path), i+1, [2]string{"redis", "turnstile"}[j], n)
				}
			}
			continue
		}
		want, got := named[""][0], named[""][1]
		if name, rest, ok := strings.Cut(line, " "); ok && len(name) > 1 && name[0] == '@' {
			pair, seen := named[name]
			if !seen {
				pair = [2]*rawConn{dialRaw(t, redisAddr), dialRaw(t, tsAddr)}
				named[name] = pair
			}
			want, got, line = pair[0], pair[1], rest
		}
		mode := byte('=')
		if len(line) > 2 && (line[0] == '~' || line[0] == '?' || line[0] == 's') && line[1] == ' ' {
			mode, line = line[0], line[2:]
		}
		sendOnly := false
		if rest, ok := strings.CutPrefix(line, "> "); ok {
			sendOnly, line = true, rest
		}
		if line == "<" {
			rw, rg := want.readReply(), got.readReply()
			if !repliesMatch(mode, rw, rg) {
				t.Errorf("%s:%d: (pushed)\n redis:     %q\n turnstile: %q", filepath.Base(path), i+1, rw, rg)
			}
			continue
		}
		args, _, err := resp.SplitArgs([]byte(line), nil, nil)
		if err != nil || len(args) == 0 {
			t.Fatalf("%s:%d: bad script line %q: %v", path, i+1, line, err)
		}
		strs := make([]string, len(args))
		for j, a := range args {
			strs[j] = string(a)
		}
		if sendOnly {
			want.send(encodeCommand(strs...))
			got.send(encodeCommand(strs...))
			continue
		}
		rw, rg := want.do(strs...), got.do(strs...)
		if !repliesMatch(mode, rw, rg) {
			t.Errorf("%s:%d: %s\n redis:     %q\n turnstile: %q", filepath.Base(path), i+1, line, rw, rg)
		}
	}
	// Every reply must have been read (by a command line or a "<" line):
	// one left over would have shifted the comparisons after it.
	for name, pair := range named {
		if pair[0].pending() {
			t.Errorf("%s: connection %q: redis sent replies the script did not read", filepath.Base(path), name)
		}
	}
}

// waitBlocked waits, at most 5 s, until the server's INFO clients reports
// want blocked clients.
func waitBlocked(c *rawConn, want string) bool {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Contains(c.do("INFO", "clients"), "\r\nblocked_clients:"+want+"\r\n") {
			return true
		}
		time.Sleep(2 * time.Millisecond)
	}
	return false
}

// pending reports whether a reply arrives within 50 ms without a request.
func (r *rawConn) pending() bool {
	if r.br.Buffered() > 0 {
		return true
	}
	r.c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, err := r.br.Peek(1)
	return err == nil
}

// repliesMatch compares two raw replies under a script line's mode.
func repliesMatch(mode byte, a, b string) bool {
	switch mode {
	case '?':
		return a != "" && b != "" && a[0] == b[0]
	case 's':
		ta, err1 := parseTree(bufio.NewReader(strings.NewReader(a)))
		tb, err2 := parseTree(bufio.NewReader(strings.NewReader(b)))
		return err1 == nil && err2 == nil && ta.unordered() == tb.unordered()
	case '~':
		ta, err1 := parseTree(bufio.NewReader(strings.NewReader(a)))
		tb, err2 := parseTree(bufio.NewReader(strings.NewReader(b)))
		return err1 == nil && err2 == nil && ta.near(tb, 2)
	}
	return a == b
}

// tree is a parsed reply: a type byte with either a scalar or children.
type tree struct {
	kind byte
	s    string
	kids []tree
}

func parseTree(br *bufio.Reader) (tree, error) {
	line, err := br.ReadString('\n')
	if err != nil || len(line) < 3 {
		return tree{}, fmt.Errorf("short reply %q: %v", line, err)
	}
	t := tree{kind: line[0], s: line[1 : len(line)-2]}
	switch t.kind {
	case '$', '=':
		n, _ := strconv.Atoi(t.s)
		if n >= 0 {
			buf := make([]byte, n+2)
			if _, err := br.Read(buf); err != nil {
				return t, err
			}
			t.s = string(buf[:n])
		}
	case '*', '~', '%':
		n, _ := strconv.Atoi(t.s)
		if t.kind == '%' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			k, err := parseTree(br)
			if err != nil {
				return t, err
			}
			t.kids = append(t.kids, k)
		}
	}
	return t, nil
}

// unordered returns a form of t in which every aggregate's elements are
// sorted, to compare replies whose order may differ.
func (t tree) unordered() string {
	kids := make([]string, len(t.kids))
	for i, k := range t.kids {
		kids[i] = k.unordered()
	}
	slices.Sort(kids)
	return fmt.Sprintf("%c%q[%s]", t.kind, t.s, strings.Join(kids, ","))
}

// near compares trees, letting integers differ by up to tol.
func (t tree) near(o tree, tol int64) bool {
	if t.kind != o.kind || len(t.kids) != len(o.kids) {
		return false
	}
	if t.kind == ':' {
		a, err1 := strconv.ParseInt(t.s, 10, 64)
		b, err2 := strconv.ParseInt(o.s, 10, 64)
		// TTLs in milliseconds run further apart under load (the race
		// detector, a busy CI machine): 1 % of the value is allowed too.
		tol := max(tol, max(a, b)/100)
		return err1 == nil && err2 == nil && a-b <= tol && b-a <= tol
	}
	if t.s != o.s {
		return false
	}
	for i := range t.kids {
		if !t.kids[i].near(o.kids[i], tol) {
			return false
		}
	}
	return true
}

// startRedis runs a private redis-server on a free loopback port.
func startRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("TURNSTILE_REQUIRE_REDIS") == "1" {
			t.Fatal("redis-server not found and TURNSTILE_REQUIRE_REDIS=1")
		}
		t.Skip("redis-server not on PATH; install redis-server to run the differential test")
	}
	port := testport.Free(t, "127.0.0.1") // not one a connection can take before the server listens
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("redis-server did not start")
	return ""
}
