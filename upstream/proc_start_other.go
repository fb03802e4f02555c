//go:build !linux

package upstream

import "os/exec"

// startProcess starts cmd. Only Linux has Pdeathsig and its thread caveat
// (see proc_linux.go); elsewhere children are stopped through their
// process group when the Hub closes.
func startProcess(cmd *exec.Cmd) error { return cmd.Start() }
