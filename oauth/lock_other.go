//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package oauth

// lockFile locks nothing where flock is missing: refreshes are serialized
// within a process only.
func lockFile(string) (func(), error) { return func() {}, nil }
