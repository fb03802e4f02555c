// Package readme_test checks that the Go programs of the repository's
// README.md and docs/library.md compile against the current API.
package readme_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const module = "github.com/toolsift/toolsift"

// block is one ```go block of a file, compiled as a package of its own.
type block struct {
	file string // the file, from the repository's root
	n    int    // the block's number in the file, from 1
	pkg  string // the import path it is compiled as
}

// TestREADMECompiles compiles every ```go block of README.md and
// docs/library.md, each as a package of its own inside the module (an
// overlay: nothing is written into the work tree), with one go command:
// `go list -export` compiles them and everything they import, and links
// nothing. Under -race the packages are compiled with -race, as the tests
// around it are, so that they come from the build cache the test command
// has filled.
func TestREADMECompiles(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	replace := map[string]string{}
	var blocks []block
	for _, file := range []string{"README.md", "docs/library.md"} {
		text, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		found := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllSubmatch(text, -1)
		if len(found) == 0 {
			t.Errorf("%s has no ```go block", file)
		}
		for i, m := range found {
			b := block{file: file, n: i + 1}
			dir := fmt.Sprintf("%s-%d", strings.NewReplacer("/", "-", ".", "-").Replace(file), b.n)
			b.pkg = module + "/internal/readme/example/" + dir
			src := filepath.Join(tmp, dir+".go")
			if err := os.WriteFile(src, m[1], 0o644); err != nil {
				t.Fatal(err)
			}
			replace[filepath.Join(root, "internal", "readme", "example", dir, "main.go")] = src
			blocks = append(blocks, b)
		}
	}
	overlay, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		t.Fatal(err)
	}
	ov := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(ov, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"list", "-export", "-overlay", ov, "-f", "{{.ImportPath}}"}
	if raceEnabled {
		args = append(args, "-race")
	}
	for _, b := range blocks {
		args = append(args, b.pkg)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err == nil {
		if n := len(strings.Fields(string(out))); n != len(blocks) {
			t.Fatalf("go list -export compiled %d packages, want the %d blocks:\n%s", n, len(blocks), out)
		}
		return
	}
	// go list prints each package's compile errors under "# IMPORTPATH".
	errs := map[string]string{}
	for _, section := range strings.Split("\n"+stderr.String(), "\n# ")[1:] {
		pkg, msg, _ := strings.Cut(section, "\n")
		errs[strings.TrimSpace(pkg)] = msg
	}
	named := false
	for _, b := range blocks {
		if msg, ok := errs[b.pkg]; ok {
			named = true
			t.Errorf("%s Go block %d does not compile:\n%s", b.file, b.n, msg)
		}
	}
	if !named {
		t.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
}
