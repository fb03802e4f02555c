//go:build !unix

package pgtest

import "testing"

// SetHBA fails the test: a throwaway cluster needs a Unix system.
func (c *Cluster) SetHBA(t testing.TB, lines ...string) { t.Fatal(noUnix) }
