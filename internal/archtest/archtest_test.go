package archtest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const (
	module = "github.com/toolsift/toolsift"
	doc    = "docs/ARCHITECTURE.md"
)

// free are the rows whose "imports (ours)" cell is prose, not a list: the
// command imports whatever it needs, the benchmarks the public API.
var free = map[string]bool{"cmd/toolbench": true, "benchmarks": true}

// row is one line of the package table.
type row struct {
	line    int
	pkg     string   // as go list names it, relative to the module: "tool", "agent/agenttest", "." for the root
	cell    string   // the "imports (ours)" cell as written
	imports []string // the packages it names, in its order
}

// TestImportTable compares the package table of docs/ARCHITECTURE.md with
// the direct imports (of non-test files) of every package of the module,
// as `go list -json ./...` reports them, restricted to the module's own
// packages. Every package needs a row; every row must name exactly the
// packages it imports.
func TestImportTable(t *testing.T) {
	root := filepath.Join("..", "..")
	rows := readTable(t, filepath.Join(root, doc))
	actual := goList(t, root)

	byPkg := map[string]row{}
	for _, r := range rows {
		if prev, ok := byPkg[r.pkg]; ok {
			t.Errorf("%s:%d: a second row for %s (the first is on line %d)", doc, r.line, display(r.pkg), prev.line)
		}
		byPkg[r.pkg] = r
	}
	for _, pkg := range slices.Sorted(maps.Keys(actual)) {
		want := actual[pkg]
		r, ok := byPkg[pkg]
		if !ok {
			name := "`" + display(pkg) + "/`"
			if pkg == "." {
				name = "`toolsift` (root)"
			}
			t.Errorf("%s: package %s has no row in the package table: add\n\t| %s | <what it owns> | %s |",
				doc, display(pkg), name, cellText(want))
			continue
		}
		if free[pkg] {
			continue
		}
		if missing, extra := diff(r.imports, want); len(missing) > 0 || len(extra) > 0 {
			var what []string
			if len(missing) > 0 {
				what = append(what, "it also imports "+cellText(missing))
			}
			if len(extra) > 0 {
				what = append(what, "it does not import "+cellText(extra))
			}
			t.Errorf("%s:%d: row %s says %q but %s: write %s (and keep any note in parentheses)",
				doc, r.line, display(pkg), r.cell, strings.Join(what, " and "), cellText(keepOrder(r.imports, want)))
		}
	}
	for _, r := range rows {
		if _, ok := actual[r.pkg]; !ok {
			t.Errorf("%s:%d: row %s names no package of the module (go list ./... does not list it): remove or rename it", doc, r.line, display(r.pkg))
		}
	}
}

// floorMark begins the paragraph of docs/ARCHITECTURE.md that names the
// floor in its first sentence.
const floorMark = "**The floor**:"

// TestFloor holds the floor of docs/ARCHITECTURE.md to go list: every
// package under internal/ imports (its test files included) only packages
// of the floor, and the other packages of the floor import (outside their
// tests) only packages of the floor, so that nothing under internal/
// stands above a package it does not name.
func TestFloor(t *testing.T) {
	root := filepath.Join("..", "..")
	named := readFloor(t, filepath.Join(root, doc))
	pkgs := goListTests(t, root)
	internal := func(pkg string) bool { return strings.HasPrefix(pkg, "internal/") }
	onFloor := func(pkg string) bool { return internal(pkg) || slices.Contains(named, pkg) }
	floorText := cellText(named) + " and `internal/`"
	for _, name := range named {
		if _, ok := pkgs[name]; !ok {
			t.Errorf("%s: the floor names %s, which go list ./... does not list: remove or rename it", doc, display(name))
		}
	}
	for _, pkg := range slices.Sorted(maps.Keys(pkgs)) {
		p := pkgs[pkg]
		switch {
		case internal(pkg):
			for _, imp := range slices.Concat(p.imports, p.testImports) {
				if !onFloor(imp) {
					t.Errorf("%s imports %s, which is not on the floor (%s, \"The floor\": a package under internal/ imports only %s): "+
						"move %s beside what it serves (a program, or a helper of the commands, under cmd/internal/; a kit of one package's tests beside that package), or drop the import",
						pkg, display(imp), doc, floorText, pkg)
				}
			}
		case onFloor(pkg):
			for _, imp := range p.imports {
				if !onFloor(imp) {
					t.Errorf("%s is on the floor (%s, \"The floor\") but imports %s, which is not, so internal/ would stand above it: "+
						"drop the import, or take %s off the floor and move what under internal/ imports it",
						display(pkg), doc, display(imp), display(pkg))
				}
			}
		}
	}
}

