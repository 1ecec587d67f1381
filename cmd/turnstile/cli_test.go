package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/turnstile/turnstile/internal/testport"
	"github.com/turnstile/turnstile/server"
)

// cliCommand is the test binary running the real main (cli) with args:
// TestMain turns it into the server binary.
func cliCommand(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TURNSTILE_TEST_CLI=1", "TURNSTILE_TEST_ARGS="+strings.Join(args, "\x1f"))
	return cmd
}

// runCLI runs the binary with args to completion (at most 10 s).
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := cliCommand(args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%v: did not exit", args)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// TestCLIHelpAndVersion: --help and --version print to stdout and exit 0;
// the usage lists check-aof and the options.
func TestCLIHelpAndVersion(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		out, errOut, code := runCLI(t, arg)
		if code != 0 || errOut != "" || !strings.Contains(out, "Usage: turnstile [/path/to/redis.conf]") ||
			!strings.Contains(out, "turnstile check-aof") || !strings.Contains(out, "-maxmemory-policy") {
			t.Errorf("%s: exit %d, stderr %q, stdout %q", arg, code, errOut, out)
		}
	}
	for _, arg := range []string{"--version", "-v"} {
		out, errOut, code := runCLI(t, arg)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "Turnstile server v="+server.TurnstileVersion+" ") {
			t.Errorf("%s: exit %d, stderr %q, stdout %q", arg, code, errOut, out)
		}
	}
}

// TestCLIErrorsOnce: a bad command line prints its error once, without
// the usage, and exits 1; so does a --dir that cannot be used.
func TestCLIErrorsOnce(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--port", "70000"}, "argument must be between 0 and 65535 inclusive"},
		{[]string{"--no-such-flag"}, "flag provided but not defined: -no-such-flag"},
		{[]string{"--port", "0", "extra"}, `unexpected argument "extra"`},
		{[]string{"--port", "0", "--dir", "/nonexistent/turnstile"}, `can't use dir "/nonexistent/turnstile": stat /nonexistent/turnstile: no such file or directory`},
		{[]string{"--port", "0", "--dir", file}, "not a directory"},
		{[]string{"--port", "0", "--dir", "/proc"}, `can't use dir "/proc": not writable`}, // even for root
		{[]string{filepath.Join(t.TempDir(), "missing.conf")}, "no such file or directory"},
	} {
		out, errOut, code := runCLI(t, tc.args...)
		if code != 1 || out != "" || strings.Count(errOut, tc.want) != 1 || strings.Contains(errOut, "Usage") ||
			strings.Count(errOut, "\n") != 1 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %q once", tc.args, code, out, errOut, tc.want)
		}
	}
}

