//go:build !unix

package main

import "os"

// processGone reports whether process pid no longer exists, as far as
// os.FindProcess can tell (on Windows it fails for a process that is gone;
// elsewhere it may always succeed, and ready's timeout bounds the wait).
func processGone(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return true
	}
	p.Release()
	return false
}
