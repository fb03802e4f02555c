//go:build unix

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestTokenFileRefused: --token-file is read under the cache's rules: a
// FIFO (which hung serve before it printed anything), /dev/zero (which
// filled memory), a huge file and a file writable by others are refused,
// naming the file (issue 35 item 13).
func TestTokenFileRefused(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(config, []byte(`{"mcpServers":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	file := func(name string, make func(string) error) string {
		p := filepath.Join(dir, name)
		if err := make(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := file("fifo", func(p string) error { return syscall.Mkfifo(p, 0o600) })
	zero := file("zero", func(p string) error { return os.Symlink("/dev/zero", p) })
	huge := file("huge", func(p string) error {
		if err := os.WriteFile(p, []byte("tok"), 0o600); err != nil {
			return err
		}
		return os.Truncate(p, 2<<30)
	})
	open := file("open", func(p string) error {
		if err := os.WriteFile(p, []byte("secret-token\n"), 0o600); err != nil {
			return err
		}
		return os.Chmod(p, 0o666)
	})
	for _, tt := range []struct{ file, want string }{
		{fifo, "not a regular file (a FIFO)"},
		{zero, "not a regular file (a character device)"},
		{huge, "2147483648 bytes, over the limit of 65536"},
		{open, "writable by group or others (mode 0666)"},
	} {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			var stdout, stderr strings.Builder
			e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }}
			code := run(context.Background(), e, []string{"serve", "--config", config, "--listen", "127.0.0.1:0", "--token-file", tt.file})
			if code != 1 || !strings.Contains(stderr.String(), tt.file) || !strings.Contains(stderr.String(), tt.want) {
				t.Fatalf("exit %d, stderr %q; want 1 and an error naming %s: %s", code, stderr.String(), tt.file, tt.want)
			}
		})
	}
}
