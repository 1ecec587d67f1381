package libtest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// scriptTimeout bounds one external check; each script also stops itself
// after 20 s with a message of its own.
const scriptTimeout = 30 * time.Second

// systemPython is Debian's interpreter, which sees the python3-limits and
// python3-redis packages (a pyenv or venv python on PATH may not).
const systemPython = "/usr/bin/python3"

// TestNodeLibraries runs each Node library check in libtest/node against the
// server under test. It needs node on PATH and `npm ci --prefix libtest/node`.
func TestNodeLibraries(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		missing(t, "node is not on PATH")
	}
	dir, err := filepath.Abs("node")
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range []string{"rate-limiter-flexible", "ioredis", "redis", "express", "express-rate-limit", "rate-limit-redis", "bull", "bullmq"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
			missing(t, "node package %s (run: npm ci --prefix libtest/node)", pkg)
		}
	}
	addr := serverAddr(t)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"rate-limiter-flexible/ioredis", []string{"ratelimiterflexible.js", "ioredis"}},
		{"rate-limiter-flexible/node-redis", []string{"ratelimiterflexible.js", "redis"}},
		{"express-rate-limit+rate-limit-redis", []string{"expressratelimit.js"}},
		{"bull", []string{"bull.js"}},
		{"bullmq", []string{"bullmq.js"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			runCheck(t, dir, addr, node, c.args...)
		})
	}
}

// TestPythonLimits runs Python's limits (fixed and moving window with
// RedisStorage) against the server under test. It needs Debian's
// python3-limits and python3-redis.
func TestPythonLimits(t *testing.T) {
	if _, err := os.Stat(systemPython); err != nil {
		missing(t, "%s", systemPython)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, systemPython, "-c", "import limits, redis").CombinedOutput(); err != nil {
		missing(t, "python3-limits or python3-redis (apt-get install python3-limits python3-redis): %v: %s", err, strings.TrimSpace(string(out)))
	}
	dir, err := filepath.Abs("python")
	if err != nil {
		t.Fatal(err)
	}
	runCheck(t, dir, serverAddr(t), systemPython, "limits_check.py")
}

// runCheck runs prog with args in dir, pointed at addr (REDIS_URL) with a
// key prefix of this test's own (LIBTEST_PREFIX), and fails the test with
// the program's output unless it exits 0 within scriptTimeout.
func runCheck(t *testing.T, dir, addr, prog string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "REDIS_URL=redis://"+addr, "LIBTEST_PREFIX="+keyPrefix(t))
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("%s %s: killed after %v\n%s", filepath.Base(prog), strings.Join(args, " "), scriptTimeout, out)
	}
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(prog), strings.Join(args, " "), err, out)
	}
	t.Logf("%s (%v)", strings.TrimSpace(string(out)), time.Since(start).Round(time.Millisecond))
}
