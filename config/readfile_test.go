//go:build unix

package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolsift/toolsift/config"
)

// TestLoadHostileFiles: a config path (or an envFile) that is a FIFO, a
// device or a huge file fails at once with an error naming it, instead of
// hanging Load or reading gigabytes.
func TestLoadHostileFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	zero := filepath.Join(dir, "zero.json")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.json")
	if f, err := os.Create(huge); err != nil {
		t.Fatal(err)
	} else {
		f.Truncate(1 << 30)
		f.Close()
	}
	envCfg := filepath.Join(dir, "env.json")
	if err := os.WriteFile(envCfg, []byte(`{"mcpServers":{"s":{"command":"x","envFile":"fifo.json"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, want string }{
		{fifo, "not a regular file"},
		{zero, "not a regular file"},
		{huge, "1073741824 bytes, over the limit of 16777216"},
	} {
		done := make(chan error, 1)
		start := time.Now()
		go func() { _, err := config.Load(tc.file, nil); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.file) {
				t.Errorf("Load(%s) = %v: want ErrInvalid naming the file and %q", tc.file, err, tc.want)
			}
			t.Logf("Load(%s) failed after %v: %v", filepath.Base(tc.file), time.Since(start), err)
		case <-time.After(time.Minute):
			t.Fatalf("Load(%s) hangs", tc.file)
		}
	}
	cfg, err := config.Load(envCfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Servers["s"].Err; err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("envFile that is a FIFO: server error %v", err)
	}
}
