// Package npmtest finds, for the tests of every package, the pinned
// reference MCP servers (everything, filesystem, memory) that .ci/run
// installs with npm ci in mcp/testdata/npm.
package npmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Dir returns the absolute path of the reference servers' folder, given
// as rel from the test's package folder ("testdata/npm" in package mcp,
// "../mcp/testdata/npm" in agent). When node or the servers are missing
// it skips the test, except in CI (CI=true), where it fails it: CI must
// install them.
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

// Entry returns the entry point of one reference server (such as
// "server-memory") in the folder [Dir] returned.
func Entry(dir, server string) string {
	return filepath.Join(dir, "node_modules", "@modelcontextprotocol", server, "dist", "index.js")
}
