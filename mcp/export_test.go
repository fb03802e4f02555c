package mcp

import "errors"

func init() {
	// Tests that use the cache name their own folder (HubOptions.CacheDir);
	// the others must neither touch the user's cache nor find entries made
	// by an earlier run.
	userCacheDir = func() (string, error) { return "", errors.New("no default cache folder in tests") }
}

// CacheTransports makes servers with a Transport cacheable, as if servers
// of the same name were launched the same way, until restore is called.
func CacheTransports() (restore func()) {
	transportKey = func(server string) string { return "transport " + server }
	return func() { transportKey = nil }
}

// SetUserCacheDir replaces os.UserCacheDir until the returned function is
// called.
func SetUserCacheDir(dir string) (restore func()) {
	old := userCacheDir
	userCacheDir = func() (string, error) { return dir, nil }
	return func() { userCacheDir = old }
}

// StartProcess is startProcess, for tests that warm up the starter
// goroutine before they count goroutines.
var StartProcess = startProcess
