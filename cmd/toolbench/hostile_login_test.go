package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostileAS is an MCP server and its authorization server on one loopback
// port, written for the tests of issue 35: its metadata names any
// authorization endpoint, its authorize page answers with any error, its
// token endpoint grants any scope text.
type hostileAS struct {
	*httptest.Server
	authEndpoint string // "" is its own /authorize
	authErr      string // error_description of a refusal ("": grant a code)
	scope        string // the token response's scope
}

func newHostileAS(t *testing.T) *hostileAS {
	h := &hostileAS{}
	mux := http.NewServeMux()
	writeJSON := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, h.URL))
		http.Error(w, "login first", http.StatusUnauthorized)
	})
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"resource": h.URL + "/mcp", "authorization_servers": []string{h.URL}})
	})
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		ep := h.authEndpoint
		if ep == "" {
			ep = h.URL + "/authorize"
		}
		writeJSON(w, map[string]any{
			"issuer": h.URL, "authorization_endpoint": ep, "token_endpoint": h.URL + "/token",
			"registration_endpoint": h.URL + "/register", "response_types_supported": []string{"code"},
			"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"none"},
		})
	})
	mux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"client_id": "c1", "redirect_uris": []string{}})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		back, _ := url.Parse(q.Get("redirect_uri"))
		v := url.Values{"state": {q.Get("state")}}
		if h.authErr != "" {
			v.Set("error", "access_denied\x1b[2J")
			v.Set("error_description", h.authErr)
		} else {
			v.Set("code", "code1")
		}
		back.RawQuery = v.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"access_token": "at1", "token_type": "Bearer", "expires_in": 3600, "scope": h.scope})
	})
	h.Server = httptest.NewServer(mux)
	t.Cleanup(h.Close)
	return h
}

// fakeOpener puts an xdg-open (and open) first on PATH that writes the
// URL it is given to a file, and returns what it wrote.
func fakeOpener(t *testing.T) (opened func() string) {
	dir := t.TempDir()
	log := filepath.Join(dir, "opened.txt")
	script := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"$@\" >> %s\n", log)
	for _, name := range []string{"xdg-open", "open"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() string {
		b, _ := os.ReadFile(log)
		return string(b)
	}
}

// runWithDisplay runs toolbench as loginEnv.run does, with a display, so
// that login opens a browser.
func (l *loginEnv) runWithDisplay(args ...string) (code int, out string) {
	var stdout, stderr bytes.Buffer
	environ := map[string]string{"XDG_CONFIG_HOME": filepath.Join(l.home, ".config"), "DISPLAY": ":35"}
	e := &env{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return environ[k] }}
	code = run(context.Background(), e, args)
	return code, stdout.String() + stderr.String()
}

// TestLoginOpensOnlyWebURLs: an authorization server's metadata that
// names a file:, smb:, ms-msdt: or ssh: URL on a loopback host (which the
// go-sdk lets through) is refused before anything is opened; the error
// names the scheme and the authorization server. (Issue 35 item 1: it was
// handed to xdg-open.)
func TestLoginOpensOnlyWebURLs(t *testing.T) {
	opened := fakeOpener(t)
	as := newHostileAS(t)
	l := newLoginEnv(t, map[string]any{"evil": map[string]any{"url": as.URL + "/mcp"}})
	for _, ep := range []string{
		"file://localhost/etc/passwd",
		"smb://127.0.0.1/share/x.exe",
		"ms-msdt://localhost/id",
		"ssh://localhost/",
	} {
		t.Run(ep, func(t *testing.T) {
			as.authEndpoint = ep
			code, out := l.runWithDisplay("login", "--config", l.config, "--timeout", "5s")
			if got := opened(); got != "" {
				t.Fatalf("the opener was given %q", got)
			}
			scheme, _, _ := strings.Cut(ep, ":")
			wantOutput(t, "login", out, code, 1, "refused to open", fmt.Sprintf("scheme %q", scheme),
				"authorization server "+as.URL)
		})
	}
}

// TestLoginEscapesServerText: the authorization server's error,
// error_description and scope reach the terminal escaped (issue 35 item
// 10).
func TestLoginEscapesServerText(t *testing.T) {
	as := newHostileAS(t)
	l := newLoginEnv(t, map[string]any{"evil": map[string]any{"url": as.URL + "/mcp"}})
	as.authErr = "no\x1b]52;c;cm0gLXJmIH4K\x07 \u202eeulav"
	code, out := l.runLoginPlayingBrowser(t)
	wantOutput(t, "refused login", out, code, 1, `access_denied\x1b[2J: no\x1b]52;c;cm0gLXJmIH4K\x07 \u202eeulav`)
	if strings.ContainsAny(out, "\x1b\x07\u202e") {
		t.Fatalf("raw control characters printed:\n%q", out)
	}
	as.authErr, as.scope = "", "mcp\x1b[2J \u009b31m"
	code, out = l.runLoginPlayingBrowser(t)
	wantOutput(t, "login", out, code, 0, `scopes mcp\x1b[2J \u009b31m`)
	if strings.ContainsAny(out, "\x1b\x07\u009b") {
		t.Fatalf("raw control characters printed:\n%q", out)
	}
}

// runLoginPlayingBrowser runs login --no-browser and follows the URL it
// prints, as loginEnv.login does, and returns the exit code and the output.
func (l *loginEnv) runLoginPlayingBrowser(t *testing.T) (int, string) {
	pr, pw := io.Pipe()
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		defer pw.Close()
		done <- run(context.Background(), l.env(pw, &errb), []string{"login", "--config", l.config, "--no-browser", "--timeout", "20s"})
	}()
	var out strings.Builder
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		line := sc.Text()
		out.WriteString(line + "\n")
		if strings.HasPrefix(line, "http") {
			resp, err := http.Get(line) // the authorize page redirects to login's port
			if err != nil {
				t.Errorf("browser: %v", err)
				continue
			}
			resp.Body.Close()
		}
	}
	return <-done, out.String() + errb.String()
}
