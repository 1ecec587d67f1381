package server

import (
	"syscall"
	"unsafe"
)

// rawRead and rawWrite are read(2) and write(2) on a non-blocking socket
// without the scheduler's entersyscall/exitsyscall. Such a call cannot block
// (it returns EAGAIN instead; waiting is left to the poller), so the
// scheduler need not hand the P to another thread while it runs, and the
// bookkeeping costs more than it saves: when the whole process was idle,
// sysmon has gone to sleep, and the first entersyscall wakes it (a futex
// call); woken that way, sysmon polls every 20 µs for the next millisecond
// or so, each time a context switch on the server's CPU when the server is
// pinned to one. At -P 1 with 50 clients that was 13k sysmon wake-ups, 6k
// futex calls and 31k of 57k context switches per 300k requests.
//
// The cost: while one of these calls runs, a stop-the-world phase waits for
// it (microseconds: a loopback write runs the receiver's side too).
func rawRead(fd uintptr, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

func rawWrite(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