// readFloor returns the packages the floor paragraph names in its first
// sentence, but internal/ (the floor's by definition).
func readFloor(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, text, ok := strings.Cut(string(b), "\n"+floorMark)
	if !ok {
		t.Fatalf("%s: no paragraph begins with %q (the packages that internal/ may import)", doc, floorMark)
	}
	sentence, _, _ := strings.Cut(strings.ReplaceAll(text, "\n", " "), ". ")
	var names []string
	hasInternal := false
	for _, name := range listed(sentence) {
		if name == "internal" {
			hasInternal = true
			continue
		}
		names = append(names, name)
	}
	if !hasInternal || len(names) == 0 {
		t.Fatalf("%s: the sentence after %q should name the floor's packages and `internal/`: %q", doc, floorMark, sentence)
	}
	return names
}

// readTable returns the rows of the table whose header has an
// "imports (ours)" column.
func readTable(t *testing.T, path string) []row {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		rows   []row
		col    = -1
		line   int
		header bool
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(text, "|") {
			if col >= 0 && len(rows) > 0 {
				break // the table ended
			}
			continue
		}
		cells := splitRow(text)
		if col < 0 {
			for i, c := range cells {
				if strings.TrimSpace(c) == "imports (ours)" {
					col, header = i, true
				}
			}
			continue
		}
		if header { // the |---|---| line
			header = false
			continue
		}
		if len(cells) <= col {
			t.Fatalf("%s:%d: a row of the package table with %d cells, want %d", doc, line, len(cells), col+1)
		}
		names := backticked(cells[0])
		if len(names) != 1 {
			t.Fatalf("%s:%d: the first cell %q should name one package in backquotes", doc, line, cells[0])
		}
		pkg := strings.TrimSuffix(names[0], "/")
		if pkg == "toolsift" {
			pkg = "."
		}
		cell := strings.TrimSpace(cells[col])
		rows = append(rows, row{line: line, pkg: pkg, cell: cell, imports: listed(cell)})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no table with an \"imports (ours)\" column", doc)
	}
	return rows
}

// splitRow splits a Markdown table row into cells; "\|" inside a cell is
// not a separator.
func splitRow(text string) []string {
	text = strings.TrimSuffix(strings.TrimPrefix(text, "|"), "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(text); i++ {
		switch {
		case text[i] == '\\' && i+1 < len(text) && text[i+1] == '|':
			cur.WriteByte('|')
			i++
		case text[i] == '|':
			cells = append(cells, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(text[i])
		}
	}
	return append(cells, cur.String())
}

var (
	backquote   = regexp.MustCompile("`([^`]+)`")
	parenthesis = regexp.MustCompile(`\([^)]*\)`)
)

func backticked(s string) []string {
	var out []string
	for _, m := range backquote.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// listed returns the packages an "imports (ours)" cell names: the
// backquoted names outside parentheses ("`tool`, `budget` (never `upstream`)"
// names tool and budget); "—" names none.
func listed(cell string) []string {
	var out []string
	for _, name := range backticked(parenthesis.ReplaceAllString(cell, "")) {
		name = strings.TrimSuffix(name, "/")
		if name == "toolsift" { // the root, as display names it
			name = "."
		}
		out = append(out, name)
	}
	return out
}

// goList returns, for every package of the module, the module's packages
// its non-test files import, relative to the module ("tool",
// "internal/cachefile"; "." for the root package).
func goList(t *testing.T, root string) map[string][]string {
	t.Helper()
	pkgs := map[string][]string{}
	for rel, p := range goListTests(t, root) {
		pkgs[rel] = p.imports
	}
	return pkgs
}

// listedPkg is what goListTests reports of a package: the module's
// packages imported by its non-test files, and by its test files (of the
// package and of its _test package), relative to the module.
type listedPkg struct {
	imports, testImports []string
}

// goListTests returns every package of the module, by its path relative
// to the module.
func goListTests(t *testing.T, root string) map[string]listedPkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -json ./...: %v\n%s", err, stderr.Bytes())
	}
	ours := func(paths ...[]string) []string {
		var rels []string
		for _, imp := range slices.Concat(paths...) {
			if rel, ok := relative(imp); ok && !slices.Contains(rels, rel) {
				rels = append(rels, rel)
			}
		}
		return rels
	}
	pkgs := map[string]listedPkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath                         string
			Imports, TestImports, XTestImports []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list -json ./...: %v", err)
		}
		rel, _ := relative(p.ImportPath)
		pkgs[rel] = listedPkg{imports: ours(p.Imports), testImports: ours(p.TestImports, p.XTestImports)}
	}
	return pkgs
}

// relative returns path relative to the module, "." for the module's root
// package, and whether path is in the module.
func relative(path string) (string, bool) {
	if path == module {
		return ".", true
	}
	rel, ok := strings.CutPrefix(path, module+"/")
	return rel, ok
}

