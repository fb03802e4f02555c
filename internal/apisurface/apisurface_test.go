// Package apisurface holds the module's public API to a reviewed list: the
// exported identifiers of every importable package (top-level constants,
// variables, types and functions, and the methods of exported types; not
// struct fields), in testdata/exported.txt. A change to the API fails the
// test until the list is regenerated with
//
//	go test ./internal/apisurface -update
//
// so that the diff shows the change in review. The count it prints is the
// one docs and issues quote ("exported identifiers").
package apisurface

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/exported.txt from the source")

// exported returns "package.Name" and "package.Type.Method" for every
// exported identifier of the module's importable packages under root
// (internal/, cmd/, testdata and main packages excluded), sorted.
func exported(root string) ([]string, error) {
	var out []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch n := d.Name(); {
			case p == root:
			case n == "internal", n == "cmd", n == "testdata", n == "node_modules", strings.HasPrefix(n, "."):
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil
		}
		pkg, _ := filepath.Rel(root, filepath.Dir(p))
		if pkg == "." {
			pkg = "toolsift"
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					out = append(out, pkg+"."+d.Name.Name)
					continue
				}
				if recv := receiver(d.Recv.List[0].Type); ast.IsExported(recv) {
					out = append(out, pkg+"."+recv+"."+d.Name.Name)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							out = append(out, pkg+"."+s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								out = append(out, pkg+"."+n.Name)
							}
						}
					}
				}
			}
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}

// receiver returns the name of a method's receiver type.
func receiver(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

func TestExportedAPI(t *testing.T) {
	got, err := exported(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d exported identifiers", len(got))
	golden := filepath.Join("testdata", "exported.txt")
	if *update {
		if err := os.WriteFile(golden, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Fields(string(b))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the public API changed (-reviewed +now): if this is meant, run `go test ./internal/apisurface -update` and review the diff of %s\n%s", golden, diff)
	}
	if testing.Verbose() {
		perPkg := map[string]int{}
		for _, id := range got {
			perPkg[id[:strings.Index(id, ".")]]++
		}
		for _, p := range slices.Sorted(maps.Keys(perPkg)) {
			t.Logf("%-18s %3d", p, perPkg[p])
		}
	}
}