// TestParsePositionalConfigAndMultiWordFlags: the config file may be the
// first argument (options after it win), and save and bind take several
// words on the command line, as with redis-server.
func TestParsePositionalConfigAndMultiWordFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.conf")
	os.WriteFile(path, []byte("port 7000\nmaxclients 9\nsave 100 1\n"), 0o600)
	cfg, _, _, err := parseConfig([]string{path, "--port", "7001", "--save", "60", "1", "30", "2", "--bind", "127.0.0.1", "-::1"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Port != 7001 || cfg.MaxClients != 9 || server.FormatSaveRules(cfg.Persist.Save) != "60 1 30 2" ||
		cfg.Bind != "127.0.0.1 -::1" || cfg.ConfigFile != path {
		t.Errorf("port %d maxclients %d save %q bind %q config_file %q", cfg.Port, cfg.MaxClients,
			server.FormatSaveRules(cfg.Persist.Save), cfg.Bind, cfg.ConfigFile)
	}
	if _, _, _, err := parseConfig([]string{path, "--config", path}); err == nil {
		t.Error("two config files accepted")
	}
}

// freePort is a port for a server the test starts (internal/testport).
func freePort(t *testing.T) int {
	t.Helper()
	return testport.Free(t, "127.0.0.1")
}

// debianConf is Debian's stock redis.conf with the lines a test must
// change: its own port, dir, pidfile and logfile.
func debianConf(t *testing.T, dir string, port int) string {
	t.Helper()
	stock, err := os.ReadFile("/etc/redis/redis.conf")
	if err != nil {
		t.Skip("no stock redis.conf:", err)
	}
	repl := map[string]string{
		"port":    "port " + strconv.Itoa(port),
		"dir":     "dir " + dir,
		"pidfile": "pidfile " + filepath.Join(dir, "turnstile.pid"),
		"logfile": "logfile " + filepath.Join(dir, "turnstile.log"),
	}
	lines := strings.Split(string(stock), "\n")
	for i, l := range lines {
		name, _, _ := strings.Cut(l, " ")
		if r, ok := repl[name]; ok {
			lines[i] = r
			delete(repl, name)
		}
	}
	if len(repl) != 0 {
		t.Fatalf("stock redis.conf has no lines for %v", repl)
	}
	path := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDebianStockConfig: Debian's /etc/redis/redis.conf (with its own
// port, dir, pidfile and logfile) starts the server, which applies it
// (Redis's default save rules: the stock file has no save line; its
// client-output-buffer-limit lines), warns once per directive that has no
// effect, writes the pidfile, reports config_file, rewrites the file
// keeping its comments and unknown lines, logs the signal that stopped it
// and removes the pidfile.
func TestDebianStockConfig(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	path := debianConf(t, dir, port)
	cmd := cliCommand(path, "--supervised", "systemd", "--jemalloc-bg-thread", "no") // as Debian's service file; a directive of the file again
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), MaxRetries: -1})
	defer rc.Close()
	deadline := time.Now().Add(10 * time.Second)
	for rc.Ping(ctx).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("the server did not start; stderr %q", errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for name, want := range map[string]string{
		"save":                       "3600 1 300 100 60 10000",
		"appendfsync":                "everysec",
		"dbfilename":                 "dump.rdb",
		"dir":                        dir,
		"client-output-buffer-limit": "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
		"bind":                       "127.0.0.1 -::1",
		"daemonize":                  "yes",
	} {
		if got := rc.ConfigGet(ctx, name).Val()[name]; got != want {
			t.Errorf("CONFIG GET %s = %q, want %q", name, got, want)
		}
	}
	info := rc.Info(ctx, "server").Val()
	if !strings.Contains(info, "config_file:"+path+"\r\n") {
		t.Errorf("INFO server has no config_file:%s", path)
	}
	pid, err := os.ReadFile(filepath.Join(dir, "turnstile.pid"))
	if err != nil || strings.TrimSpace(string(pid)) != strconv.Itoa(cmd.Process.Pid) {
		t.Errorf("pidfile %q, %v; want %d", pid, err, cmd.Process.Pid)
	}
	// CONFIG REWRITE keeps the comments and the ignored directives, and
	// updates a changed value in place.
	if err := rc.ConfigSet(ctx, "maxmemory", "1mb").Err(); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	if err := rc.ConfigRewrite(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(path)
	for _, want := range []string{"# maxmemory <bytes>", "\nlazyfree-lazy-eviction no\n", "\njemalloc-bg-thread yes\n", "\nmaxmemory 1048576\n", "\nsave 3600 1\nsave 300 100\nsave 60 10000\n"} {
		if !strings.Contains(string(after), want) {
			t.Errorf("rewritten file lacks %q", want)
		}
	}
	if n, m := strings.Count(string(before), "\n"), strings.Count(string(after), "\n"); m < n || m > n+10 {
		t.Errorf("rewritten file has %d lines, the stock one %d", m, n)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit after SIGTERM: %v; stderr %q", err, errOut.String())
	}
	log, _ := os.ReadFile(filepath.Join(dir, "turnstile.log"))
	for _, re := range []string{
		`(?m)^.*level=WARN msg="config directive has no effect in Turnstile; ignored" directive=lazyfree-lazy-eviction .*line=\d+$`,
		`(?m)^.*level=WARN msg="daemonize yes is not supported.*$`,
		`(?m)^.*msg="turnstile starting" version=.* addr=127.0.0.1:\d+ bind="127.0.0.1 -::1" persistence=snapshot dir=` + regexp.QuoteMeta(dir) + ` save="3600 1 300 100 60 10000".* maxmemory=0 .*$`,
		`(?m)^.*msg="received SIGTERM; shutting down".*$`,
	} {
		if n := len(regexp.MustCompile(re).FindAllString(string(log), -1)); n != 1 {
			t.Errorf("log has %d lines matching %s:\n%s", n, re, log)
		}
	}
	for _, name := range []string{"supervised", "repl-diskless-sync", "oom-score-adj-values", "jemalloc-bg-thread", "lazyfree-lazy-user-del"} {
		if strings.Count(string(log), "directive="+name+" ") != 1 {
			t.Errorf("want one warning for %s", name)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "turnstile.pid")); err == nil {
		t.Error("pidfile left after shutdown")
	}
	if errOut.Len() != 0 {
		t.Errorf("stderr: %q", errOut.String())
	}
}

// TestCLILogsToStdout: without logfile the log goes to standard output,
// at the level asked for (Redis's names), and the signal that stopped the
// server is logged.
func TestCLILogsToStdout(t *testing.T) {
	port := freePort(t)
	cmd := cliCommand("--port", strconv.Itoa(port), "--dir", t.TempDir(), "--loglevel", "debug", "--save", "")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	rc := redis.NewClient(&redis.Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), MaxRetries: -1})
	defer rc.Close()
	deadline := time.Now().Add(10 * time.Second)
	for rc.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("the server did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := rc.ConfigGet(context.Background(), "loglevel").Val()["loglevel"]; got != "debug" {
		t.Errorf("loglevel %q", got)
	}
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGINT: %v", err)
	}
	for _, want := range []string{`msg="turnstile starting"`, `persistence=none`, `save="\"\""`, `msg="received SIGINT; shutting down"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %s:\n%s", want, out.String())
		}
	}
	if errOut.Len() != 0 {
		t.Errorf("stderr: %q", errOut.String())
	}
}
