package toolsift_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolsift/toolsift/internal/npmtest"
	"github.com/toolsift/toolsift/internal/testenv"
)

// TestMain keeps the caches in a folder of this run, not the user's, and
// fails the run on leaked goroutines (see testenv.Main).
func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// requireNPMServers returns the folder of the pinned reference servers
// (see npmtest.Dir).
func requireNPMServers(t *testing.T) string {
	return npmtest.Dir(t, filepath.Join("mcp", "testdata", "npm"))
}
