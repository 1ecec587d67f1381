//go:build linux

package faulttest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestMain removes the binary the tests built, once they are done.
func TestMain(m *testing.M) {
	redis.SetLogger(quietLogger{}) // dial errors while a node is down are expected
	code := m.Run()
	if bin.dir != "" {
		os.RemoveAll(bin.dir)
	}
	os.Exit(code)
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// bin is the turnstile binary, built once per test run (or taken from
// TURNSTILE_BIN), and what it supports.
var bin struct {
	once    sync.Once
	dir     string // removed by TestMain
	path    string
	err     error
	cluster bool // it knows --node-id
}

// turnstileBinary returns the path of the turnstile binary and whether it
// runs in cluster mode. The processes are not race builds: the race
// detector is for the harness, the servers have their own tests.
func turnstileBinary(t testing.TB) (string, bool) {
	t.Helper()
	bin.once.Do(func() {
		bin.path = os.Getenv("TURNSTILE_BIN")
		if bin.path == "" {
			bin.dir, bin.err = os.MkdirTemp("", "turnstile-faulttest-")
			if bin.err != nil {
				return
			}
			bin.path = filepath.Join(bin.dir, "turnstile")
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, goTool(), "build", "-o", bin.path, "github.com/turnstile/turnstile/cmd/turnstile")
			if out, err := cmd.CombinedOutput(); err != nil {
				bin.err = fmt.Errorf("go build: %v\n%s", err, out)
				return
			}
		}
		out, _ := exec.Command(bin.path, "--help").CombinedOutput()
		bin.cluster = strings.Contains(string(out), "-node-id")
	})
	if bin.err != nil {
		t.Fatal(bin.err)
	}
	return bin.path, bin.cluster
}

// goTool is the go command of the toolchain running the tests.
func goTool() string {
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
