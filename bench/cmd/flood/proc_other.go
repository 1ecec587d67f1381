//go:build !linux

package main

import "os/exec"

// dieWithParent does nothing here: only Linux has a parent-death signal
// (and the tool needs Linux's /proc for RSS anyway).
func dieWithParent(cmd *exec.Cmd) {}
