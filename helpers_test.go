package toolsift_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
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

// requireNPMServers returns the folder of the pinned reference servers. It
// skips when they are not installed, except in CI, where their absence is a
// failure (.ci/run installs them).
func requireNPMServers(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("mcp", "testdata", "npm"))
	if err != nil {
		t.Fatal(err)
	}
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not on PATH"
	} else if _, err := os.Stat(filepath.Join(dir, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")); err != nil {
		missing = "reference servers not installed (run: cd mcp/testdata/npm && npm ci --ignore-scripts)"
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI must install the npm reference servers: %s", missing)
		}
		t.Skip(missing)
	}
	return dir
}
