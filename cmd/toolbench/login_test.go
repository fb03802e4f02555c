package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/internal/npmtest"
	"github.com/toolsift/toolsift/internal/oauthtest"
	"github.com/toolsift/toolsift/internal/testenv"
)

// startTSOAuth runs the TypeScript SDK's example server with its own
// authorization server (dynamic registration, strict resource checks) on
// two loopback ports; script is simpleStreamableHttp.js ("") or a wrapper,
// which finds the SDK in $TS_SDK.
func startTSOAuth(t *testing.T, script string) *npmtest.TSOAuth {
	t.Helper()
	npm := npmtest.Dir(t, "../../upstream/testdata/npm")
	sdk := filepath.Join(npm, "node_modules", "@modelcontextprotocol", "sdk")
	if script == "" {
		return npmtest.StartTSOAuth(t, sdk, "--oauth-strict")
	}
	return npmtest.StartTSOAuthScript(t, script, []string{"TS_SDK=" + sdk}, "--oauth-strict")
}

// loginEnv runs toolbench commands in-process as separate processes
// would: each run has its own login store over the same folder (its
// XDG_CONFIG_HOME), and no display.
type loginEnv struct {
	t      *testing.T
	home   string
	config string
}

func newLoginEnv(t *testing.T, servers map[string]any) *loginEnv {
	dir := t.TempDir()
	config := filepath.Join(dir, "mcp.json")
	data, _ := json.Marshal(map[string]any{"mcpServers": servers})
	if err := os.WriteFile(config, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return &loginEnv{t: t, home: filepath.Join(dir, "home"), config: config}
}

func (l *loginEnv) env(stdout, stderr io.Writer) *env {
	environ := map[string]string{"XDG_CONFIG_HOME": filepath.Join(l.home, ".config")}
	return &env{stdout: stdout, stderr: stderr, getenv: func(k string) string { return environ[k] }}
}

func (l *loginEnv) run(args ...string) (code int, stdout, stderr string) {
	l.t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), l.env(&out, &errb), args)
	return code, out.String(), errb.String()
}

func (l *loginEnv) list() (int, string) {
	l.t.Helper()
	code, stdout, stderr := l.run("list", "--config", l.config, "--no-cache", "--quiet", "--timeout", testenv.WaitLimit().String())
	return code, stdout + stderr
}

// login runs toolbench login --no-browser and plays the browser: it
// follows the URL printed on a line of its own.
func (l *loginEnv) login(servers ...string) string {
	t := l.t
	t.Helper()
	pr, pw := io.Pipe()
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		defer pw.Close()
		done <- run(context.Background(), l.env(pw, &errb), append([]string{"login", "--config", l.config, "--no-browser", "--timeout", testenv.WaitLimit().String()}, servers...))
	}()
	var out strings.Builder
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		line := sc.Text()
		out.WriteString(line + "\n")
		if strings.HasPrefix(line, "http") {
			if err := oauthtest.Browse(line); err != nil {
				t.Errorf("browser: %v", err)
			}
		}
	}
	if code := <-done; code != 0 {
		t.Fatalf("login: exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	return out.String() + errb.String()
}

// tokenFile returns the one file of stored logins.
func (l *loginEnv) tokenFile() string {
	l.t.Helper()
	files, _ := filepath.Glob(filepath.Join(l.home, ".config", "toolsift", "oauth", "*.json"))
	if len(files) != 1 {
		l.t.Fatalf("token files %v, want 1", files)
	}
	return files[0]
}

// expireHere makes the stored access token expired, as an hour passing
// would.
func (l *loginEnv) expireHere() {
	l.t.Helper()
	file := l.tokenFile()
	data, err := os.ReadFile(file)
	if err != nil {
		l.t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(data, &rec); err != nil {
		l.t.Fatal(err)
	}
	rec["expiry"] = time.Now().Add(-time.Minute).Format(time.RFC3339)
	data, _ = json.Marshal(rec)
	if err := os.WriteFile(file, data, 0o600); err != nil {
		l.t.Fatal(err)
	}
}

func wantOutput(t *testing.T, what, out string, code, wantCode int, wants ...string) {
	t.Helper()
	if code != wantCode {
		t.Fatalf("%s: exit %d, want %d:\n%s", what, code, wantCode, out)
	}
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Fatalf("%s: output lacks %q:\n%s", what, w, out)
		}
	}
}

