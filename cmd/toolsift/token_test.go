package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/gateway/audit"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/internal/testenv"
)

// runCmd runs the command in-process and returns its exit code, stdout
// and stderr.
func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr strings.Builder
	e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }}
	code := run(context.Background(), e, args)
	return code, stdout.String(), stderr.String()
}

// TestTokenCommands: create prints the secret once on stdout and how to
// use it on stderr; list shows the token without its secret; revoke ends
// it; bad arguments get clear errors.
func TestTokenCommands(t *testing.T) {
	dir := t.TempDir()
	code, secret, stderr := runCmd(t, "token", "create", "--user", "alice", "--team", "eng,ops", "--name", "laptop", "--store", dir)
	if code != 0 {
		t.Fatalf("token create: exit %d: %s", code, stderr)
	}
	secret = strings.TrimSpace(secret)
	if !strings.HasPrefix(secret, authn.TokenPrefix) || strings.Contains(secret, "\n") {
		t.Fatalf("token create printed %q, want the secret alone", secret)
	}
	id := secret[len(authn.TokenPrefix) : len(authn.TokenPrefix)+12]
	for _, want := range []string{"Token " + id + " for alice", "Authorization: Bearer tsk_...", "--tokens", "toolsift token revoke " + id} {
		if !strings.Contains(stderr, want) {
			t.Errorf("token create's stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, secret) {
		t.Errorf("the secret printed twice:\n%s", stderr)
	}

	code, out, stderr := runCmd(t, "token", "list", "--store", dir)
	if code != 0 {
		t.Fatalf("token list: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"ID", "USER", id, "alice", "eng,ops", "laptop"} {
		if !strings.Contains(out, want) {
			t.Errorf("token list lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCmd(t, "token", "list", "--json", "--store", dir)
	var tok authn.Token
	if err := json.Unmarshal([]byte(out), &tok); code != 0 || err != nil || tok.ID != id || tok.User != "alice" {
		t.Errorf("token list --json: exit %d, %q (%v)", code, out, err)
	}
	if strings.Contains(out, secret[len(secret)-43:]) {
		t.Errorf("token list shows the secret:\n%s", out)
	}

	if code, _, stderr := runCmd(t, "token", "revoke", id, "--store", dir); code != 0 || !strings.Contains(stderr, "within a second") {
		t.Fatalf("token revoke: exit %d: %s", code, stderr)
	}
	if code, out, stderr := runCmd(t, "token", "list", "--store", dir); code != 0 || out != "" || !strings.Contains(stderr, "No tokens") {
		t.Errorf("token list after revoke: exit %d, %q, %q", code, out, stderr)
	}

	for _, c := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"token", "revoke", id, "--store", dir}, 1, "no token has id " + id},
		{[]string{"token", "revoke", "laptop", "--store", dir}, 1, `"laptop" is not a token id`},
		{[]string{"token", "revoke", "--store", dir}, 2, "which token? Give its ID"},
		{[]string{"token", "create", "--store", dir}, 2, "--user is required"},
		{[]string{"token", "create", "--user", "", "--store", dir}, 2, "--user is required"},
		{[]string{"token", "create", "--user", "alice smith", "--store", dir}, 1, `user "alice smith": byte ' ' is not allowed`},
		{[]string{"token", "create", "--user", "alice", "--team", "a/b", "--store", dir}, 1, `team "a/b"`},
		{[]string{"token", "create", "--user", "alice", "--bogus"}, 2, "unknown flag --bogus"},
		{[]string{"token"}, 2, "toolsift token create --user NAME"},
		{[]string{"token", "mint"}, 2, `unknown command "mint"`},
		{[]string{"audit", "--since", "yesterday", "--store", dir}, 2, `--since "yesterday": want a duration (24h, 90m) or a time`},
		{[]string{"audit", "--since", "-5m", "--store", dir}, 2, "want a positive duration"},
		{[]string{"audit", "--json=maybe"}, 2, `--json: "maybe" is not true or false`},
		{[]string{"audit", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"serve", "--config", "x.json", "--tokens"}, 2, "--tokens and --oidc-issuer need --listen"},
		{[]string{"serve", "--config", "x.json", "--listen", "127.0.0.1:0", "--oidc-issuer", "https://idp.example.com"}, 2, "--oidc-issuer needs --oidc-audience"},
		{[]string{"serve", "--config", "x.json", "--listen", "127.0.0.1:0", "--oidc-audience", "toolsift"}, 2, "--oidc-audience needs --oidc-issuer"},
		{[]string{"serve", "--config", "x.json", "--listen", "127.0.0.1:0", "--oidc-issuer", "http://idp.example.com", "--oidc-audience", "a"}, 1, "want an https URL"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, _, stderr := runCmd(t, c.args...)
			if code != c.code || !strings.Contains(stderr, c.stderr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, c.code, c.stderr)
			}
		})
	}
	// A shared token and --tokens: one or the other.
	var stderr2 strings.Builder
	e := &env{stdin: strings.NewReader(""), stdout: &strings.Builder{}, stderr: &stderr2, getenv: func(k string) string {
		return map[string]string{tokenEnv: "shared"}[k]
	}}
	if code := run(context.Background(), e, []string{"serve", "--config", "x.json", "--listen", "127.0.0.1:0", "--tokens"}); code != 2 || !strings.Contains(stderr2.String(), "choose one") {
		t.Errorf("serve --tokens with $%s: exit %d, %s", tokenEnv, code, stderr2.String())
	}
}

// TestServeTokensAndAudit: serve --listen --tokens --audit over the store
// toolsift token writes: alice's and bob's calls are theirs in the log and
// in the audit log, a request without a token gets 401, a revoked token
// stops working, and toolsift audit prints and filters the records. No
// secret reaches the log.
func TestServeTokensAndAudit(t *testing.T) {
	cache := t.TempDir()
	secrets := map[string]string{}
	for _, user := range []string{"alice", "bob"} {
		code, out, stderr := runCmd(t, "token", "create", "--user", user, "--team", "eng", "--store", cache)
		if code != 0 {
			t.Fatalf("token create: exit %d: %s", code, stderr)
		}
		secrets[user] = strings.TrimSpace(out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), testenv.WaitLimit())
	defer cancel()
	serveCtx, stop := context.WithCancel(ctx)
	defer stop()
	logs := &logWatch{wrote: make(chan struct{}, 1)}
	e := &env{stdin: strings.NewReader(""), stdout: &strings.Builder{}, stderr: logs, getenv: func(string) string { return "" }}
	addr, done := startServe(serveCtx, t, e, logs, "serve", "--config", upstreamConfig(t, "1"), "--store", cache,
		"--listen", "127.0.0.1:0", "--tokens", "--audit", "--connect-timeout", testenv.WaitLimit().String())
	url := "http://" + addr + "/mcp"
	logs.waitFor(t, `msg="server ready" server=up`, ctx.Done())

	connect := func(user string) *mcp.ClientSession {
		t.Helper()
		hc := &http.Client{Transport: bearer{secrets[user], http.DefaultTransport}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
		if err != nil {
			t.Fatalf("%s connects: %v\n%s", user, err, logs.String())
		}
		return cs
	}
	for _, user := range []string{"alice", "bob"} {
		cs := connect(user)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "up__lookup", "arguments": map[string]any{"word": "secret-argument"}}})
		if err != nil || res.IsError {
			t.Fatalf("%s's call: %v %+v\n%s", user, err, res, logs.String())
		}
		cs.Close()
	}
	resp, err := http.Post(url, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a request without a token: %s, want 401", resp.Status)
	}
	if !strings.Contains(string(body), "toolsift token create") {
		t.Errorf("the 401 does not say how to get a token: %s", body)
	}

	// Revoked by the command, refused by the running serve (within
	// authn.TokenCacheTTL; the hang guard is the only limit here).
	if code, _, stderr := runCmd(t, "token", "revoke", secrets["bob"][:16], "--store", cache); code != 0 {
		t.Fatalf("token revoke: exit %d: %s", code, stderr)
	}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+secrets["bob"])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("bob's token never refused: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusUnauthorized {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	if code := <-done; code != 0 {
		t.Errorf("serve: exit %d\n%s", code, logs.String())
	}

	log := logs.String()
	for _, user := range []string{"alice", "bob"} {
		if !strings.Contains(log, "user="+user+" ") || !strings.Contains(log, "msg=call user="+user) {
			t.Errorf("no call line of %s:\n%s", user, log)
		}
		if strings.Contains(log, secrets[user][16:]) {
			t.Errorf("the log holds %s's token:\n%s", user, log)
		}
	}
	if strings.Contains(log, "secret-argument") {
		t.Errorf("the log holds the call's arguments:\n%s", log)
	}

	code, out, stderr := runCmd(t, "audit", "--store", cache)
	if code != 0 {
		t.Fatalf("audit: exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "USER") || !strings.Contains(lines[1], "alice") || !strings.Contains(lines[2], "bob") {
		t.Fatalf("audit printed:\n%s\nwant a header, alice's call, bob's call", out)
	}
	for _, l := range lines[1:] {
		for _, want := range []string{"eng", " up ", "up__lookup", " ok "} {
			if !strings.Contains(l, want) {
				t.Errorf("audit line lacks %q: %s", want, l)
			}
		}
	}
	for _, c := range []struct {
		args  []string
		users []string
	}{
		{[]string{"--user", "alice"}, []string{"alice"}},
		{[]string{"--user", "carol"}, nil},
		{[]string{"--server", "up", "--since", "1h"}, []string{"alice", "bob"}},
		{[]string{"--server", "down"}, nil},
		{[]string{"--since", "2099-01-01"}, nil},
		{[]string{"--since", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}, []string{"alice", "bob"}},
	} {
		code, out, stderr := runCmd(t, append([]string{"audit", "--json", "--store", cache}, c.args...)...)
		if code != 0 {
			t.Fatalf("audit %q: exit %d: %s", c.args, code, stderr)
		}
		var users []string
		for l := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
			if l == "" {
				continue
			}
			var rec audit.Record
			if err := json.Unmarshal([]byte(l), &rec); err != nil {
				t.Fatalf("audit --json line %q: %v", l, err)
			}
			users = append(users, rec.User)
		}
		if strings.Join(users, ",") != strings.Join(c.users, ",") {
			t.Errorf("audit %q: users %v, want %v", c.args, users, c.users)
		}
	}
	if _, out, stderr := runCmd(t, "audit", "--user", "carol", "--store", cache); out != "" || !strings.Contains(stderr, "No audit records") {
		t.Errorf("audit --user carol: %q, %q", out, stderr)
	}
}

