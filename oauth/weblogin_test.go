package oauth_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/toolsift/toolsift/internal/oauthtest"
	"github.com/toolsift/toolsift/oauth"
)

// TestWebLogin: a login driven by a web server's callback. StartLogin
// registers the callback as redirect URI and hands back the authorization
// URL and its state; the PendingLogin survives JSON (a gateway keeps it
// between requests); FinishLogin refuses another issuer, exchanges the
// code once; Refresh renews the Credentials (the refresh token rotates)
// and, once the authorization server revoked them, clears them with a
// LoginError. No file is written.
func TestWebLogin(t *testing.T) {
	srv := oauthtest.New(notesServer(), nil)
	defer srv.Close()
	dir := t.TempDir()
	s := newStore(t, dir)
	if _, err := s.StartLogin(t.Context(), "notes", srv.URL, &oauth.LoginOptions{}); err == nil || !strings.Contains(err.Error(), "RedirectURL") {
		t.Fatalf("StartLogin without a RedirectURL: %v", err)
	}

	// The web server's callback only records what the browser brings.
	got := make(chan url.Values, 1)
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.URL.Query() }))
	defer cb.Close()
	p, err := s.StartLogin(t.Context(), "notes", srv.URL, &oauth.LoginOptions{RedirectURL: cb.URL + "/oauth/callback"})
	if err != nil {
		t.Fatal(err)
	}
	if u, _ := url.Parse(p.AuthURL); u.Query().Get("state") != p.State || u.Query().Get("redirect_uri") != cb.URL+"/oauth/callback" || u.Query().Get("code_challenge") == "" {
		t.Fatalf("authorization URL %s: want the state, the callback and a PKCE challenge", p.AuthURL)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var kept oauth.PendingLogin
	if err := json.Unmarshal(b, &kept); err != nil {
		t.Fatal(err)
	}
	if err := oauthtest.Browse(p.AuthURL); err != nil {
		t.Fatal(err)
	}
	q := <-got
	if q.Get("state") != p.State {
		t.Fatalf("the browser brought state %q, want %q", q.Get("state"), p.State)
	}
	if _, err := s.FinishLogin(t.Context(), &kept, q.Get("code"), "https://evil.example"); err == nil || !strings.Contains(err.Error(), "names issuer") {
		t.Fatalf("FinishLogin with another issuer: %v", err)
	}
	c, err := s.FinishLogin(t.Context(), &kept, q.Get("code"), q.Get("iss"))
	if err != nil {
		t.Fatal(err)
	}
	if c.AccessToken == "" || c.RefreshToken == "" || c.Issuer != srv.AS.URL || c.ServerURL != srv.URL || !c.Fresh(time.Now()) {
		t.Fatalf("credentials: issuer %q, server %q, access %v, refresh %v, fresh %v", c.Issuer, c.ServerURL, c.AccessToken != "", c.RefreshToken != "", c.Fresh(time.Now()))
	}
	if _, err := s.FinishLogin(t.Context(), &kept, q.Get("code"), q.Get("iss")); err == nil {
		t.Fatal("the same code exchanged twice")
	}

	access, refresh := c.AccessToken, c.RefreshToken
	if err := s.Refresh(t.Context(), "notes", c); err != nil {
		t.Fatal(err)
	}
	if c.AccessToken == access || c.RefreshToken == refresh || c.RefreshToken == "" {
		t.Fatal("Refresh did not renew and rotate the tokens")
	}
	if r := srv.Resources(); r[len(r)-1] != srv.URL {
		t.Fatalf("the refresh sent resource %q, want %q", r[len(r)-1], srv.URL)
	}
	srv.Revoke()
	err = s.Refresh(t.Context(), "notes", c)
	if !errors.Is(err, oauth.ErrLoginRequired) || c.AccessToken != "" || c.RefreshToken != "" {
		t.Fatalf("Refresh after the revocation: %v (tokens left: %v), want a LoginError and none", err, c.AccessToken != "" || c.RefreshToken != "")
	}
	if ok, _ := s.LoggedIn(t.Context(), srv.URL); ok {
		t.Fatal("a web login wrote the Store's file")
	}
}

// TestWebLoginSubject: where the token response says who approved (an
// OpenID Connect id_token), FinishLogin's Credentials name them; opaque
// tokens name nobody; an id_token of another issuer is not taken.
func TestWebLoginSubject(t *testing.T) {
	for _, c := range []struct {
		name    string
		idToken bool
		want    string
	}{{"id_token", true, "carol"}, {"opaque", false, ""}} {
		t.Run(c.name, func(t *testing.T) {
			srv := oauthtest.New(notesServer(), &oauthtest.Options{IDToken: c.idToken})
			defer srv.Close()
			s := newStore(t, t.TempDir())
			got := make(chan url.Values, 1)
			cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.URL.Query() }))
			defer cb.Close()
			p, err := s.StartLogin(t.Context(), "notes", srv.URL, &oauth.LoginOptions{RedirectURL: cb.URL + "/oauth/callback"})
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest(http.MethodGet, p.AuthURL, nil)
			req.Header.Set(oauthtest.UserHeader, "carol")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			q := <-got
			cr, err := s.FinishLogin(t.Context(), p, q.Get("code"), q.Get("iss"))
			if err != nil {
				t.Fatal(err)
			}
			if cr.Subject != c.want {
				t.Errorf("Subject = %q, want %q", cr.Subject, c.want)
			}
			// A refresh keeps it.
			if err := s.Refresh(t.Context(), "notes", cr); err != nil || cr.Subject != c.want {
				t.Errorf("after Refresh: Subject %q, %v", cr.Subject, err)
			}
			// Of another issuer than the login's, an id_token names
			// nobody (the response's iss is left out of the check here).
			p.Credentials.Issuer, p.IssRequired = "https://other.example", false
			if c.idToken {
				resp, err := http.DefaultClient.Do(req.Clone(t.Context()))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				q := <-got
				cr, err := s.FinishLogin(t.Context(), p, q.Get("code"), "")
				if err != nil {
					t.Fatal(err)
				}
				if cr.Subject != "" {
					t.Errorf("an id_token of another issuer gave Subject %q", cr.Subject)
				}
			}
		})
	}
}
