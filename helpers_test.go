package toolsift_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolsift/toolsift/internal/npmtest"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/internal/testserver"
	"github.com/toolsift/toolsift/store"
)

// dirStore is the store.Dir in dir.
func dirStore(t testing.TB, dir string) *store.Dir {
	t.Helper()
	d, err := store.NewDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestMain keeps the caches in a folder of this run, not the user's, and
// fails the run on leaked goroutines (see testenv.Main).
// It is also the test MCP server, started under another name
// (internal/testserver).
func TestMain(m *testing.M) {
	testserver.Serve()
	os.Exit(testenv.Main(m))
}

// requireNPMServers returns the folder of the pinned reference servers
// (see npmtest.Dir).
func requireNPMServers(t *testing.T) string {
	return npmtest.Dir(t, filepath.Join("upstream", "testdata", "npm"))
}
