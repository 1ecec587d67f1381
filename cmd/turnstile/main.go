// Command turnstile runs the Turnstile rate-limit server.
//
// It only wires things together: parse flags (and an optional redis.conf
// style file), build the server, turn SIGINT/SIGTERM into shutdowns
// (signals.go), serve.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/turnstile/turnstile/clock"
	"github.com/turnstile/turnstile/server"
)

func main() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	os.Exit(cli(os.Args[1:], sigs, os.Stdout, os.Stderr))
}

// cli runs the command line and returns the exit code: check-aof, --help
// and --version print to stdout and return 0; an error is printed once,
// to stderr, without the usage, and returns 1.
func cli(args []string, sigs <-chan os.Signal, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "check-aof" {
		if err := checkAOF(args[1:], stdout); err != nil {
			fmt.Fprintln(stderr, "turnstile check-aof:", err)
			return 1
		}
		return 0
	}
	if len(args) > 0 && args[0] == "ping" { // the container's health check (ping.go)
		if err := ping(args[1:], stdout); err != nil {
			fmt.Fprintln(stderr, "turnstile ping:", err)
			return 1
		}
		return 0
	}
	err := run(context.Background(), sigs, args, stdout)
	switch {
	case errors.Is(err, flag.ErrHelp):
		printUsage(stdout)
		return 0
	case errors.Is(err, errVersion):
		fmt.Fprintf(stdout, "Turnstile server v=%s redis_version=%s go=%s bits=%d\n",
			server.TurnstileVersion, server.Version, runtime.Version(), 32<<(^uint(0)>>63))
		return 0
	case err != nil:
		fmt.Fprintln(stderr, "turnstile:", err)
		return 1
	}
	return 0
}

// printUsage prints --help: the forms of the command line and every option.
func printUsage(w io.Writer) {
	fmt.Fprint(w, `Usage: turnstile [/path/to/redis.conf] [--option value ...]
       turnstile check-aof [--fix [--force]] FILE   check (and repair) an append-only log or snapshot
       turnstile --version | -v
       turnstile --help | -h

A config file uses redis.conf's syntax; options given on the command line
override it. Every option is also a config file directive of the same name.

Options:
`)
	cfg := server.DefaultConfig()
	cfg.Persist.Save = server.DefaultSaveRules
	rt := defaultRuntimeConfig()
	fs := newFlagSet(&cfg, &rt)
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// startCPUProfile writes a CPU profile to path until the returned func runs
// (for performance work: go tool pprof FILE).
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// run parses args, starts the server and blocks until it has stopped:
// shut down by a signal on sigs (signals.go) or by SHUTDOWN, or closed at
// once when ctx is done (Server.Close: tests).
func run(ctx context.Context, sigs <-chan os.Signal, args []string, logOut io.Writer) error {
	cfg, rt, logLevel, err := parseConfig(args)
	if err != nil {
		return err
	}
	if err := checkDir(cfg.Persist.Dir); err != nil {
		return err
	}
	if cfg.LogFile != "" {
		f, err := os.OpenFile(cfg.LogFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("can't open the log file %q: %w", cfg.LogFile, err)
		}
		defer f.Close()
		logOut = f
	}
	floor := rt.apply()
	defer runtime.KeepAlive(floor)
	stopFloor := make(chan struct{})
	defer close(stopFloor)
	go floor.watch(stopFloor, 100*time.Millisecond)
	cfg.GoBallast = floor.Held
	if rt.cpuProfile != "" {
		stopProfile, err := startCPUProfile(rt.cpuProfile)
		if err != nil {
			return err
		}
		defer stopProfile()
	}
	levelVar := new(slog.LevelVar) // CONFIG SET loglevel changes it
	levelVar.Set(logLevel)
	logger := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: levelVar}))
	cfg.Logger, cfg.LogLevelVar = logger, levelVar
	warned := map[string]bool{}
	for _, d := range rt.ignored {
		if warned[d.Name] { // in the file and on the command line
			continue
		}
		warned[d.Name] = true
		logger.Warn("config directive has no effect in Turnstile; ignored", "directive", d.Name, "file", d.File, "line", d.Line)
	}
	if cfg.Daemonize {
		logger.Warn("daemonize yes is not supported; running in the foreground (let the service manager run it in the background)")
	}
	// The server clock continues from its state file in --dir (the
	// clock package's doc): a restart never moves time back, and a step of
	// the wall clock is slewed, never applied at once.
	cfg.Clock = clock.Restore(filepath.Join(cfg.Persist.Dir, clock.StateFile), clock.System(), logger.With("component", "clock"))
	node, err := rt.cluster.newNode(&cfg, logger)
	if err != nil {
		return err
	}
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	lns, err := srv.Listeners() // the plain port and the TLS port, as configured
	if err != nil {
		return err
	}
	if node != nil {
		if err := node.Start(srv); err != nil {
			for _, ln := range lns {
				ln.Close()
			}
			return err
		}
		defer node.Close()
	}
	if cfg.PidFile != "" {
		if err := os.WriteFile(cfg.PidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			logger.Warn("Failed to write PID file", "pidfile", cfg.PidFile, "err", err)
		} else {
			defer os.Remove(cfg.PidFile)
		}
	}
	logStartup(logger, &cfg, lns, node != nil)
	stopHUP := reloadOnHUP(srv, cfg.RLPolicies, logger)
	defer stopHUP()
	// Serve returns once the server has stopped and every connection has
	// closed.
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, lns...) }()
	return serveUntilStopped(served, sigs, func() error { return srv.Shutdown(server.ShutdownOptions{}) }, logger)
}

// checkDir refuses to start when dir does not exist, is not a directory,
// or cannot be written (a snapshot would fail only at the first save).
func checkDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("can't use dir %q: %w", dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("can't use dir %q: not a directory", dir)
	}
	f, err := os.CreateTemp(dir, ".turnstile-write-check-*")
	if err != nil {
		return fmt.Errorf("can't use dir %q: not writable: %w", dir, err)
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// logStartup logs the start-up summary, as Redis's first lines do: what
// runs, where it listens, and how it keeps the data.
func logStartup(logger *slog.Logger, cfg *server.Config, lns []net.Listener, replicated bool) {
	persistence := "none"
	switch {
	case replicated:
		persistence = "raft"
	case cfg.Persist.AppendOnly && len(cfg.Persist.Save) > 0:
		persistence = "aof+snapshot"
	case cfg.Persist.AppendOnly:
		persistence = "aof"
	case len(cfg.Persist.Save) > 0:
		persistence = "snapshot"
	}
	dir, err := filepath.Abs(cfg.Persist.Dir)
	if err != nil {
		dir = cfg.Persist.Dir
	}
	save := server.FormatSaveRules(cfg.Persist.Save)
	if save == "" {
		save = `""`
	}
	addrs := make([]string, len(lns))
	for i, ln := range lns {
		addrs[i] = ln.Addr().String()
	}
	logger.Info("turnstile starting", "version", server.TurnstileVersion, "redis_version", server.Version,
		"go", runtime.Version(), "pid", os.Getpid(), "addr", strings.Join(addrs, " "), "bind", cfg.Bind,
		"persistence", persistence, "dir", dir, "save", save, "appendfsync", cfg.Persist.AppendFsync.String(),
		"maxmemory", cfg.MaxMemory, "maxmemory_policy", cfg.MaxMemoryPolicy, "shards", cfg.Shards,
		"config_file", cfg.ConfigFile, "tls_port", cfg.TLS.Port)
}
