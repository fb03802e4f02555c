//go:build !unix

package pgtest

import (
	"os"
	"testing"
)

// Env names an existing server's URL for Start (see pgtest.go).
const Env = "TOOLSIFT_TEST_POSTGRES"

const noUnix = "pgtest: a throwaway PostgreSQL cluster needs a Unix system; set " + Env + " to an existing server's URL"

// Main runs the tests.
func Main(m *testing.M) int { return m.Run() }

// Start returns the URL of Env's server, or fails the test: a throwaway
// cluster needs a Unix system.
func Start(t testing.TB) string {
	if u := os.Getenv(Env); u != "" {
		return u
	}
	t.Fatal(noUnix)
	return ""
}

// Cluster is a throwaway cluster (Unix only).
type Cluster struct{}

// NewCluster fails the test: a throwaway cluster needs a Unix system.
func NewCluster(t testing.TB) *Cluster { t.Fatal(noUnix); return nil }

// URL is the URL of database db.
func (c *Cluster) URL(db string) string { return "" }

// Database fails the test.
func (c *Cluster) Database(t testing.TB) string { t.Fatal(noUnix); return "" }

// Stop fails the test.
func (c *Cluster) Stop(t testing.TB) { t.Fatal(noUnix) }

// Restart fails the test.
func (c *Cluster) Restart(t testing.TB) { t.Fatal(noUnix) }
