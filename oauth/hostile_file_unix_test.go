//go:build unix

package oauth_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/toolsift/toolsift/internal/oauthtest"
	"github.com/toolsift/toolsift/oauth"
)

// TestHostileLoginFiles: a login file is read under the cache's rules —
// a FIFO, /dev/zero, a file over the limit, a file writable by others or
// in a folder writable by others is refused with an error naming it, at
// once (issue 35 item 13: a FIFO hung list and serve, /dev/zero filled
// memory, 0666 passed silently).
func TestHostileLoginFiles(t *testing.T) {
	srv := oauthtest.New(notesServer(), nil)
	defer srv.Close()
	root := t.TempDir()
	dir := filepath.Join(root, "oauth") // the login files
	login(t, newStore(t, root), srv.URL)
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 1 {
		t.Fatalf("login files %v, want 1", files)
	}
	file := files[0]
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	restore := func() {
		os.Chmod(dir, 0o700)
		os.Remove(file)
		if err := os.WriteFile(file, good, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name  string
		make  func() error
		wants []string
	}{
		{"fifo", func() error { os.Remove(file); return syscall.Mkfifo(file, 0o600) }, []string{file, "not a regular file (a FIFO)"}},
		{"dev zero", func() error { os.Remove(file); return os.Symlink("/dev/zero", file) }, []string{file, "a character device"}},
		{"huge", func() error { return os.Truncate(file, 2<<30) }, []string{file, "2147483648 bytes, over the limit of 1048576"}},
		{"0666 file", func() error { return os.Chmod(file, 0o666) }, []string{file, "writable by group or others (mode 0666)"}},
		{"0777 folder", func() error { return os.Chmod(dir, 0o777) }, []string{dir, "writable by group or others (mode 0777)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer restore()
			warm := newStore(t, root) // has read the good file: the change must still be seen
			if _, err := warm.Token(t.Context(), "notes", srv.URL); err != nil {
				t.Fatal(err)
			}
			if err := tt.make(); err != nil {
				t.Fatal(err)
			}
			for which, s := range map[string]*oauth.Store{"new store": newStore(t, root), "warm store": warm} {
				tok, err := s.Token(t.Context(), "notes", srv.URL)
				if err == nil {
					t.Fatalf("%s: Token = %q, nil error; want the file refused", which, tok)
				}
				for _, w := range tt.wants {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: error %q lacks %q", which, err, w)
					}
				}
			}
		})
	}
}
