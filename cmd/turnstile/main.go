// Command turnstile runs the Turnstile rate-limit server.
//
// It only wires things together: parse flags (and an optional redis.conf
// style file), build the server, turn SIGINT/SIGTERM into shutdowns
// (signals.go), serve.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"syscall"

	"github.com/turnstile/turnstile/clock"
	"github.com/turnstile/turnstile/server"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "check-aof" {
		if err := checkAOF(os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "turnstile check-aof:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "ping" { // the container's health check (ping.go)
		if err := ping(os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "turnstile ping:", err)
			os.Exit(1)
		}
		return
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	if err := run(context.Background(), sigs, os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "turnstile:", err)
		os.Exit(1)
	}
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
	ballast := rt.apply()
	defer runtime.KeepAlive(ballast)
	cfg.GoBallast = int64(len(ballast))
	if rt.cpuProfile != "" {
		stopProfile, err := startCPUProfile(rt.cpuProfile)
		if err != nil {
			return err
		}
		defer stopProfile()
	}
	logger := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: logLevel}))
	cfg.Logger = logger
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
	logger.Info("turnstile starting", "version", server.TurnstileVersion, "redis_version", server.Version,
		"go", runtime.Version(), "shards", cfg.Shards, "pid", os.Getpid())
	// Serve returns once the server has stopped and every connection has
	// closed.
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, lns...) }()
	return serveUntilStopped(served, sigs, func() error { return srv.Shutdown(server.ShutdownOptions{}) }, logger)
}
