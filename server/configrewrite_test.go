package server

import (
	"bytes"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnstile/turnstile/persistence"
)

// TestConfigRewrite: CONFIG REWRITE keeps comments, unknown-but-accepted
// lines and lines whose value did not change (as written: "64mb"),
// updates changed directives in place, drops extra lines of a directive
// that now needs fewer, appends new non-default ones after one signature
// line, and says so when there is no config file.
func TestConfigRewrite(t *testing.T) {
	_, addr, _ := newTestServer(t)
	r := dialRaw(t, addr)
	if got := r.do("CONFIG", "REWRITE"); got != "-ERR The server is running without a config file\r\n" {
		t.Errorf("without a file: %q", got)
	}

	path := filepath.Join(t.TempDir(), "t.conf")
	orig := strings.Join([]string{
		"# my settings",
		"io-threads 4",
		"maxclients 100",
		"auto-aof-rewrite-min-size 64mb",
		"save 900 1",
		"save 300 10",
		"   # indented comment",
		"gogc 50",
		"lua-time-limit 100",
		"",
	}, "\n")
	if err := os.WriteFile(path, []byte(orig), 0o640); err != nil {
		t.Fatal(err)
	}
	dirs, err := ReadConfigFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, addr2, _ := newTestServer(t, func(c *Config) {
		if _, err := ApplyConfig(dirs, c, func(name string, _ []string) (bool, error) { return name == "gogc", nil }); err != nil {
			t.Fatal(err)
		}
		c.ConfigFile = path
	})
	r = dialRaw(t, addr2)
	if info := r.do("INFO", "server"); !strings.Contains(info, "\r\nconfig_file:"+path+"\r\n") {
		t.Errorf("INFO server lacks config_file:%s", path)
	}
	if got := r.do("CONFIG", "SET", "maxclients", "200", "save", "60 5", "timeout", "30", "busy-reply-threshold", "700"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET: %q", got)
	}
	for i := range 2 { // the second rewrite changes nothing
		if got := r.do("CONFIG", "REWRITE"); got != "+OK\r\n" {
			t.Fatalf("CONFIG REWRITE %d: %q", i, got)
		}
		b, _ := os.ReadFile(path)
		want := strings.Join([]string{
			"# my settings",
			"io-threads 4",
			"maxclients 200",
			"auto-aof-rewrite-min-size 64mb",
			"save 60 5",
			"   # indented comment",
			"gogc 50",
			"busy-reply-threshold 700",
			rewriteSignature,
			"port 0", // the test server's (not the default)
			"timeout 30",
			"turnstile-shards 16",
			"",
		}, "\n")
		if string(b) != want {
			t.Fatalf("rewrite %d:\n%s\nwant:\n%s", i, b, want)
		}
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("mode after rewrite: %v, %v", st.Mode(), err)
	}
	// The rewritten file loads back to the running values.
	dirs, err = ReadConfigFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	if _, err := ApplyConfig(dirs, &c, func(name string, _ []string) (bool, error) { return name == "gogc", nil }); err != nil {
		t.Fatal(err)
	}
	if c.MaxClients != 200 || FormatSaveRules(c.Persist.Save) != "60 5" || c.Timeout != 30 || c.BusyReplyThreshold != 700 {
		t.Errorf("reloaded: maxclients %d save %q timeout %d busy %d", c.MaxClients, FormatSaveRules(c.Persist.Save), c.Timeout, c.BusyReplyThreshold)
	}
	// save "" is written so that a restart does not take the defaults.
	r.do("CONFIG", "SET", "save", "")
	r.do("CONFIG", "REWRITE")
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), "\nsave \"\"\n") || strings.Contains(string(b), "save 60 5") {
		t.Errorf("after save \"\":\n%s", b)
	}
}

// TestQuoteConfigWord: values with spaces, quotes or control characters
// are written so that the file reads them back.
func TestQuoteConfigWord(t *testing.T) {
	for _, w := range []string{"", "plain", "a b", `q"uo'te`, "back\\slash", "nl\nx\x00\xff", "#hash"} {
		got, err := SplitConfigLine("requirepass " + quoteConfigWord(w))
		if err != nil || len(got) != 2 || got[1] != w {
			t.Errorf("%q: written %s, read back %q, %v", w, quoteConfigWord(w), got, err)
		}
	}
}

