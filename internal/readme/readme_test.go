// Package readme_test checks that the Go program in the repository's
// README.md compiles against the current API.
package readme_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

func TestREADMECompiles(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllSubmatch(readme, -1)
	if len(blocks) == 0 {
		t.Fatal("README.md has no ```go block")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	for i, b := range blocks {
		// An overlay puts the block inside the module without writing
		// into the work tree.
		src := filepath.Join(tmp, "main.go")
		if err := os.WriteFile(src, b[1], 0o644); err != nil {
			t.Fatal(err)
		}
		virtual := filepath.Join(root, "internal", "readme", "example", "main.go")
		overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{virtual: src}})
		ov := filepath.Join(tmp, "overlay.json")
		if err := os.WriteFile(ov, overlay, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("go", "build", "-overlay", ov, "-o", os.DevNull, "./internal/readme/example")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("README.md Go block %d does not compile: %v\n%s", i+1, err, out)
		}
	}
}