// TestLoginTypeScriptServer is issue 20's acceptance test, against the
// TypeScript SDK's OAuth example server as it ships.
func TestLoginTypeScriptServer(t *testing.T) {
	ts := startTSOAuth(t, "")
	l := newLoginEnv(t, map[string]any{"ts": map[string]any{"url": ts.URL()}})
	loginCmd := "toolbench login --config " + l.config + " ts"

	code, out := l.list()
	wantOutput(t, "list before login", out, code, 1, `server "ts" needs a login: not logged in; log in with: `+loginCmd)

	out = l.login()
	wantOutput(t, "login", out, 0, 0, "Open this URL in a browser to log in to ts:",
		fmt.Sprintf("ts: logged in at http://localhost:%d/ (scopes mcp:tools; expires in 1h0m0s, then log in again)", ts.AuthPort))
	if fi, err := os.Stat(l.tokenFile()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v, want mode 0600", fi.Mode(), err)
	}

	for _, what := range []string{"list after login", "list in a second process"} {
		code, out = l.list()
		wantOutput(t, what, out, code, 0, "1 servers: 1 ok, 0 failed; 7 tools")
	}

	// The demo provider issues no refresh tokens: an expired token asks
	// for a login, before any request.
	saved, _ := os.ReadFile(l.tokenFile())
	l.expireHere()
	code, out = l.list()
	wantOutput(t, "list with an expired token", out, code, 1,
		`server "ts": the access token expired and the authorization server gave no refresh token; log in again: `+loginCmd)
	os.WriteFile(l.tokenFile(), saved, 0o600)

	// A restarted demo server has forgotten every client and token. (It
	// answers an unknown token with 500, not 401: its verifier throws a
	// plain Error, which its bearerAuth turns into a server error; so
	// revocation on this stack is tested at refresh, in
	// TestLoginTypeScriptRefresh.) A new login registers again.
	ts.Restart()
	l.login("ts")
	code, out = l.list()
	wantOutput(t, "list after logging in again", out, code, 0, "1 servers: 1 ok")

	code, stdout, stderr := l.run("logout", "--config", l.config)
	wantOutput(t, "logout", stdout+stderr, code, 0, "ts: logged out")
	code, out = l.list()
	wantOutput(t, "list after logout", out, code, 1, "not logged in; log in with: "+loginCmd)
}

// TestLoginTypeScriptRefresh: the same server with refresh tokens (its
// demo provider's refresh grant filled in by testdata/ts-oauth-refresh.mjs):
// an expired access token is refreshed at the SDK's token endpoint, with
// the resource parameter its strict mode checks.
func TestLoginTypeScriptRefresh(t *testing.T) {
	script, _ := filepath.Abs("testdata/ts-oauth-refresh.mjs")
	ts := startTSOAuth(t, script)
	l := newLoginEnv(t, map[string]any{"ts": map[string]any{"url": ts.URL()}})

	out := l.login()
	wantOutput(t, "login", out, 0, 0, "ts: logged in at", "refreshed when it expires")
	before, _ := os.ReadFile(l.tokenFile())
	l.expireHere()
	code, out := l.list()
	wantOutput(t, "list with an expired token", out, code, 0, "1 servers: 1 ok, 0 failed; 7 tools")
	after, _ := os.ReadFile(l.tokenFile())
	var b, a struct {
		Access  string    `json:"access_token"`
		Refresh string    `json:"refresh_token"`
		Expiry  time.Time `json:"expiry"`
	}
	json.Unmarshal(before, &b)
	json.Unmarshal(after, &a)
	if a.Access == b.Access || a.Refresh == b.Refresh || a.Refresh == "" || !a.Expiry.After(time.Now()) {
		t.Fatalf("tokens were not refreshed and rotated: before %+v after %+v", b, a)
	}

	// Revoked: the restarted server knows neither the client nor the
	// refresh token.
	ts.Restart()
	l.expireHere()
	code, out = l.list()
	wantOutput(t, "list with a revoked refresh token", out, code, 1,
		"the stored login expired or was revoked (invalid_client); log in again: toolbench login --config "+l.config+" ts")
}

// TestLoginGoServer runs the same commands against an authorization server
// written in Go (oauthtest), which refreshes and rotates tokens.
func TestLoginGoServer(t *testing.T) {
	srv := oauthtest.New(notesHandler(), nil)
	defer srv.Close()
	l := newLoginEnv(t, map[string]any{"notes": map[string]any{"url": srv.URL}, "other": map[string]any{"url": srv.URL + "?x=1", "disabled": true}})
	loginCmd := "toolbench login --config " + l.config + " notes"

	code, out := l.list()
	wantOutput(t, "list before login", out, code, 1, `server "notes" needs a login: not logged in; log in with: `+loginCmd)
	out = l.login()
	wantOutput(t, "login", out, 0, 0, "notes: logged in at "+srv.AS.URL+" (scopes mcp:tools offline_access; refreshed when it expires)")
	code, out = l.list()
	wantOutput(t, "list after login", out, code, 0, "1 ok")
	srv.ExpireAccessTokens()
	code, out = l.list()
	wantOutput(t, "list after the server expired the token", out, code, 0, "1 ok")
	if c := srv.Counts(); c.Refreshes != 1 {
		t.Fatalf("counts %+v, want 1 refresh", c)
	}
	srv.Revoke()
	code, out = l.list()
	wantOutput(t, "list after a revocation", out, code, 1, "the stored login expired or was revoked (invalid_grant); log in again: "+loginCmd)

	code, stdout, stderr := l.run("login", "--config", l.config, "nope")
	wantOutput(t, "login to an unknown server", stdout+stderr, code, 1, "has no server \"nope\"")
	code, stdout, stderr = l.run("login")
	wantOutput(t, "login without --config", stdout+stderr, code, 2, "toolbench login: --config is required")
}

// notesHandler serves a go-sdk MCP server with one tool.
func notesHandler() http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "read_notes", Description: "Read the notes.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "notes"}}}, nil
		})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
}
