//go:build !unix

package server

import "time"

// cpuTimes reports no CPU time: this platform has no getrusage(2), so INFO
// shows used_cpu_sys and used_cpu_user as 0.
func cpuTimes() (sys, user time.Duration, err error) {
	return 0, 0, nil
}

// cpuTimesSupported reports whether cpuTimes measures anything here.
const cpuTimesSupported = false
