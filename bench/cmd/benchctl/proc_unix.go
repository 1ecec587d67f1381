//go:build unix

package main

import "syscall"

// processGone reports whether process pid no longer exists (or cannot be
// signalled): kill(pid, 0).
func processGone(pid int) bool {
	return syscall.Kill(pid, 0) != nil
}
