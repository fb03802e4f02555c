//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package store

import "sync"

var (
	heldMu sync.Mutex
	held   = map[string]bool{}
)

// tryLock locks file within this process only where flock is missing.
func tryLock(file string) (unlock func(), ok bool, err error) {
	heldMu.Lock()
	defer heldMu.Unlock()
	if held[file] {
		return nil, false, nil
	}
	held[file] = true
	var once sync.Once
	return func() {
		once.Do(func() {
			heldMu.Lock()
			delete(held, file)
			heldMu.Unlock()
		})
	}, true, nil
}
