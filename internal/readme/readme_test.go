// Package readme_test checks that the Go programs of the repository's
// README.md and docs/library.md compile against the current API.
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
	for _, file := range []string{"README.md", "docs/library.md"} {
		t.Run(file, func(t *testing.T) { checkCompiles(t, file) })
	}
}

// checkCompiles builds every ```go block of file, a path from the
// repository's root.
func checkCompiles(t *testing.T, file string) {
	readme, err := os.ReadFile(filepath.Join("..", "..", file))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllSubmatch(readme, -1)
	if len(blocks) == 0 {
		t.Fatalf("%s has no ```go block", file)
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
			t.Errorf("%s Go block %d does not compile: %v\n%s", file, i+1, err, out)
		}
	}
}
