//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package oauth

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on path, shared by every process that
// uses the same Store folder, and returns its release.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
