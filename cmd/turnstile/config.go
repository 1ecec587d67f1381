package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/turnstile/turnstile/persistence"
	"github.com/turnstile/turnstile/server"
)

// parseConfig builds the server config from defaults, then the --config
// file (redis.conf syntax), then command-line flags, which win.
func parseConfig(args []string) (server.Config, runtimeConfig, slog.Level, error) {
	cfg := server.DefaultConfig()
	rt := defaultRuntimeConfig()
	fs := flag.NewFlagSet("turnstile", flag.ContinueOnError)
	configFile := fs.String("config", "", "redis.conf-style configuration file")
	fs.StringVar(&cfg.Bind, "bind", cfg.Bind, "address to listen on")
	fs.IntVar(&cfg.Port, "port", cfg.Port, "TCP port")
	fs.StringVar(&cfg.RequirePass, "requirepass", cfg.RequirePass, "password clients must AUTH with")
	fs.IntVar(&cfg.MaxClients, "maxclients", cfg.MaxClients, "maximum simultaneous clients")
	fs.IntVar(&cfg.Shards, "shards", cfg.Shards, "shards per database (rounded up to a power of two)")
	fs.IntVar(&cfg.Databases, "databases", cfg.Databases, "number of databases")
	fs.IntVar(&cfg.Hz, "hz", cfg.Hz, "background task frequency")
	fs.Int64Var(&cfg.Limits.MaxBulkLen, "proto-max-bulk-len", cfg.Limits.MaxBulkLen, "largest bulk string accepted")
	fs.Int64Var(&cfg.Limits.MaxQueryBuf, "client-query-buffer-limit", cfg.Limits.MaxQueryBuf, "largest unprocessed input per client")
	cfg.Persist.Save = server.DefaultSaveRules // like redis.conf; --save "" turns them off
	fs.StringVar(&cfg.Persist.Dir, "dir", cfg.Persist.Dir, "directory of the snapshot and append-only files")
	fs.StringVar(&cfg.Persist.DBFilename, "dbfilename", cfg.Persist.DBFilename, "snapshot file name")
	fs.StringVar(&cfg.Persist.AppendFilename, "appendfilename", cfg.Persist.AppendFilename, "append-only file base name")
	fs.Var(yesNoFlag{&cfg.Persist.AppendOnly}, "appendonly", "yes|no: log every write to the append-only file")
	fs.Var(fsyncFlag{&cfg.Persist.AppendFsync}, "appendfsync", "always|everysec|no")
	fs.Var(saveFlag{&cfg.Persist.Save}, "save", `snapshot rules "<seconds> <changes> ..." ("" for none)`)
	fs.IntVar(&cfg.Persist.AutoRewritePercentage, "auto-aof-rewrite-percentage", cfg.Persist.AutoRewritePercentage, "rewrite the log when it grew by this percentage (0: never)")
	fs.Int64Var(&cfg.Persist.AutoRewriteMinSize, "auto-aof-rewrite-min-size", cfg.Persist.AutoRewriteMinSize, "smallest log size for an automatic rewrite, bytes")
	logLevel := fs.String("loglevel", "notice", "debug, verbose, notice or warning")
	fs.IntVar(&rt.gcPercent, "gogc", rt.gcPercent, "Go GC target percentage (GOGC); the keyspace is pointer-free, so a low value costs little CPU")
	fs.StringVar(&rt.cpuProfile, "cpuprofile", "", "write a CPU profile to this file until shutdown (performance work)")
	fs.Int64Var(&rt.memLimit, "gomemlimit", rt.memLimit, "Go soft memory limit in bytes (GOMEMLIMIT); 0 = none")
	if err := fs.Parse(args); err != nil {
		return cfg, rt, 0, err
	}
	if fs.NArg() > 0 {
		return cfg, rt, 0, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *configFile != "" {
		if err := loadConfigFile(*configFile, fs); err != nil {
			return cfg, rt, 0, err
		}
		// Flags given on the command line override the file.
		if err := fs.Parse(args); err != nil {
			return cfg, rt, 0, err
		}
	}
	level, err := parseLogLevel(*logLevel)
	if err != nil {
		return cfg, rt, 0, err
	}
	return cfg, rt, level, cfg.Validate()
}

// yesNoFlag is a redis.conf yes/no setting.
type yesNoFlag struct{ v *bool }

func (f yesNoFlag) String() string {
	if f.v != nil && *f.v {
		return "yes"
	}
	return "no"
}

func (f yesNoFlag) Set(s string) error {
	switch strings.ToLower(s) {
	case "yes":
		*f.v = true
	case "no":
		*f.v = false
	default:
		return errors.New("want yes or no")
	}
	return nil
}

type fsyncFlag struct{ v *persistence.FsyncPolicy }

func (f fsyncFlag) String() string {
	if f.v == nil {
		return ""
	}
	return f.v.String()
}

func (f fsyncFlag) Set(s string) error {
	p, err := persistence.ParseFsyncPolicy(s)
	if err == nil {
		*f.v = p
	}
	return err
}

type saveFlag struct{ v *[]server.SaveRule }

func (f saveFlag) String() string {
	if f.v == nil {
		return ""
	}
	return server.FormatSaveRules(*f.v)
}

func (f saveFlag) Set(s string) error {
	r, err := server.ParseSaveRules(s)
	if err == nil {
		*f.v = r
	}
	return err
}

// runtimeConfig holds the Go runtime settings the server exposes.
type runtimeConfig struct {
	gcPercent int   // debug.SetGCPercent; negative leaves the runtime's value
	memLimit  int64 // debug.SetMemoryLimit in bytes; 0 leaves it unset

	cpuProfile string // write a CPU profile here while running
}

// defaultGCPercent is lower than Go's 100: almost all of the heap is
// pointer-free keyspace tables the collector does not scan, so collecting
// more often is cheap and keeps RSS near the live data. A GOGC environment
// variable, when set, is kept unless --gogc is given.
const defaultGCPercent = 25

func defaultRuntimeConfig() runtimeConfig {
	rt := runtimeConfig{gcPercent: defaultGCPercent}
	if _, ok := os.LookupEnv("GOGC"); ok {
		rt.gcPercent = -1
	}
	return rt
}

// apply sets the runtime knobs.
func (rt runtimeConfig) apply() {
	if rt.gcPercent >= 0 {
		debug.SetGCPercent(rt.gcPercent)
	}
	if rt.memLimit > 0 {
		debug.SetMemoryLimit(rt.memLimit)
	}
}

// loadConfigFile applies "name value" lines (redis.conf syntax: '#'
// comments, quoted values) to the flags of the same name.
func loadConfigFile(path string, fs *flag.FlagSet) error {
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
		if name == "config" || fs.Lookup(name) == nil {
			return fmt.Errorf("config file %s:%d: unknown directive %q", path, line, name)
		}
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("config file %s:%d: %s: %w", path, line, name, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	return nil
}

func parseLogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "verbose", "notice", "info":
		return slog.LevelInfo, nil
	case "warning", "warn":
		return slog.LevelWarn, nil
	}
	return 0, errors.New("loglevel must be debug, verbose, notice or warning")
}
