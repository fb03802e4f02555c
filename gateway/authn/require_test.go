package authn_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/internal/pgtest"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store"
)

// TestMain stops the PostgreSQL cluster of watch_window_test.go.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// whoami is the handler behind Require in these tests: it answers the
// Identity on the request's context, "-" for none.
var whoami = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	id, ok := authn.IdentityFrom(r.Context())
	if !ok {
		io.WriteString(w, "-")
		return
	}
	fmt.Fprintf(w, "user=%q teams=%q", id.User, id.Teams)
})

// post sends a request with the Authorization header auth (none when
// empty) and returns the response, its body read.
func post(t *testing.T, url, auth string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestRequire: a request with a live API token reaches the handler as
// its user, teams sorted; one without a token, with a wrong one or
// another scheme gets 401 with a Bearer challenge and the hint, and is
// logged (a missing token at Debug only) without the token.
func TestRequire(t *testing.T) {
	ctx := context.Background()
	tokens := authn.NewTokens(store.NewMemory())
	secret, _, err := tokens.Create(ctx, "alice", []string{"ops", "eng"}, "")
	if err != nil {
		t.Fatal(err)
	}
	var buf testenv.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	const hint = "send your API token (toolsift token create makes one)"
	srv := httptest.NewServer(authn.Require(tokens, &authn.Options{Logger: log, Hint: hint})(whoami))
	defer srv.Close()

	if resp, body := post(t, srv.URL, "Bearer "+secret); resp.StatusCode != http.StatusOK || body != `user="alice" teams=["eng" "ops"]` {
		t.Errorf("alice's token: %s %q, want 200 and her Identity on the request", resp.Status, body)
	}
	wrong := secret[:len(secret)-1] + map[bool]string{true: "B", false: "A"}[strings.HasSuffix(secret, "A")]
	for _, auth := range []string{"", "Bearer " + wrong, "Bearer nonsense", "Basic " + secret, "Bearer "} {
		from := len(buf.String())
		resp, body := post(t, srv.URL, auth)
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("Authorization %.20q: %s (WWW-Authenticate %q), want 401 with a Bearer challenge", auth, resp.Status, resp.Header.Get("WWW-Authenticate"))
		}
		if body != "401 unauthorized: "+hint+"\n" {
			t.Errorf("Authorization %.20q: body %q, want the hint", auth, body)
		}
		line := buf.String()[from:]
		want := "level=WARN msg=\"request refused\"" // a wrong credential is worth a look
		if strings.TrimSpace(auth) == "" || strings.TrimSpace(auth) == "Bearer" {
			want = "level=DEBUG msg=\"request refused\"" // a missing one is routine
		}
		if !strings.Contains(line, want) {
			t.Errorf("Authorization %.20q: log %q, want %s", auth, line, want)
		}
	}
	for _, s := range []string{secret, wrong, secret[len(secret)-43:]} {
		if strings.Contains(buf.String(), s) {
			t.Errorf("the log holds a token:\n%s", buf.String())
		}
	}

	// The default hint.
	srv2 := httptest.NewServer(authn.Require(tokens, nil)(whoami))
	defer srv2.Close()
	if _, body := post(t, srv2.URL, ""); body != "401 unauthorized: this server needs a bearer token (Authorization: Bearer ...)\n" {
		t.Errorf("default hint: body %q", body)
	}
}

// TestSharedToken: the shared token lets a request in as nobody (an
// Identity on its context, the zero one); any other token is refused, and
// an empty shared token refuses every bearer.
func TestSharedToken(t *testing.T) {
	srv := httptest.NewServer(authn.Require(authn.SharedToken("tok"), nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := authn.IdentityFrom(r.Context())
		fmt.Fprintf(w, "%v %v", ok, id.IsZero())
	})))
	defer srv.Close()
	for auth, want := range map[string]int{"Bearer tok": 200, "bearer tok": 200, "Bearer  tok ": 200, "Bearer tok2": 401, "Bearer to": 401, "": 401, "tok": 401} {
		resp, body := post(t, srv.URL, auth)
		if resp.StatusCode != want {
			t.Errorf("Authorization %q: %s, want %d", auth, resp.Status, want)
		}
		if want == 200 && body != "true true" {
			t.Errorf("Authorization %q: Identity set %s (zero), want the zero Identity set", auth, body)
		}
	}
	for _, bearer := range []string{"", "x"} {
		if _, err := authn.SharedToken("").Verify(context.Background(), bearer); !errors.Is(err, authn.ErrUnknownToken) {
			t.Errorf("SharedToken(\"\").Verify(%q) = %v, want ErrUnknownToken", bearer, err)
		}
	}
}

