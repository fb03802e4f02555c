//go:build unix

package cachefile_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolsift/toolsift/internal/cachefile"
)

// TestReadFileFolders: a file in a folder writable by others is refused,
// unless the folder is sticky (/tmp): others cannot replace this user's
// file there.
func TestReadFileFolders(t *testing.T) {
	for _, tt := range []struct {
		mode os.FileMode
		ok   bool
	}{{0o700, true}, {0o777, false}, {0o777 | os.ModeSticky, true}, {0o770, false}} {
		dir := filepath.Join(t.TempDir(), "d")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, "f")
		if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, tt.mode); err != nil {
			t.Fatal(err)
		}
		_, err := cachefile.ReadFile(file, 10)
		if got := err == nil; got != tt.ok {
			t.Errorf("folder mode %v: ReadFile error %v, want ok %v", tt.mode, err, tt.ok)
		}
		if !tt.ok && !errors.Is(err, cachefile.ErrUnsafe) {
			t.Errorf("folder mode %v: error %v does not wrap ErrUnsafe", tt.mode, err)
		}
	}
}