// diff returns the names of want missing from got, and those of got not in
// want.
func diff(got, want []string) (missing, extra []string) {
	for _, w := range want {
		if !slices.Contains(got, w) {
			missing = append(missing, w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			extra = append(extra, g)
		}
	}
	return missing, extra
}

// keepOrder returns want in the order of got for the names got has, the
// others after them in want's (sorted) order: the smallest edit of a row.
func keepOrder(got, want []string) []string {
	var out []string
	for _, g := range got {
		if slices.Contains(want, g) {
			out = append(out, g)
		}
	}
	for _, w := range want {
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// cellText is how the table writes a list of packages.
func cellText(pkgs []string) string {
	if len(pkgs) == 0 {
		return "—"
	}
	var b strings.Builder
	for i, p := range pkgs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "`%s`", display(p))
	}
	return b.String()
}

// display names a package as the table does: "toolsift" for the root.
func display(pkg string) string {
	if pkg == "." {
		return "toolsift"
	}
	return pkg
}

// TestNoSDKInRanking holds ARCHITECTURE's claims about third-party modules:
// the ranking packages compile no HTTP SDK (OpenAI's client and its
// websocket library are reached through provider only), and upstream and
// budget compile neither chromem-go nor openai-go, only agent/anthropicmodel
// compiles anthropic-sdk-go, and agent OpenTelemetry's trace API alone.
func TestNoSDKInRanking(t *testing.T) {
	tests := []struct {
		pkgs      []string
		forbidden []string
	}{
		{[]string{"./toolindex", "./retrieval", "./budget", "./think"}, []string{"github.com/openai/", "websocket"}},
		{[]string{"./upstream", "./budget"}, []string{"github.com/openai/", "github.com/philippgille/chromem-go"}},
		// Anthropic's SDK (and the OpenTelemetry it brings) only in agent/anthropicmodel.
		{[]string{".", "./toolindex", "./retrieval", "./budget", "./think", "./upstream"}, []string{"github.com/anthropics/", "go.opentelemetry.io/"}},
		// agent compiles OpenTelemetry's trace API (Options.Tracer), never
		// its SDK, exporters or protocol.
		{[]string{"./agent"}, []string{"github.com/anthropics/", "go.opentelemetry.io/otel/sdk", "go.opentelemetry.io/otel/exporters",
			"go.opentelemetry.io/contrib", "go.opentelemetry.io/proto", "google.golang.org/grpc"}},
	}
	for _, tt := range tests {
		args := append([]string{"list", "-deps"}, tt.pkgs...)
		cmd := exec.Command("go", args...)
		cmd.Dir = filepath.Join("..", "..")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
		}
		for dep := range strings.Lines(string(out)) {
			dep = strings.TrimSpace(dep)
			for _, f := range tt.forbidden {
				if strings.Contains(dep, f) {
					t.Errorf("go %s lists %s: %s must not depend on it (%s)", strings.Join(args, " "), dep, strings.Join(tt.pkgs, " "), doc)
				}
			}
		}
	}
}

// TestNoNameClash: no package of the module has the name of a package it
// imports (in its files or its tests), so that no file has to rename an
// import to tell the two apart.
func TestNoNameClash(t *testing.T) {
	root := filepath.Join("..", "..")
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
		}
		return string(out)
	}
	type pkg struct {
		path, name string
		imports    []string
	}
	var pkgs []pkg
	deps := map[string]bool{}
	for line := range strings.Lines(run("list", "-f", "{{.ImportPath}}\t{{.Name}}\t{{join .Imports \" \"}} {{join .TestImports \" \"}} {{join .XTestImports \" \"}}", "./...")) {
		f := strings.SplitN(strings.TrimSpace(line), "\t", 3)
		if len(f) < 2 {
			continue
		}
		p := pkg{path: f[0], name: f[1]}
		if len(f) == 3 {
			p.imports = strings.Fields(f[2])
		}
		for _, imp := range p.imports {
			deps[imp] = true
		}
		pkgs = append(pkgs, p)
	}
	names := map[string]string{}
	for line := range strings.Lines(run(append([]string{"list", "-f", "{{.ImportPath}}\t{{.Name}}"}, slices.Sorted(maps.Keys(deps))...)...)) {
		if path, name, ok := strings.Cut(strings.TrimSpace(line), "\t"); ok {
			names[path] = name
		}
	}
	for _, p := range pkgs {
		for _, imp := range slices.Compact(slices.Sorted(slices.Values(p.imports))) {
			if imp != p.path && names[imp] == p.name {
				t.Errorf("package %s (%s) imports %s, also named %s: rename ours", p.name, p.path, imp, p.name)
			}
		}
	}
}
