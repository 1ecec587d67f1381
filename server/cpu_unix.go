//go:build unix

package server

import (
	"syscall"
	"time"
)

// cpuTimes returns the system and user CPU time the process has used, from
// getrusage(2).
func cpuTimes() (sys, user time.Duration, err error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, err
	}
	tv := func(t syscall.Timeval) time.Duration {
		return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
	}
	return tv(ru.Stime), tv(ru.Utime), nil
}

// cpuTimesSupported reports whether cpuTimes measures anything here.
const cpuTimesSupported = true
