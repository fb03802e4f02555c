package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
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

	"github.com/toolsift/toolsift/internal/oauthtest"
	"github.com/toolsift/toolsift/internal/testenv"
)

// TestServePerUserFlags: --per-user is refused without what it needs,
// each refusal naming the flag or variable at fault (and never the key).
func TestServePerUserFlags(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(config, []byte(`{"mcpServers": {"remote": {"type": "http", "url": "http://127.0.0.1:1/mcp"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	short := base64.StdEncoding.EncodeToString([]byte("sixteen byte key"))
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte(short+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	listen := []string{"--listen", "127.0.0.1:0"}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"no listen", []string{"--per-user", "remote"}, nil, "--per-user needs --listen"},
		{"no public url", append([]string{"--per-user", "remote"}, listen...), nil, "--per-user needs --public-url"},
		{"no key", append([]string{"--per-user", "remote", "--public-url", "https://gw.example.com"}, listen...), nil, "set $TOOLSIFT_LOGIN_KEY or --login-key-file"},
		{"short key", append([]string{"--per-user", "remote", "--public-url", "https://gw.example.com"}, listen...), map[string]string{loginKeyEnv: short}, "$TOOLSIFT_LOGIN_KEY: want 32 bytes"},
		{"short key file", append([]string{"--per-user", "remote", "--public-url", "https://gw.example.com", "--login-key-file", keyFile}, listen...), nil, "--login-key-file " + keyFile + ": want 32 bytes"},
		{"public url alone", append([]string{"--public-url", "https://gw.example.com"}, listen...), nil, "--public-url and --login-key-file need --per-user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr strings.Builder
			e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: &stderr, getenv: func(k string) string {
				if k == "XDG_CONFIG_HOME" {
					return filepath.Join(dir, "xdg")
				}
				return tc.env[k]
			}}
			code := run(context.Background(), e, append([]string{"serve", "--config", config, "--no-cache"}, tc.args...))
			if code == 0 || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant it to say %q", code, stderr.String(), tc.want)
			}
			if strings.Contains(stderr.String(), short) {
				t.Errorf("stderr shows the key:\n%s", stderr.String())
			}
		})
	}
}

// TestServePerUser: toolsift serve --per-user serves the login pages
// beside /mcp; the key comes from $TOOLSIFT_LOGIN_KEY in hex or base64,
// and the logins are kept sealed in the config folder's store.
func TestServePerUser(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "read_notes", Description: "Read the notes."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "notes"}}}, nil, nil
		})
	as := oauthtest.New(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true}), nil)
	defer as.Close()
	dir := t.TempDir()
	config := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(config, fmt.Appendf(nil, `{"mcpServers": {"notes": {"type": "http", "url": %q}}}`, as.URL), 0o600); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	rand.Read(key)
	for _, text := range []string{hex.EncodeToString(key), base64.StdEncoding.EncodeToString(key)} {
		ctx, cancel := context.WithCancel(context.Background())
		var log testenv.Buffer
		e := &env{
			stdin: strings.NewReader(""), stdout: &log, stderr: &log,
			getenv: func(k string) string {
				return map[string]string{loginKeyEnv: text, "XDG_CONFIG_HOME": filepath.Join(dir, "xdg")}[k]
			},
		}
		addr, done := startServe(ctx, t, e, &log, "serve", "--config", config, "--no-cache", "--listen", "127.0.0.1:0",
			"--per-user", "notes", "--public-url", "https://gw.example.com")
		base := "http://" + addr
		// The login page is there, and wants to know who logs in.
		resp, err := http.Get(base + "/login/notes")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "Who are you?") {
			t.Errorf("GET /login/notes: %s %s, want 401 asking who", resp.Status, body)
		}
		// Nobody has logged in to notes: /readyz counts it as awaiting its
		// first login, not as failed, once the shared Hub has tried it.
		for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
			code, h := probe(t, base+"/readyz")
			if h.Connecting > 0 && time.Since(start) < testenv.WaitLimit() {
				continue
			}
			if code != http.StatusOK || !h.Ready || h.Servers != 1 || h.Login != 1 || h.Failed != 0 {
				t.Errorf("GET /readyz before any login: %d %+v, want 200, ready, 1 server awaiting its first login, none failed", code, h)
			}
			break
		}
		if resp, err := http.Get(base + "/login/other"); err != nil || resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET /login/other: %v %v, want 404", resp.Status, err)
		} else {
			resp.Body.Close()
		}
		cancel()
		if code := <-done; code != 0 {
			t.Fatalf("serve ended with %d:\n%s", code, log.String())
		}
		if strings.Contains(log.String(), text) {
			t.Errorf("the log shows the key:\n%s", log.String())
		}
	}
}

// probe is GET url's status and JSON body.
func probe(t *testing.T, url string) (int, health) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var h health
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatalf("GET %s: %d %q: %v", url, resp.StatusCode, b, err)
	}
	return resp.StatusCode, h
}
