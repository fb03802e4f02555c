package gateway_test

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/http/cookiejar"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/oauthtest"
	"github.com/toolsift/toolsift/store"
)

// loginLink returns the login link of a call's answer, "" when it has
// none.
func (gw *perUserGateway) loginLink(text string) string {
	return regexp.MustCompile(regexp.QuoteMeta(gw.URL) + `/login/remote\?ticket=\S+`).FindString(text)
}

// TestPerUserLoginBound: a login link is honoured only for the user it
// was made for, and a user the policy keeps from a per-user server is
// never offered a login to it. Carol's link opened in alice's browser
// signed in to the gateway is refused; opened in a browser the gateway
// does not know, where alice approves as herself at the authorization
// server (which says who approved), it is refused too, since that account
// is alice's login: carol's calls never answer whoami=alice. Carol's
// link after her login was revoked, opened by mallory (an account no one
// here has), is refused: carol's login is her account's. Carol, signed in
// to the gateway, may change accounts. Bob, out of the server's scope,
// gets the answer for a tool no server has, before anyone logged in and
// after, and the login page answers him as for a server that does not
// log in per user; his attempts change nothing alice sees.
func TestPerUserLoginBound(t *testing.T) {
	ctx := context.Background()
	as := whoamiServerWith(t, &oauthtest.Options{IDToken: true})
	pol, err := config.ParsePolicy("policy.json", []byte(`{"rules": [{"users": ["alice", "carol", "erin"], "allow": ["remote"]}, {"users": ["bob"], "allow": ["remote__nothing_*"], "deny": ["remote"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	st := store.NewMemory()
	gw, err := openPerUserPolicy(t, as, st, newKey(t), pol)
	if err != nil {
		t.Fatal(err)
	}
	bob := map[string]*client{"2025-11-25": gw.mcpClient(t, "bob", "2025-11-25"), "2026-07-28": gw.mcpClient(t, "bob", "2026-07-28")}
	// What bob learns of calling name, by name and through call_tool,
	// the name replaced by X.
	answers := func(c *client, name string) map[string]string {
		t.Helper()
		out := map[string]string{}
		res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		out["by name"] = errString(err)
		if err == nil {
			b, _ := json.Marshal(res)
			out["by name"] = string(b)
		}
		text, _ := c.call(t, "call_tool", map[string]any{"name": name})
		out["call_tool"] = text
		for k, v := range out {
			out[k] = strings.ReplaceAll(v, name, "X")
		}
		return out
	}
	bobOutOfScope := func(when string) {
		t.Helper()
		for version, c := range bob {
			if diff := cmp.Diff(answers(c, "nosuch__whoami"), answers(c, "remote__whoami")); diff != "" {
				t.Errorf("%s, bob (%s) calling remote__whoami, out of his scope, is answered unlike a tool no server has (-none +remote):\n%s", when, version, diff)
			}
		}
		asked := as.Counts().Authorizations
		status, body := get(t, browser("bob"), gw.URL+"/login/remote")
		nStatus, nBody := get(t, browser("bob"), gw.URL+"/login/nosuch")
		if status != nStatus || strings.ReplaceAll(body, "remote", "X") != strings.ReplaceAll(nBody, "nosuch", "X") {
			t.Errorf("%s, bob's login page of remote: %d %q; of a server that does not log in per user: %d %q", when, status, body, nStatus, nBody)
		}
		if n := as.Counts().Authorizations - asked; n != 0 {
			t.Errorf("%s, bob's login page sent him to the authorization server (%d authorizations)", when, n)
		}
		// The gateway decided, as for a tool the policy hides.
		if n := len(regexp.MustCompile(`user=bob .*tool=remote__whoami outcome=out-of-scope`).FindAllString(gw.Log.String(), -1)); n == 0 {
			t.Errorf("%s, no call of bob's is logged out-of-scope:\n%s", when, gw.Log.String())
		}
	}
	bobOutOfScope("before anyone logged in")
	if _, ok := gw.Toolset().Get("remote__whoami"); ok {
		t.Fatal("bob's attempts listed remote's tools for the catalog")
	}

	gw.login(t, "alice")
	alice := gw.mcpClient(t, "alice")
	if text, isErr := alice.whoami(t); isErr || text != "alice" {
		t.Fatalf("alice's call = %q (isError %v)", text, isErr)
	}
	aliceSees := func() string {
		b, _ := json.Marshal(map[string]any{"tools": alice.names(t), "search": alice.search(t, "whose token called", 3)})
		return string(b)
	}
	before := aliceSees()
	bobOutOfScope("after alice's login")
	if ans := bob["2026-07-28"].search(t, "whose token called", 3); len(ans.Tools) > 0 {
		t.Errorf("bob's search finds %v: remote is out of his scope", ans.Tools)
	}

	carol := gw.mcpClient(t, "carol")
	carolsLink := func() string {
		t.Helper()
		text, isErr := carol.whoami(t)
		link := gw.loginLink(text)
		if !isErr || link == "" {
			t.Fatalf("carol's call without a login = %q (isError %v), want a login link", text, isErr)
		}
		return link
	}
	link := carolsLink()
	// Alice's browser, signed in to the gateway as alice: refused, and the
	// link left for carol.
	if status, body := get(t, browser("alice"), link); status != http.StatusForbidden || !strings.Contains(body, "made for another user") {
		t.Errorf("carol's link in alice's signed-in browser: %d %s, want 403", status, body)
	}
	// A browser the gateway does not know, where alice approves as herself.
	if status, body := get(t, anonymousBrowser("alice"), link); status != http.StatusForbidden || !strings.Contains(html.UnescapeString(body), "another user's login here") {
		t.Errorf("carol's link opened by alice, who approves as herself: %d %s, want 403", status, body)
	}
	if text, _ := carol.whoami(t); text == "alice" || gw.loginLink(text) == "" {
		t.Fatalf("carol's call after alice opened her link = %q, want a login link still", text)
	}
	if text, isErr := alice.whoami(t); isErr || text != "alice" {
		t.Errorf("alice's call after her refused attempt = %q (isError %v)", text, isErr)
	}

	// Carol logs in through her own link, as herself.
	if status, body := get(t, anonymousBrowser("carol"), carolsLink()); status != http.StatusOK || !strings.Contains(body, "as carol") {
		t.Fatalf("carol's login: %d %s", status, body)
	}
	if text, isErr := carol.whoami(t); isErr || text != "carol" {
		t.Fatalf("carol's call after her login = %q (isError %v)", text, isErr)
	}

	// Every login revoked upstream: carol's next link, opened by mallory,
	// whose account is no one's login here, is refused all the same.
	as.Revoke()
	link = carolsLink()
	if status, body := get(t, anonymousBrowser("mallory"), link); status != http.StatusForbidden || !strings.Contains(html.UnescapeString(body), "another account's") {
		t.Errorf("carol's link opened by mallory: %d %s, want 403", status, body)
	}
	if text, _ := carol.whoami(t); text == "mallory" || gw.loginLink(text) == "" {
		t.Fatalf("carol's call after mallory opened her link = %q, want a login link", text)
	}
	// Nor does mallory get there by having carol's signed-in browser load
	// the callback of the login she started with carol's link.
	link = carolsLink()
	atCallback := func(c *http.Client) *http.Client {
		c.CheckRedirect = func(req *http.Request, _ []*http.Request) error {
			if strings.HasPrefix(req.URL.String(), gw.URL+"/oauth/callback") {
				return http.ErrUseLastResponse
			}
			return nil
		}
		return c
	}
	resp, err := atCallback(anonymousBrowser("mallory")).Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if status, body := get(t, browser("carol"), resp.Header.Get("Location")); status != http.StatusForbidden || !strings.Contains(html.UnescapeString(body), "another account's") {
		t.Errorf("carol's signed-in browser made to load mallory's callback: %d %s, want 403", status, body)
	}
	if text, _ := carol.whoami(t); text == "mallory" || gw.loginLink(text) == "" {
		t.Fatalf("carol's call after her browser loaded mallory's callback = %q, want a login link", text)
	}
	// Carol, signed in to the gateway, logs in with another account of hers.
	jar, _ := cookiejar.New(nil)
	signedInAsCarol := &http.Client{Jar: jar, Transport: userHeader{"carol", browserHeader{"carol-work", http.DefaultTransport}}}
	if status, body := get(t, signedInAsCarol, gw.URL+"/login/remote"); status != http.StatusOK || !strings.Contains(body, "as carol") {
		t.Fatalf("carol, signed in, logging in with another account: %d %s", status, body)
	}
	if text, isErr := carol.whoami(t); isErr || text != "carol-work" {
		t.Errorf("carol's call after changing accounts = %q (isError %v), want carol-work", text, isErr)
	}

	// The policy changes while erin logs in: the callback finds her out
	// of scope, and stores nothing.
	noFollow := atCallback(browser("erin"))
	resp, err = noFollow.Get(gw.URL + "/login/remote")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	callback := resp.Header.Get("Location")
	if !strings.HasPrefix(callback, gw.URL+"/oauth/callback?") {
		t.Fatalf("erin's login led to %s %s", resp.Status, callback)
	}
	narrower, err := config.ParsePolicy("policy.json", []byte(`{"rules": [{"users": ["alice", "carol"], "allow": ["remote"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gw.SetPolicy(narrower); err != nil {
		t.Fatal(err)
	}
	noFollow.CheckRedirect = nil
	if status, body := get(t, noFollow, callback); status != http.StatusNotFound {
		t.Errorf("erin's callback once out of scope: %d %s, want 404", status, body)
	}
	if keys, _ := st.List(ctx, "userlogins/u/"); len(keys) != 2 {
		t.Errorf("%d logins stored, want alice's and carol's", len(keys))
	}

	// Alice logs in again (revoked) and sees what she saw.
	gw.login(t, "alice")
	if after := aliceSees(); after != before {
		t.Errorf("what alice sees changed:\n before %s\n after  %s", before, after)
	}
	bobOutOfScope("at the end")
}