// TestAuditSurvivesKill: a serve process killed (SIGKILL) while calls are
// in flight has written the audit record of every call whose result a
// client got: records are written before results are returned.
func TestAuditSurvivesKill(t *testing.T) {
	cache := t.TempDir()
	code, out, stderr := runCmd(t, "token", "create", "--user", "alice", "--store", cache)
	if code != 0 {
		t.Fatalf("token create: exit %d: %s", code, stderr)
	}
	secret := strings.TrimSpace(out)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	// TOOLSIFT_TEST_MAIN=0: the upstream inherits serve's environment.
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {"up": {"command": "`+exe+`", "args": ["-test.run=^$"], "env": {"`+upstreamEnv+`": "1", "TOOLSIFT_TEST_MAIN": "0"}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.WaitLimit())
	defer cancel()
	cmd := exec.Command(exe, "serve", "--config", cfg, "--store", cache, "--listen", "127.0.0.1:0", "--tokens", "--audit",
		"--connect-timeout", testenv.WaitLimit().String())
	cmd.Env = append(os.Environ(), "TOOLSIFT_TEST_MAIN=1")
	logs := &logWatch{wrote: make(chan struct{}, 1)}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
		}
		cmd.Wait()
	}()
	logs.waitFor(t, `msg="server ready" server=up`, ctx.Done())
	_, rest, _ := strings.Cut(logs.String(), "msg=listening url=")
	url, _, _ := strings.Cut(rest, " ")
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("no listening url in serve's log:\n%s", logs.String())
	}

	var acked atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		hc := &http.Client{Transport: bearer{secret, http.DefaultTransport}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatalf("connect: %v\n%s", err, logs.String())
		}
		defer cs.Close()
		wg.Go(func() {
			for {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "up__lookup", "arguments": map[string]any{}}})
				if err != nil || res.IsError {
					return // killed
				}
				acked.Add(1)
			}
		})
	}
	for acked.Load() < 40 && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed = true
	cmd.Wait()
	wg.Wait()

	st, _, err := openStoreFlag(context.Background(), cache)
	if err != nil {
		t.Fatal(err)
	}
	records := 0
	for rec, err := range audit.Records(context.Background(), st, time.Time{}) {
		if err != nil {
			t.Fatal(err)
		}
		if rec.User != "alice" || rec.Tool != "up__lookup" {
			t.Errorf("record %+v", rec)
		}
		records++
	}
	if n := acked.Load(); int64(records) < n {
		t.Errorf("%d audit records after the kill, %d calls answered: records were lost", records, n)
	} else {
		t.Logf("%d calls answered before the kill, %d records", n, records)
	}
}
