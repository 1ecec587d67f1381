package main

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the server get SIGTERM when this tool exits, however
// it exits, so that an interrupted run leaves no server behind.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