// verifierFunc is a Verifier of the tests' own.
type verifierFunc func(context.Context, string) (authn.Identity, error)

func (f verifierFunc) Verify(ctx context.Context, bearer string) (authn.Identity, error) {
	return f(ctx, bearer)
}

// TestTokensOr: a bearer starting with tsk_ goes to the API tokens, any
// other to the other Verifier; each one's refusal is a 401.
func TestTokensOr(t *testing.T) {
	ctx := context.Background()
	tokens := authn.NewTokens(store.NewMemory())
	secret, _, err := tokens.Create(ctx, "bob", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	jwts := verifierFunc(func(_ context.Context, bearer string) (authn.Identity, error) {
		asked = append(asked, bearer)
		if bearer == "a.jwt.of-alice" {
			return authn.Identity{User: "alice"}, nil
		}
		return authn.Identity{}, fmt.Errorf("%w: not a JWT of the issuer", authn.ErrUnknownToken)
	})
	v := tokens.Or(jwts)
	for bearer, want := range map[string]string{"a.jwt.of-alice": "alice", secret: "bob"} {
		if id, err := v.Verify(ctx, bearer); err != nil || id.User != want {
			t.Errorf("Verify(%.16q) = %v, %v; want %s", bearer, id, err, want)
		}
	}
	for _, bearer := range []string{"tsk_0123456789ab_" + strings.Repeat("A", 43), "another.jwt"} {
		if _, err := v.Verify(ctx, bearer); !errors.Is(err, authn.ErrUnknownToken) {
			t.Errorf("Verify(%.16q) = %v, want ErrUnknownToken", bearer, err)
		}
	}
	if want := []string{"a.jwt.of-alice", "another.jwt"}; strings.Join(asked, ",") != strings.Join(want, ",") {
		t.Errorf("the other Verifier was asked %q, want %q (never an API token)", asked, want)
	}
}

// TestRequireEndsRefused: a request in flight whose credential stops
// verifying is ended (its context canceled) once Require checks it again,
// TokenCacheTTL after it began; one whose credential still verifies runs
// on. In a synctest bubble: the checks are the only clock.
func TestRequireEndsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		valid := map[string]bool{"alice": true, "bob": true}
		v := verifierFunc(func(_ context.Context, bearer string) (authn.Identity, error) {
			mu.Lock()
			defer mu.Unlock()
			if !valid[bearer] {
				return authn.Identity{}, fmt.Errorf("%w: revoked", authn.ErrUnknownToken)
			}
			return authn.Identity{User: bearer}, nil
		})
		ended := make(chan string, 2)
		h := authn.Require(v, nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done() // an event stream, open until the request ends
			id, _ := authn.IdentityFrom(r.Context())
			ended <- id.User
		}))
		start := time.Now()
		for _, user := range []string{"alice", "bob"} {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.Header.Set("Authorization", "Bearer "+user)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go h.ServeHTTP(httptest.NewRecorder(), req.WithContext(ctx))
		}
		synctest.Wait()
		mu.Lock()
		valid["alice"] = false // revoked
		mu.Unlock()
		if got := <-ended; got != "alice" {
			t.Errorf("%s's request ended, want alice's", got)
		}
		if took := time.Since(start); took != authn.TokenCacheTTL {
			t.Errorf("alice's request ended %v after it began, want TokenCacheTTL (%v)", took, authn.TokenCacheTTL)
		}
		time.Sleep(10 * authn.TokenCacheTTL) // bubble time: bob's credential is checked ten times more
		synctest.Wait()
		select {
		case u := <-ended:
			t.Errorf("%s's request ended, its credential still valid", u)
		default:
		}
	})
}
