//go:build unix

package pgtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// SetHBA replaces c's pg_hba.conf with lines and restarts c, so that they
// are in effect when it returns. Keep "local all postgres trust" among
// them: URL and Database connect as postgres without a password.
func (c *Cluster) SetHBA(t testing.TB, lines ...string) {
	t.Helper()
	path := filepath.Join(c.dir, "data", "pg_hba.conf")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	if c.cred != nil {
		if err := os.Chown(path, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			t.Fatalf("pgtest: %v", err)
		}
	}
	if err := c.stop(); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	if err := c.start(); err != nil {
		t.Fatalf("pgtest: with pg_hba.conf %q: %v", lines, err)
	}
}
