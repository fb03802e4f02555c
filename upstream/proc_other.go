//go:build !unix

package upstream

import "os/exec"

// setProcessGroup is a no-op where process groups are not available.
func setProcessGroup(*exec.Cmd) func() { return nil }
