//go:build !linux

package server

// processFDLimiter is nil off Linux: maxclients is kept as configured and
// the open files limit is left alone (fdlimit.go).
func processFDLimiter() fdLimiter { return nil }
