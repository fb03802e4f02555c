package oauth_test

import (
	"strings"
	"testing"

	"github.com/toolsift/toolsift/internal/oauthtest"
	"github.com/toolsift/toolsift/upstream"
)

// TestLoginLegacyServer: a server on the 2025-03-26 authorization spec
// (no protected resource metadata, no authorization server metadata: the
// endpoints /authorize, /token and /register at its origin) is logged in to
// as the go-sdk's client does, and its tools are then listed and called.
func TestLoginLegacyServer(t *testing.T) {
	srv := oauthtest.New(notesServer(), &oauthtest.Options{Legacy: true})
	defer srv.Close()
	s := newStore(t, t.TempDir())

	_, st := connect(t, s, srv.URL)
	wantLoginError(t, st.Err, false, "needs a login: not logged in")

	g := login(t, s, srv.URL)
	origin := strings.TrimSuffix(srv.URL, "/mcp")
	if g.Issuer != origin {
		t.Errorf("grant's issuer %q, want the server's origin %q", g.Issuer, origin)
	}
	if c := srv.Counts(); c.Registrations != 1 || c.Authorizations != 1 || c.CodeExchanges != 1 {
		t.Errorf("counts %+v, want one registration, authorization and code exchange at the origin", c)
	}

	hub, st := connect(t, s, srv.URL)
	if st.State != upstream.StateReady || st.Tools != 2 {
		t.Fatalf("after login: %+v", st)
	}
	res, err := hub.Call(t.Context(), "notes__read_notes", []byte(`{"text":"hi"}`))
	if err != nil || res.Content != "notes: hi" {
		t.Fatalf("call: %+v, %v", res, err)
	}
}
