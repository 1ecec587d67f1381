package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/turnstile/turnstile/server"
)

// errVersion is parseConfig's answer to --version (-v): main prints the
// version and exits 0, as it does for --help (flag.ErrHelp).
var errVersion = errors.New("version requested")

// parseConfig builds the server config from defaults, then the config
// file (redis.conf syntax: the first argument when it is not an option,
// as in "redis-server /etc/redis/redis.conf", or --config), then
// command-line options, which win. Options take their value as the next
// argument or after '='; save, bind and client-output-buffer-limit also
// take several words, as in Redis ("--save 60 1 300 10").
func parseConfig(args []string) (server.Config, runtimeConfig, slog.Level, error) {
	cfg := server.DefaultConfig()
	cfg.Persist.Save = server.DefaultSaveRules // like redis.conf; --save "" turns them off
	rt := defaultRuntimeConfig()
	if len(args) > 0 && (args[0] == "-v" || args[0] == "--version") {
		return cfg, rt, 0, errVersion
	}
	var path string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		path, args = args[0], args[1:]
	}
	args = joinMultiWordArgs(args)
	args, ignored, err := ignoredArgs(args)
	if err != nil {
		return cfg, rt, 0, err
	}
	rt.ignored = ignored
	fs := newFlagSet(&cfg, &rt)
	if err := fs.Parse(args); err != nil {
		return cfg, rt, 0, err
	}
	if fs.NArg() > 0 {
		return cfg, rt, 0, fmt.Errorf("unexpected argument %q (a config file path must come first; options start with --)", fs.Arg(0))
	}
	if flagPath := fs.Lookup("config").Value.String(); flagPath != "" {
		if path != "" {
			return cfg, rt, 0, fmt.Errorf("two config files: %q and --config %q", path, flagPath)
		}
		path = flagPath
	}
	if path != "" {
		abs, err := filepath.Abs(path)
		if err != nil {
			return cfg, rt, 0, fmt.Errorf("config file: %w", err)
		}
		ignored, err := loadConfigFile(abs, &cfg, fs)
		if err != nil {
			return cfg, rt, 0, err
		}
		rt.ignored = append(ignored, rt.ignored...)
		cfg.ConfigFile = abs
		// Options given on the command line override the file.
		if err := fs.Parse(args); err != nil {
			return cfg, rt, 0, err
		}
	}
	return cfg, rt, cfg.SlogLevel(), cfg.Validate()
}

// joinMultiWordArgs turns "--save 60 1 300 10" into "--save", "60 1 300 10"
// for the options whose value has several words: the words up to the next
// argument starting with "--" are the value, as Redis reads its options.
func joinMultiWordArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		out = append(out, args[i])
		name, ok := strings.CutPrefix(args[i], "--")
		if !ok || strings.Contains(name, "=") {
			continue
		}
		if p := server.LookupConfigParam(name); p == nil || !server.MultiWordParam(p) {
			continue
		}
		j := i + 1
		for j < len(args) && !strings.HasPrefix(args[j], "--") {
			j++
		}
		if j-i > 2 {
			out = append(out, strings.Join(args[i+1:j], " "))
			i = j - 1
		}
	}
	return out
}

// newFlagSet registers --config, one flag per settable row of the
// server's configuration table (storing into cfg), and the Go runtime
// knobs (storing into rt).
func newFlagSet(cfg *server.Config, rt *runtimeConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("turnstile", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // main prints an error once, and the usage only for --help
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
	fs.Int64Var(&rt.gcFloor, "gc-floor", rt.gcFloor, "bytes of untouched address space the Go GC counts as heap while the heap is smaller, so a small heap is not collected after every few hundred KiB of garbage (0 = none)")
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

	ignored []server.IgnoredDirective // config file directives that have no effect here (warned about)
}

// defaultGCPercent is lower than Go's 100: almost all of the heap is
// pointer-free keyspace tables the collector does not scan, so collecting
// more often is cheap and keeps RSS near the live data. A GOGC environment
// variable, when set, is kept unless --gogc is given.
const defaultGCPercent = 25

// defaultGCFloor is the ballast's size (gcfloor.go): a keyspace below it
// is collected after about 8 MiB of garbage.
const defaultGCFloor = 32 << 20

func defaultRuntimeConfig() runtimeConfig {
	rt := runtimeConfig{gcPercent: defaultGCPercent, gcFloor: defaultGCFloor}
	if _, ok := os.LookupEnv("GOGC"); ok {
		rt.gcPercent = -1
	}
	return rt
}

// apply sets the runtime knobs. It returns the ballast of --gc-floor,
// which the caller keeps reachable while the server runs and watches.
func (rt runtimeConfig) apply() *gcFloor {
	if rt.gcPercent >= 0 {
		debug.SetGCPercent(rt.gcPercent)
	}
	if rt.memLimit > 0 {
		debug.SetMemoryLimit(rt.memLimit)
	}
	return newGCFloor(rt.gcFloor)
}

// ignoredArgs takes out of args the options that are Redis directives
// with no effect here ("--supervised systemd", as Debian's service file
// passes), and returns them to be warned about like config file lines.
func ignoredArgs(args []string) (rest []string, ignored []server.IgnoredDirective, err error) {
	var dirs []server.ConfigDirective
	for i := 0; i < len(args); i++ {
		name, ok := strings.CutPrefix(args[i], "--")
		name, value, hasValue := strings.Cut(name, "=")
		if !ok || !server.IgnoredDirectiveName(name) {
			rest = append(rest, args[i])
			continue
		}
		d := server.ConfigDirective{File: "(command line)", Line: len(dirs) + 1, Text: args[i], Args: []string{strings.ToLower(name)}}
		if hasValue {
			d.Args = append(d.Args, value)
		}
		for ; !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "--"); i++ {
			d.Args = append(d.Args, args[i+1])
			d.Text += " " + args[i+1]
		}
		dirs = append(dirs, d)
	}
	var c server.Config
	ignored, err = server.ApplyConfig(dirs, &c, nil)
	return rest, ignored, err
}

// loadConfigFile reads the config file at path (and its includes) and
// applies it: the server's rows, then the Go runtime knobs of this binary
// by their flag names. It returns the directives that have no effect here,
// for run to warn about once each.
func loadConfigFile(path string, cfg *server.Config, fs *flag.FlagSet) ([]server.IgnoredDirective, error) {
	dirs, err := server.ReadConfigFile(path)
	if err != nil {
		return nil, err
	}
	return server.ApplyConfig(dirs, cfg, func(name string, args []string) (bool, error) {
		if name == "config" || fs.Lookup(name) == nil { // not a Go runtime or cluster knob either
			return false, nil
		}
		if len(args) != 1 {
			return true, errors.New("wrong number of arguments")
		}
		return true, fs.Set(name, args[0])
	})
}
