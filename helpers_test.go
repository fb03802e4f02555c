package toolsift_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolsift/toolsift/internal/npmtest"
)

// TestMain keeps the tool-list cache in a folder of this run, not the
// user's.
func TestMain(m *testing.M) {
	cache, err := os.MkdirTemp("", "toolsift-cache")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CACHE_HOME", cache)
	code := m.Run()
	os.RemoveAll(cache)
	os.Exit(code)
}

// requireNPMServers returns the folder of the pinned reference servers
// (see npmtest.Dir).
func requireNPMServers(t *testing.T) string {
	return npmtest.Dir(t, filepath.Join("mcp", "testdata", "npm"))
}
