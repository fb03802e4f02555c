//go:build unix

package dataset_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/toolsift/toolsift/internal/dataset"
)

// TestLoadHostileFiles: a --tools or --queries path that is a FIFO,
// /dev/zero or a 1 GiB file is refused before anything is read.
func TestLoadHostileFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	zero := filepath.Join(dir, "zero.jsonl")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.jsonl")
	if err := os.WriteFile(huge, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 1<<30); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, want string }{
		{fifo, "not a regular file"},
		{zero, "not a regular file"},
		{huge, "1073741824 bytes, over the limit of 268435456"},
	} {
		_, err1 := dataset.LoadTools(tc.file)
		_, _, err2 := dataset.LoadToolsQualified(tc.file, func(s, n string) string { return s + "__" + n })
		_, err3 := dataset.LoadQueries(tc.file)
		for _, err := range []error{err1, err2, err3} {
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.file) {
				t.Errorf("%s: error %v, want %q naming the file", filepath.Base(tc.file), err, tc.want)
			}
		}
	}
}