// TestConfigSetLive: save, hz and loglevel change at run time and take
// effect: the save rules drive the snapshot scheduler, hz is what INFO
// reports and what the expiry loop runs at, loglevel changes the
// binary's logger level.
func TestConfigSetLive(t *testing.T) {
	dir := t.TempDir()
	var logMu sync.Mutex
	var logs bytes.Buffer
	level := new(slog.LevelVar)
	s, addr, clk := newTestServer(t, func(c *Config) {
		c.Persist.Dir = dir
		c.LogLevelVar = level
		c.Logger = slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logs}, &slog.HandlerOptions{Level: level}))
	})
	r := dialRaw(t, addr)
	r.do("SET", "k", "v")
	// No save rules: the scheduler does nothing.
	clk.Advance(10 * time.Second)
	s.persistTick(clk.Now())
	if _, err := os.Stat(filepath.Join(dir, "dump.tsr")); err == nil {
		t.Fatal("snapshot written without save rules")
	}
	if got := r.do("CONFIG", "SET", "save", "5 1"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET save: %q", got)
	}
	if got := r.do("CONFIG", "GET", "save"); got != "*2\r\n$4\r\nsave\r\n$3\r\n5 1\r\n" {
		t.Errorf("CONFIG GET save: %q", got)
	}
	s.persistTick(clk.Now())
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "dump.tsr")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the save rule set live did not snapshot")
		}
		time.Sleep(10 * time.Millisecond)
	}

	if got := r.do("CONFIG", "SET", "hz", "100"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET hz: %q", got)
	}
	if info := r.do("INFO", "server"); !strings.Contains(info, "\r\nhz:100\r\n") || !strings.Contains(info, "\r\nconfigured_hz:100\r\n") {
		t.Errorf("INFO after CONFIG SET hz 100: %q", info)
	}
	if got := r.do("CONFIG", "SET", "hz", "-1"); !strings.HasPrefix(got, "-ERR CONFIG SET failed (possibly related to argument 'hz') - argument must be between 0 and 2147483647") {
		t.Errorf("CONFIG SET hz -1: %q", got)
	}

	if got := r.do("CONFIG", "SET", "loglevel", "warning"); got != "+OK\r\n" || level.Level() != slog.LevelWarn {
		t.Fatalf("CONFIG SET loglevel warning: %q, level %v", got, level.Level())
	}
	if got := r.do("CONFIG", "GET", "loglevel"); got != "*2\r\n$8\r\nloglevel\r\n$7\r\nwarning\r\n" {
		t.Errorf("CONFIG GET loglevel: %q", got)
	}
	r.do("CONFIG", "SET", "loglevel", "debug")
	if level.Level() != slog.LevelDebug {
		t.Errorf("level %v after debug", level.Level())
	}
	// All or nothing: a bad value leaves the good one before it unset.
	if got := r.do("CONFIG", "SET", "hz", "50", "loglevel", "loud"); !strings.HasPrefix(got, "-ERR CONFIG SET failed (possibly related to argument 'loglevel')") {
		t.Errorf("CONFIG SET with a bad value: %q", got)
	}
	if got := r.do("CONFIG", "GET", "hz"); got != "*2\r\n$2\r\nhz\r\n$3\r\n100\r\n" {
		t.Errorf("hz after a refused CONFIG SET: %q", got)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// TestListenSeveralAddresses: bind takes several addresses (one port for
// all), an optional ('-') address that does not exist here is skipped,
// and a required one that does not exist fails.
func TestListenSeveralAddresses(t *testing.T) {
	ln, err := listenBind("127.0.0.1 127.0.0.2 -192.0.2.77", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	accepted := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	for _, host := range []string{"127.0.0.1", "127.0.0.2"} {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(host, port), 2*time.Second)
		if err != nil {
			t.Fatalf("dial %s: %v", host, err)
		}
		c.Close()
		select {
		case sc := <-accepted:
			sc.Close()
		case <-time.After(2 * time.Second):
			t.Fatalf("no connection accepted on %s", host)
		}
	}
	if _, err := listenBind("127.0.0.1 192.0.2.77", 0); err == nil {
		t.Error("a required address that does not exist was accepted")
	}
	ln.Close()
	if _, err := ln.Accept(); err == nil {
		t.Error("Accept after Close succeeded")
	}
}

// TestConfigSetAppendFsyncLive: CONFIG SET appendfsync switches the open
// log's policy: under always every acknowledged write was fsynced (the
// fsync count follows the writes), back under everysec it is not.
func TestConfigSetAppendFsyncLive(t *testing.T) {
	s, addr, _ := newTestServer(t, func(c *Config) {
		c.Persist.Dir = t.TempDir()
		c.Persist.AppendOnly = true
		c.Persist.AppendFsync = persistence.FsyncNo
	})
	r := dialRaw(t, addr)
	write := func() {
		t.Helper()
		if got := r.do("INCR", "n"); !strings.HasPrefix(got, ":") {
			t.Fatalf("INCR: %q", got)
		}
	}
	write()
	before := s.aofLog().Stats().Fsyncs
	for range 3 {
		write()
	}
	if got := s.aofLog().Stats().Fsyncs; got != before {
		t.Errorf("appendfsync no: %d fsyncs for 3 writes", got-before)
	}
	if got := r.do("CONFIG", "SET", "appendfsync", "always"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET appendfsync always: %q", got)
	}
	if got := r.do("CONFIG", "GET", "appendfsync"); got != "*2\r\n$11\r\nappendfsync\r\n$6\r\nalways\r\n" {
		t.Errorf("CONFIG GET appendfsync: %q", got)
	}
	before = s.aofLog().Stats().Fsyncs
	for range 3 {
		write()
	}
	if got := s.aofLog().Stats().Fsyncs; got < before+3 {
		t.Errorf("appendfsync always: %d fsyncs for 3 writes", got-before)
	}
	if got := r.do("CONFIG", "SET", "appendfsync", "sometimes"); !strings.Contains(got, "argument(s) must be one of the following: everysec, always, no") {
		t.Errorf("bad appendfsync: %q", got)
	}
}

// TestConfigSetAutoRewriteLive: auto-aof-rewrite-percentage and -min-size
// set at run time decide the next automatic rewrite.
func TestConfigSetAutoRewriteLive(t *testing.T) {
	s, addr, clk := newTestServer(t, func(c *Config) {
		c.Persist.Dir = t.TempDir()
		c.Persist.AppendOnly = true
	})
	r := dialRaw(t, addr)
	for i := range 20 {
		r.do("SET", "k"+strconv.Itoa(i), strings.Repeat("v", 100))
	}
	base := s.aofLog().Stats().BaseSize
	s.persistTick(clk.Now()) // the default 64mb minimum: no rewrite
	time.Sleep(20 * time.Millisecond)
	if s.persist.rewriteRunning.Load() || s.aofLog().Stats().BaseSize != base {
		t.Fatal("rewrite below the minimum size")
	}
	if got := r.do("CONFIG", "SET", "auto-aof-rewrite-min-size", "1kb", "auto-aof-rewrite-percentage", "10"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET: %q", got)
	}
	s.persistTick(clk.Now())
	deadline := time.Now().Add(5 * time.Second)
	for s.aofLog().Stats().BaseSize == base || s.persist.rewriteRunning.Load() {
		if time.Now().After(deadline) {
			t.Fatal("no automatic rewrite after lowering the minimum size")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// FuzzConfigRewrite: whatever the old file holds, the rewritten one keeps
// every line that sets no row, in order, and its row lines load back to
// the running server's values.
func FuzzConfigRewrite(f *testing.F) {
	for _, s := range []string{"# c\nport 1\nsave 60 1\nsave 5 5\nio-threads 4\n", "port x\nport 2 3\nlua-time-limit 9\n", "'\nshards 4\nbind a -b\n", ""} {
		f.Add(s)
	}
	cfg := quietConfig()
	cfg.Persist.Save = []SaveRule{{60, 1}}
	cfg.Port = 7000
	s, err := New(cfg)
	if err != nil {
		f.Fatal(err)
	}
	isRow := func(line string) (ConfigDirective, bool) {
		t := strings.Trim(line, " \t\r")
		if t == "" || t[0] == '#' {
			return ConfigDirective{}, false
		}
		args, err := SplitConfigLine(t)
		if err != nil || len(args) == 0 || LookupConfigParam(args[0]) == nil {
			return ConfigDirective{}, false
		}
		args[0] = strings.ToLower(args[0])
		return ConfigDirective{File: "f", Line: 1, Text: t, Args: args}, true
	}
	f.Fuzz(func(t *testing.T, text string) {
		old := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		out := configRewriteLines(s, old)
		var kept, keptOld []string
		var dirs []ConfigDirective
		for _, l := range out {
			if d, ok := isRow(l); ok {
				dirs = append(dirs, d)
			} else if l != rewriteSignature {
				kept = append(kept, l)
			}
		}
		for _, l := range old {
			if _, ok := isRow(l); !ok && l != rewriteSignature && (l != "" || len(old) > 1) {
				keptOld = append(keptOld, l)
			}
		}
		if !slices.Equal(kept, keptOld) {
			t.Fatalf("old %q: other lines %q, want %q", old, kept, keptOld)
		}
		c := DefaultConfig()
		if _, err := ApplyConfig(dirs, &c, nil); err != nil {
			t.Fatalf("old %q: rewritten row lines %v do not load: %v", old, dirs, err)
		}
		for _, p := range configTable {
			if p.Settable() && rewriteAliases[p.Name] == "" && p.Format(&c) != p.Get(s) {
				t.Fatalf("old %q: %s loads back as %q, runs with %q", old, p.Name, p.Format(&c), p.Get(s))
			}
		}
	})
}
