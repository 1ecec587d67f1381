package main

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/turnstile/turnstile/server"
)

// TestFlagsMatchConfigTable: every flag is a row of the server's
// configuration table (or --config, or a Go runtime knob), and every
// settable row is a flag with the row's usage, so the two cannot drift.
func TestFlagsMatchConfigTable(t *testing.T) {
	cfg := server.DefaultConfig()
	rt := defaultRuntimeConfig()
	fs := newFlagSet(&cfg, &rt)
	rows := map[string]*server.ConfigParam{}
	for _, p := range server.ConfigParams() {
		if !p.Settable() {
			t.Errorf("row %s has no flag", p.Name)
			continue
		}
		rows[p.Flag] = p
		f := fs.Lookup(p.Flag)
		if f == nil {
			t.Errorf("row %s: no flag --%s", p.Name, p.Flag)
			continue
		}
		if f.Usage != p.Usage {
			t.Errorf("--%s: usage %q, row says %q", p.Flag, f.Usage, p.Usage)
		}
		if f.DefValue != p.Default() {
			t.Errorf("--%s: default %q, row says %q", p.Flag, f.DefValue, p.Default())
		}
	}
	runtimeFlags := []string{"gogc", "cpuprofile", "gomemlimit", "gc-floor"} // the Go runtime knobs
	clusterFlags := []string{"node-id", "raft-addr", "raft-advertise", "announce", "bootstrap", "join", "stale-reads"}
	fs.VisitAll(func(f *flag.Flag) {
		if rows[f.Name] == nil && f.Name != "config" && !slices.Contains(runtimeFlags, f.Name) && !slices.Contains(clusterFlags, f.Name) {
			t.Errorf("flag --%s is not a configuration row", f.Name)
		}
	})
	for _, name := range runtimeFlags {
		if fs.Lookup(name) == nil || server.LookupConfigParam(name) != nil {
			t.Errorf("runtime flag %s: registered %v, also a row %v", name, fs.Lookup(name) != nil, server.LookupConfigParam(name) != nil)
		}
	}
}

// TestParseConfigFileUnits: the config file takes redis.conf's size units
// and the new parameters by their redis.conf names; flags still win.
func TestParseConfigFileUnits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "turnstile.conf")
	conf := strings.Join([]string{
		"proto-max-bulk-len 64mb",
		"client-query-buffer-limit 1gb",
		"auto-aof-rewrite-min-size 512k",
		"turnstile-multi-max-bytes 2MB",
		"turnstile-multi-max-commands 500",
		"turnstile-watch-max-keys 9",
		"turnstile-shards 32",
		"appendonly yes",
		"appendfsync always",
		`save ""`,
		"loglevel warning",
		"gogc 50",
	}, "\n")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, rt, level, err := parseConfig([]string{"--config", path, "--turnstile-multi-max-commands", "600", "--proto-max-bulk-len", "1kb"})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"proto-max-bulk-len": "1024", "client-query-buffer-limit": "1073741824", "auto-aof-rewrite-min-size": "512000",
		"turnstile-multi-max-bytes": "2097152", "turnstile-multi-max-commands": "600", "turnstile-watch-max-keys": "9",
		"turnstile-shards": "32", "appendonly": "yes", "appendfsync": "always", "save": "", "loglevel": "warning",
	} {
		if got := server.LookupConfigParam(name).Format(&cfg); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if cfg.MaxQueuedBytes != 2<<20 || cfg.Limits.MaxBulkLen != 1024 || cfg.Shards != 32 {
		t.Errorf("config fields: %d %d %d", cfg.MaxQueuedBytes, cfg.Limits.MaxBulkLen, cfg.Shards)
	}
	if rt.gcPercent != 50 || level.String() != "WARN" {
		t.Errorf("gogc %d, level %v", rt.gcPercent, level)
	}
}

// TestParseConfigDefaults: with no flags, DefaultConfig and redis.conf's
// save rules.
func TestParseConfigDefaults(t *testing.T) {
	cfg, _, level, err := parseConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := server.DefaultConfig()
	want.Persist.Save = server.DefaultSaveRules
	for _, p := range server.ConfigParams() {
		if got, w := p.Format(&cfg), p.Format(&want); got != w {
			t.Errorf("%s = %q, want %q", p.Name, got, w)
		}
	}
	if level.String() != "INFO" {
		t.Errorf("level %v", level)
	}
}

// TestParseConfigFileErrors: a bad line is reported as Redis reports it,
// with the file name and line number, and the error appears once.
func TestParseConfigFileErrors(t *testing.T) {
	dir := t.TempDir()
	for conf, want := range map[string]string{
		"proto-max-bulk-len 64 mb\n":     "at line 1\n>>> 'proto-max-bulk-len 64 mb'\nwrong number of arguments",
		"# c\nmaxclients 5kb\n":          "at line 2\n>>> 'maxclients 5kb'\nargument couldn't be parsed into an integer",
		"maxmemory-policy lru\n":         "at line 1\n>>> 'maxmemory-policy lru'\nargument(s) must be one of the following",
		"\n\nnosuch-directive 0\n":       "at line 3\n>>> 'nosuch-directive 0'\nBad directive or wrong number of arguments",
		"config other.conf\n":            "at line 1\n>>> 'config other.conf'\nBad directive or wrong number of arguments",
		"turnstile-multi-max-bytes 0\n":  "turnstile-multi-max-bytes 0'\nargument must be between 1 and 9223372036854775807 inclusive",
		"appendonly maybe\n":             "'appendonly maybe'\nargument must be 'yes' or 'no'",
		"save 60\n":                      "'save 60'\nInvalid save parameters",
		`port "1"x` + "\n":               "Unbalanced quotes in configuration line",
		"gogc 1 2\n":                     "'gogc 1 2'\nwrong number of arguments",
		"rename-command FLUSHALL \"\"\n": "rename-command is not supported",
	} {
		path := filepath.Join(dir, "t.conf")
		if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		_, _, _, err := parseConfig([]string{"--config", path})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%q: error %v, want %q and the file name", conf, err, want)
		}
	}
	for _, args := range [][]string{
		{"--turnstile-watch-max-keys", "0"},
		{"--client-query-buffer-limit", "1tb"},
		{"--hz", "-1"},
	} {
		if _, _, _, err := parseConfig(args); err == nil {
			t.Errorf("%v: expected an error", args)
		}
	}
}

// TestReadmeConfiguration: README.md's Configuration table has a line for
// every flag, and marks exactly the rows CONFIG SET can change as live.
func TestReadmeConfiguration(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Skip("README.md not found:", err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Configuration\n")
	if !ok {
		t.Fatal("README.md has no Configuration section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	lines := map[string]string{}
	for _, l := range strings.Split(section, "\n") {
		if rest, ok := strings.CutPrefix(l, "| `--"); ok {
			name, _, _ := strings.Cut(rest, "`")
			lines[name] = l
		}
	}
	cfg := server.DefaultConfig()
	rt := defaultRuntimeConfig()
	newFlagSet(&cfg, &rt).VisitAll(func(f *flag.Flag) {
		l, ok := lines[f.Name]
		if f.Name == "config" {
			return
		}
		if !ok {
			t.Errorf("README.md's Configuration table has no row for --%s", f.Name)
			return
		}
		p := server.LookupConfigParam(f.Name)
		if live := strings.Contains(l, "*live*"); live != (p != nil && p.Mutable()) {
			t.Errorf("README.md: --%s marked live %v", f.Name, live)
		}
	})
}
