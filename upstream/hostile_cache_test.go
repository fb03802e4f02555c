//go:build unix

package upstream_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/upstream"
)

// TestCacheHostileEntries: what an attacker (or an accident) puts where a
// cache entry belongs is refused with a warning, without hanging or
// reading it whole, and the server is started instead of trusted: a FIFO,
// a link to /dev/zero, a 1 GiB file, an entry or folder that another user
// could write (a forged entry there would serve forged descriptions and
// annotations without the server ever starting).
func TestCacheHostileEntries(t *testing.T) {
	cacheTransports(t)
	dir := t.TempDir()
	var conns atomic.Int32
	cfg := &config.Config{Servers: map[string]config.Server{"s": countedServer(newServer("s", nil, "a", "b"), &conns)}}
	startHub(t, cfg, &upstream.HubOptions{Store: dirStore(t, dir)}, nil).Close()
	files := cacheFiles(t, dir)
	if len(files) != 1 {
		t.Fatalf("cache files %v, want one", files)
	}
	entry := files[0]
	good, err := os.ReadFile(entry)
	if err != nil {
		t.Fatal(err)
	}
	catalog := filepath.Dir(entry)
	restore := func(t *testing.T) {
		t.Helper()
		_ = os.Chmod(catalog, 0o700)
		_ = os.Remove(entry)
		if err := os.WriteFile(entry, good, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T)
		want  string
	}{
		{"fifo", func(t *testing.T) {
			os.Remove(entry)
			if err := syscall.Mkfifo(entry, 0o600); err != nil {
				t.Skipf("no FIFOs here: %v", err)
			}
		}, "not a regular file (a FIFO)"},
		{"dev zero", func(t *testing.T) {
			os.Remove(entry)
			if err := os.Symlink("/dev/zero", entry); err != nil {
				t.Skip(err)
			}
		}, "not a regular file (a character device)"},
		{"huge", func(t *testing.T) {
			if err := os.Truncate(entry, 1<<30); err != nil {
				t.Fatal(err)
			}
		}, "1073741824 bytes, over the limit of 67108864"},
		{"world-writable entry", func(t *testing.T) {
			if err := os.Chmod(entry, 0o666); err != nil {
				t.Fatal(err)
			}
		}, "writable by group or others (mode 0666)"},
		{"world-writable folder", func(t *testing.T) {
			if err := os.Chmod(catalog, 0o777); err != nil {
				t.Fatal(err)
			}
		}, "writable by group or others (mode 0777)"},
		{"another user's entry", func(t *testing.T) {
			if os.Getuid() != 0 {
				t.Skip("only root can give a file to another user")
			}
			if err := os.Chown(entry, 4242, 4242); err != nil {
				t.Fatal(err)
			}
		}, "owned by uid 4242"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkGoroutines(t)
			restore(t)
			t.Cleanup(func() { restore(t) })
			tc.setup(t)
			var log logBuffer
			before := conns.Load()
			start := time.Now()
			hub := startHub(t, cfg, &upstream.HubOptions{Store: dirStore(t, dir), Logger: log.logger()}, nil)
			took := time.Since(start)
			if st := statusOf(t, hub, "s"); st.State != upstream.StateReady || st.FromCache || conns.Load() == before {
				t.Errorf("state %s (from cache %v, %d connections): want the server started, not the entry trusted", st.State, st.FromCache, conns.Load()-before)
			}
			if l := log.String(); !strings.Contains(l, "refused") || !strings.Contains(l, tc.want) {
				t.Errorf("log %q: want a warning with %q", l, tc.want)
			}
			t.Logf("Connect took %v; warning: %s", took, strings.TrimSpace(log.String()))
		})
	}
}
