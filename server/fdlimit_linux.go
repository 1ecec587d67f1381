//go:build linux

package server

import "syscall"

// processFDLimiter is the process's RLIMIT_NOFILE (fdlimit.go).
func processFDLimiter() fdLimiter { return rlimitNoFile{} }

type rlimitNoFile struct{}

func (rlimitNoFile) get() (cur, max uint64, err error) {
	var r syscall.Rlimit
	err = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r)
	return r.Cur, r.Max, err
}

func (rlimitNoFile) set(cur, max uint64) error {
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: cur, Max: max})
}
