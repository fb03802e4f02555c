package toolsift_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

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
