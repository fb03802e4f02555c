package gateway_test

// This file is a Go program's use of the gateway without the go-sdk: it
// must not import it (TestPublicAPINamesNoSDK checks), and its clients
// speak JSON-RPC by hand.

import (
	"bufio"
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store"
)

const sdkPath = "github.com/modelcontextprotocol/go-sdk"

// noSDKPackages are the folders, from here, of the packages whose API names
// no go-sdk type. Not audit: its Log is a go-sdk receiving middleware, whose
// type is the SDK's.
var noSDKPackages = []string{".", "authn", "peruser"}

// TestWithoutSDK mounts the gateway's handler on a mux behind
// LimitListener and serves stdio, both driven by hand-written JSON-RPC.
func TestWithoutSDK(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testenv.WaitLimit())
	defer cancel()
	gw, err := gateway.Open(ctx, localTools(t), &gateway.Options{
		Toolset: toolsift.Options{NoSemantic: true, Store: store.NewMemory(), Pin: []string{"math__add"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	if got := gw.Pinned(); len(got) != 1 || got[0] != "math__add" {
		t.Errorf("Pinned() = %q, want [math__add]", got)
	}
	if len(gw.Toolset().Tools()) != 8 {
		t.Errorf("Toolset().Tools() has %d tools, want 8", len(gw.Toolset().Tools()))
	}

	t.Run("http", func(t *testing.T) {
		mux := http.NewServeMux()
		mux.Handle("/mcp", authn.Require(authn.SharedToken("tok"), nil)(gw.Handler()))
		srv := httptest.NewUnstartedServer(mux)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv.Listener = gateway.LimitListener(ln, 8, 0)
		srv.Start()
		defer srv.Close()

		post := func(session, token, body string) (*http.Response, string) {
			t.Helper()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			if session != "" {
				req.Header.Set("Mcp-Session-Id", session)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			// A JSON answer, or SSE events whose data is one.
			for line := range strings.SplitSeq(string(b), "\n") {
				if d, ok := strings.CutPrefix(line, "data: "); ok {
					return resp, d
				}
			}
			return resp, string(b)
		}
		if resp, _ := post("", "", initialize); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("no token: %s, want 401", resp.Status)
		}
		resp, _ := post("", "tok", initialize)
		session := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != http.StatusOK || session == "" {
			t.Fatalf("initialize: %s, session %q", resp.Status, session)
		}
		post(session, "tok", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		if resp, _ := post(session, "other", searchCall); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("another token: %s, want 401", resp.Status)
		}
		_, answer := post(session, "tok", searchCall)
		if got := foundNames(t, answer); len(got) == 0 || got[0] != "weather__get_forecast" {
			t.Errorf("search_tools over HTTP found %q, want weather__get_forecast first; answer %s", got, answer)
		}
	})

	t.Run("stdio", func(t *testing.T) {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		done := make(chan error, 1)
		go func() { done <- gw.ServeStdio(ctx, inR, outW); outW.Close() }()
		go func() {
			for _, m := range []string{initialize, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, searchCall} {
				io.WriteString(inW, m+"\n")
			}
		}()
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		var answer string
		for answer == "" && sc.Scan() {
			if strings.Contains(sc.Text(), `"id":2`) {
				answer = sc.Text()
			}
		}
		if got := foundNames(t, answer); len(got) == 0 || got[0] != "weather__get_forecast" {
			t.Errorf("search_tools over stdio found %q, want weather__get_forecast first; answer %s", got, answer)
		}
		// The client's input ends: a normal end.
		inW.Close()
		go io.Copy(io.Discard, outR)
		if err := <-done; err != nil {
			t.Errorf("ServeStdio after the input ended: %v, want nil", err)
		}
	})
}

const (
	initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"by-hand","version":"1"}}}`
	searchCall = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"weather forecast for a city"}}}`
)

// foundNames are the tools of a search_tools answer (a JSON-RPC response).
func foundNames(t *testing.T, response string) []string {
	t.Helper()
	var msg struct {
		Result struct {
			StructuredContent struct{ Tools []struct{ Name string } }
		}
	}
	if err := json.Unmarshal([]byte(response), &msg); err != nil {
		t.Fatalf("answer %q: %v", response, err)
	}
	var names []string
	for _, tl := range msg.Result.StructuredContent.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// TestPublicAPINamesNoSDK: no exported declaration of the package, nor of
// the packages a program puts around it (authn, peruser), names a go-sdk type
// (house style: convert at the boundary), and this file, a program using
// the gateway, imports no go-sdk package.
func TestPublicAPINamesNoSDK(t *testing.T) {
	fset := token.NewFileSet()
	self, err := parser.ParseFile(fset, "nosdk_test.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range self.Imports {
		if p, _ := strconv.Unquote(im.Path.Value); strings.HasPrefix(p, sdkPath) {
			t.Errorf("nosdk_test.go imports %s", p)
		}
	}
	var files []string
	for _, dir := range noSDKPackages {
		fs, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, fs...)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		sdkNames := map[string]bool{}
		for _, im := range f.Imports {
			if p, _ := strconv.Unquote(im.Path.Value); strings.HasPrefix(p, sdkPath) {
				n := filepath.Base(p)
				if im.Name != nil {
					n = im.Name.Name
				}
				sdkNames[n] = true
			}
		}
		if len(sdkNames) == 0 {
			continue
		}
		// The parts of an exported declaration a user sees: a function's
		// or an exported type's method's signature, an exported type's
		// definition (unexported fields aside), an exported var or const.
		var public []ast.Node
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv != nil {
					recv := d.Recv.List[0].Type
					if st, ok := recv.(*ast.StarExpr); ok {
						recv = st.X
					}
					if id, ok := recv.(*ast.Ident); !ok || !id.IsExported() {
						continue
					}
				}
				public = append(public, d.Type)
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					switch sp := sp.(type) {
					case *ast.TypeSpec:
						if !sp.Name.IsExported() {
							continue
						}
						if st, ok := sp.Type.(*ast.StructType); ok {
							for _, fld := range st.Fields.List {
								if len(fld.Names) == 0 || fld.Names[0].IsExported() {
									public = append(public, fld.Type)
								}
							}
							continue
						}
						public = append(public, sp.Type)
					case *ast.ValueSpec:
						for i, n := range sp.Names {
							if n.IsExported() {
								if sp.Type != nil {
									public = append(public, sp.Type)
								}
								if i < len(sp.Values) {
									public = append(public, sp.Values[i])
								}
							}
						}
					}
				}
			}
		}
		for _, n := range public {
			ast.Inspect(n, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && sdkNames[id.Name] {
						t.Errorf("%s: the public API names %s.%s", fset.Position(sel.Pos()), id.Name, sel.Sel.Name)
					}
				}
				return true
			})
		}
	}
}
