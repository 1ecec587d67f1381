package main

import (
	"bufio"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/turnstile/turnstile/server"
)

// parseConfig builds the server config from defaults, then the --config
// file (redis.conf syntax), then command-line flags, which win.
func parseConfig(args []string) (server.Config, runtimeConfig, slog.Level, error) {
	cfg := server.DefaultConfig()
	cfg.Persist.Save = server.DefaultSaveRules // like redis.conf; --save "" turns them off
	rt := defaultRuntimeConfig()
	fs := newFlagSet(&cfg, &rt)
	if err := fs.Parse(args); err != nil {
		return cfg, rt, 0, err
	}
	if fs.NArg() > 0 {
		return cfg, rt, 0, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if path := fs.Lookup("config").Value.String(); path != "" {
		if err := loadConfigFile(path, &cfg, fs); err != nil {
			return cfg, rt, 0, err
		}
		// Flags given on the command line override the file.
		if err := fs.Parse(args); err != nil {
			return cfg, rt, 0, err
		}
	}
	return cfg, rt, cfg.SlogLevel(), cfg.Validate()
}

// newFlagSet registers --config, one flag per settable row of the
// server's configuration table (storing into cfg), and the Go runtime
// knobs (storing into rt).
func newFlagSet(cfg *server.Config, rt *runtimeConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("turnstile", flag.ContinueOnError)
	fs.String("config", "", "redis.conf-style configuration file")
	for _, p := range server.ConfigParams() {
		if p.Settable() {
			fs.Var(paramFlag{p, cfg}, p.Flag, p.Usage)
		}
	}
	// The Go runtime knobs are flags (and config-file lines) of this
	// binary only, not rows of the server's table: they tune the process,
	// not the server, so CONFIG GET does not list them.
	fs.IntVar(&rt.gcPercent, "gogc", rt.gcPercent, "Go GC target percentage (GOGC); the keyspace is pointer-free, so a low value costs little CPU")
	fs.StringVar(&rt.cpuProfile, "cpuprofile", "", "write a CPU profile to this file until shutdown (performance work)")
	fs.Int64Var(&rt.memLimit, "gomemlimit", rt.memLimit, "Go soft memory limit in bytes (GOMEMLIMIT); 0 = none")
	fs.Int64Var(&rt.gcFloor, "gc-floor", rt.gcFloor, "bytes of untouched address space the Go GC counts as heap, so a small heap is not collected after every few hundred KiB of garbage (0 = none)")
	rt.cluster.register(fs)
	return fs
}

// paramFlag is a flag.Value over one configuration row: the row's parse
// stores into cfg, its format prints the value (and the flag's default).
type paramFlag struct {
	p   *server.ConfigParam
	cfg *server.Config
}

func (f paramFlag) String() string {
	if f.p == nil { // the zero value flag.PrintDefaults makes
		return ""
	}
	return f.p.Format(f.cfg)
}

func (f paramFlag) Set(v string) error { return f.p.Parse(f.cfg, v) }

// runtimeConfig holds the Go runtime settings the server exposes.
type runtimeConfig struct {
	gcPercent int   // debug.SetGCPercent; negative leaves the runtime's value
	memLimit  int64 // debug.SetMemoryLimit in bytes; 0 leaves it unset
	gcFloor   int64 // bytes of never-touched heap (a ballast); 0: none

	cpuProfile string // write a CPU profile here while running

	cluster clusterFlags // a replicated node's flags (cluster.go)
}

// defaultGCPercent is lower than Go's 100: almost all of the heap is
// pointer-free keyspace tables the collector does not scan, so collecting
// more often is cheap and keeps RSS near the live data. A GOGC environment
// variable, when set, is kept unless --gogc is given.
const defaultGCPercent = 25

// defaultGCFloor is the ballast: with GOGC 25 and a keyspace of a few
// MiB, the collector would otherwise run after every few hundred KiB of
// garbage (scripts, connections make some); with it, after about 16 MiB.
// The ballast is never written, so it takes address space, not RSS.
const defaultGCFloor = 64 << 20

func defaultRuntimeConfig() runtimeConfig {
	rt := runtimeConfig{gcPercent: defaultGCPercent, gcFloor: defaultGCFloor}
	if _, ok := os.LookupEnv("GOGC"); ok {
		rt.gcPercent = -1
	}
	return rt
}

// apply sets the runtime knobs. It returns the ballast, which the caller
// keeps reachable while the server runs.
func (rt runtimeConfig) apply() []byte {
	if rt.gcPercent >= 0 {
		debug.SetGCPercent(rt.gcPercent)
	}
	if rt.memLimit > 0 {
		debug.SetMemoryLimit(rt.memLimit)
	}
	if rt.gcFloor > 0 {
		return make([]byte, rt.gcFloor)
	}
	return nil
}

// loadConfigFile applies "name value" lines (redis.conf syntax: '#'
// comments, quoted values) with the configuration row of that name (or its
// flag name), else the Go runtime flag of that name.
func loadConfigFile(path string, cfg *server.Config, fs *flag.FlagSet) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		name, value, _ := strings.Cut(text, " ")
		name = strings.ToLower(name)
		value = strings.TrimSpace(value)
		if uq, err := strconv.Unquote(value); err == nil {
			value = uq
		}
		if p := server.LookupConfigParam(name); p != nil {
			err = p.Parse(cfg, value)
		} else if name != "config" && fs.Lookup(name) != nil { // a Go runtime knob
			err = fs.Set(name, value)
		} else {
			return fmt.Errorf("config file %s:%d: unknown directive %q", path, line, name)
		}
		if err != nil {
			return fmt.Errorf("config file %s:%d: %s: %w", path, line, name, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	return nil
}
