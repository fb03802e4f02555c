// Package npmtest finds, for the tests of every package, the pinned
// reference MCP servers (everything, filesystem, memory) that the test
// command, bash .ci/test, installs with npm ci in upstream/testdata/npm.
package npmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Dir returns the absolute path of the reference servers' folder, given
// as rel from the test's package folder ("testdata/npm" in package upstream,
// "../upstream/testdata/npm" in agent). When node or the servers are missing
// it skips the test naming the command that installs them, except where
// they must be there (see [Required]), where it fails it.
func Dir(t testing.TB, rel string) string {
	t.Helper()
	dir, err := filepath.Abs(rel)
	if err != nil {
		t.Fatal(err)
	}
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not on PATH"
	} else if _, err := os.Stat(Entry(dir, "server-everything")); err != nil {
		missing = "reference servers not installed"
	}
	if missing != "" {
		if Required() {
			t.Fatalf("the npm reference servers must be installed here (CI=true or %s=1): %s", RequiredEnv, missing)
		}
		t.Skipf("%s: run the test command, bash .ci/test, which installs them (npm ci in upstream/testdata/npm) and runs every test", missing)
	}
	return dir
}

// RequiredEnv is the variable that .ci/test sets once it has installed the
// npm packages, so that a test that finds them missing fails.
const RequiredEnv = "TOOLSIFT_TEST_NPM_REQUIRED"

// Required reports whether a missing npm package fails a test rather than
// skipping it: in CI (CI=true) and under .ci/test (RequiredEnv=1).
func Required() bool {
	return os.Getenv("CI") == "true" || os.Getenv(RequiredEnv) == "1"
}

// Entry returns the entry point of one reference server (such as
// "server-memory") in the folder [Dir] returned.
func Entry(dir, server string) string {
	return filepath.Join(dir, "node_modules", "@modelcontextprotocol", server, "dist", "index.js")
}
