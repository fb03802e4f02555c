package readme_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/internal/npmtest"
)

// TestFirstRun runs the config and the program of docs/library.md's "First
// run" as written, against the reference servers the test command
// installs: in a folder laid out as the clone (upstream/ beside mcp.json,
// the program in first/), from a cache of its own, with no model and no
// key. It checks the output against the one the page shows: the same
// servers ready with the same tool counts, get-sum among the tools
// offered within the budget, and the same answer from its call.
func TestFirstRun(t *testing.T) {
	npmtest.Dir(t, "../../upstream/testdata/npm")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "library.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := regexp.MustCompile("(?s)\n## First run: the reference servers\n(.*?)\n## ").FindSubmatch(doc)
	if section == nil {
		t.Fatal(`docs/library.md has no section "## First run: the reference servers"`)
	}
	block := func(lang string) string {
		t.Helper()
		m := regexp.MustCompile("(?s)```" + lang + "\n(.*?)```").FindSubmatch(section[1])
		if m == nil {
			t.Fatalf("the first run has no ```%s block", lang)
		}
		return string(m[1])
	}
	config, program, want := block("json"), block("go"), block("text")

	clone := t.TempDir()
	if err := os.Symlink(filepath.Join(root, "upstream"), filepath.Join(clone, "upstream")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(clone, "first"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(clone, "mcp.json"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	// The program is built as `go run ./first` builds it in the clone: in
	// this module, at first/main.go (an overlay, not written there).
	tmp := t.TempDir()
	src := filepath.Join(tmp, "main.go")
	if err := os.WriteFile(src, []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(root, "first", "main.go"): src}})
	ov := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(ov, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(tmp, "first")
	args := []string{"build", "-overlay", ov, "-o", bin}
	if raceEnabled {
		// Compiled as the test binary is, so that every package comes from
		// the build cache the test command has filled: without -race the
		// program would compile the standard library and every dependency
		// a second time.
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "./first")...)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("the first run's program does not build: %v\n%s", err, out)
	}
	run := exec.Command(bin)
	run.Dir = clone
	run.Env = append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(tmp, "cache"), "HOME="+tmp)
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("the first run failed: %v\n%s", err, out)
	}
	got := string(out)
	t.Logf("output:\n%s", got)

	wantLines := strings.Split(strings.TrimSuffix(want, "\n"), "\n")
	gotLines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(gotLines) < 5 || len(wantLines) < 5 {
		t.Fatalf("the output has %d lines, the page shows %d; want 3 servers, the tools offered and the call", len(gotLines), len(wantLines))
	}
	for i := range 3 { // the servers, their state and tool counts
		if gotLines[i] != wantLines[i] {
			t.Errorf("line %d: %q, the page shows %q", i+1, gotLines[i], wantLines[i])
		}
	}
	offered := regexp.MustCompile(`^offered (\d+) of (\d+) tools, (\d+) of (\d+) tokens:$`)
	g, w := offered.FindStringSubmatch(gotLines[3]), offered.FindStringSubmatch(wantLines[3])
	switch {
	case g == nil || w == nil:
		t.Errorf("line 4: %q, the page shows %q; want both to read %s", gotLines[3], wantLines[3], offered)
	case g[2] != w[2] || g[4] != w[4]:
		t.Errorf("line 4: %q: the catalog differs from the page's %q", gotLines[3], wantLines[3])
	default:
		if tokens, _ := strconv.Atoi(g[3]); tokens > 1000 {
			t.Errorf("line 4: %q: over the program's budget of 1,000 tokens", gotLines[3])
		}
	}
	if !strings.Contains(got, "\n  everything__get-sum ") {
		t.Errorf("everything__get-sum is not offered for the task:\n%s", got)
	}
	if last, wantLast := gotLines[len(gotLines)-1], wantLines[len(wantLines)-1]; last != wantLast {
		t.Errorf("last line %q, the page shows %q", last, wantLast)
	}
}
