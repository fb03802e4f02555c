package upstream

import "errors"

func init() {
	// Tests that use the cache name their own folder (HubOptions.Store);
	// the others must neither touch the user's cache nor find entries made
	// by an earlier run.
	userCacheDir = func() (string, error) { return "", errors.New("no default cache folder in tests") }
}

// CacheDials makes servers with a Dial cacheable, as if servers of the
// same name were launched the same way, until restore is called.
func CacheDials() (restore func()) {
	dialKey = func(server string) string { return "dial " + server }
	return func() { dialKey = nil }
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

// Call's own errors, for tests that tell them from the others wrapping the
// same tool error (ErrToolDisabled also wraps tool.ErrUnknown).
var (
	ErrUnknownTool       = errUnknownTool
	ErrServerUnavailable = errServerUnavailable
	ErrInvalidArguments  = errInvalidArguments
)
