//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/toolsift/toolsift/internal/testenv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSIGINTExits130: Ctrl-C while servers connect ends toolbench with
// 130, as a shell reports an interrupted command, and leaves no server.
func TestSIGINTExits130(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "started")
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"slow": map[string]any{"command": "sh", "args": []string{"-c", "touch " + marker + "; exec sleep 600"}},
	}})
	path := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), mainArgsEnv+"="+strings.Join([]string{"list", "--config", path, "--no-cache", "--timeout", "10m", "--quiet"}, "\x1f"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(testenv.WaitLimit()); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the server never started")
		}
	}
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v, want code 130\nstderr:\n%s", err, stderr.String())
	}
	t.Logf("exited 130 %v after SIGINT; stderr: %s", time.Since(start), strings.TrimSpace(stderr.String()))
}
