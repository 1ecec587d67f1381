// Package testport hands tests TCP ports that nothing listens on, for a
// server the test starts later (or restarts on the same port).
//
// A port the kernel picks for a listen on port 0 comes from its ephemeral
// range, the range it also takes outgoing connections' source ports from.
// Between the check that found it free and the test's own listen, any
// connection (of another test package running in parallel, say) may take
// it, and the test fails with "address already in use". The ports Free
// hands out lie below that range, where only an explicit bind can take
// them; each is checked free with a listen first, and a process never
// hands out the same port twice (the one piece of process-wide state here,
// since ports are process-wide too).
package testport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
)

const (
	lowest = 15000 // the lowest port handed out: well above well-known services
	// defaultEphemeral is Linux's default start of the ephemeral range,
	// used where the kernel's own figure cannot be read.
	defaultEphemeral = 32768
	tries            = 200
)

var (
	mu    sync.Mutex
	given = map[string]bool{} // "ip:port" handed out by this process
)

// Free returns a port on ip (an address of this machine) that no socket
// is bound to now and that Free has not returned before in this process.
func Free(tb testing.TB, ip string) int {
	tb.Helper()
	top := ephemeralStart()
	mu.Lock()
	defer mu.Unlock()
	if top-lowest >= 1000 {
		for range tries {
			port := lowest + rand.IntN(top-lowest)
			if addr := net.JoinHostPort(ip, strconv.Itoa(port)); !given[addr] && bindable(addr) {
				given[addr] = true
				return port
			}
		}
	}
	// No room below the ephemeral range: let the kernel pick.
	for range tries {
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			tb.Fatalf("testport: %v", err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if addr := net.JoinHostPort(ip, strconv.Itoa(port)); !given[addr] {
			given[addr] = true
			return port
		}
	}
	tb.Fatalf("testport: no free port on %s", ip)
	return 0
}

// bindable reports whether a listener can be bound to addr now.
func bindable(addr string) bool {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// ephemeralStart returns the first port of the kernel's ephemeral range.
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return defaultEphemeral
	}
	var low, high int
	if _, err := fmt.Sscan(string(b), &low, &high); err != nil || low <= 0 {
		return defaultEphemeral
	}
	return low
}
