package main

import (
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/turnstile/turnstile/server"
)

// errInsist is run's error when a second SIGINT arrives while a shutdown
// is under way: the process exits at once, without finishing it.
var errInsist = errors.New("second SIGINT while shutting down: exited without finishing the shutdown")

// serveUntilStopped waits for the server to stop (served delivers Serve's
// result) and turns SIGTERM and SIGINT into shutdowns, as Redis does: each
// signal runs shutdown (the final snapshot, then stop) in the background;
// if that fails, the server keeps serving ("can't exit") and the next
// signal tries again. A SIGTERM while a shutdown is under way changes
// nothing; a SIGINT then means "quit now" (Ctrl+C twice): it returns
// errInsist at once, and the caller exits with an error, as Redis does
// ("You insist... exiting now.").
func serveUntilStopped(served <-chan error, sigs <-chan os.Signal, shutdown func() error, log *slog.Logger) error {
	var shutting chan error // the running shutdown's result; nil when none runs
	for {
		select {
		case err := <-served:
			return err
		case sig := <-sigs:
			if shutting != nil {
				if sig == os.Interrupt {
					log.Warn("You insist... exiting now.")
					return errInsist
				}
				continue
			}
			log.Warn("received "+signalName(sig)+"; shutting down", "signal", sig.String())
			shutting = make(chan error, 1)
			go func() { shutting <- shutdown() }()
		case err := <-shutting:
			shutting = nil
			if err != nil {
				// The server is still serving: Serve has not returned.
				log.Error("Errors trying to shut down the server; still serving. Check the logs for more information.", "err", err)
			}
		}
	}
}

func signalName(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// reloadOnHUP reads the rate-limit policy file again on each SIGHUP (when
// one is configured), keeping the rules in force if it has a mistake. The
// returned function stops it.
func reloadOnHUP(srv *server.Server, path string, log *slog.Logger) func() {
	if path == "" {
		return func() {}
	}
	hups := make(chan os.Signal, 1)
	signal.Notify(hups, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-hups:
				if n, err := srv.ReloadPolicies(); err != nil && n == 0 {
					log.Warn("SIGHUP: the policy file was not reloaded; the rules in force stay", "err", err)
				} else if err != nil {
					log.Warn("SIGHUP: policy file reloaded", "file", path, "rules", n, "err", err)
				} else {
					log.Info("SIGHUP: policy file reloaded", "file", path, "rules", n)
				}
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(hups); close(done) }
}
