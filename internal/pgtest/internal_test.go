//go:build unix

package pgtest

import (
	"strings"
	"testing"
)

// TestBinDirMissing: without the binaries the error says what to install
// and which command installs it.
func TestBinDirMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	old := libGlob
	libGlob = t.TempDir() + "/*/bin"
	defer func() { libGlob = old }()
	_, err := binDir()
	if err == nil {
		t.Fatal("binDir found binaries in empty folders")
	}
	for _, want := range []string{"apt-get install postgresql", ".ci/test"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
}
