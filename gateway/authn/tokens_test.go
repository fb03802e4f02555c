package authn_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/store"
)

func newDir(t testing.TB, path string) *store.Dir {
	t.Helper()
	d, err := store.NewDir(path)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestTokens: a token made for alice verifies as alice until revoked; the
// list shows it without its secret or hash; bad inputs are refused naming
// what is wrong.
func TestTokens(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tokens := authn.NewTokens(newDir(t, dir))
	secret, tok, err := tokens.Create(ctx, "alice", []string{"ops", "eng", "eng"}, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, authn.TokenPrefix+tok.ID+"_") || len(secret) != 60 {
		t.Errorf("secret %q does not have the form tsk_%s_...", secret, tok.ID)
	}
	id, err := tokens.Verify(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(authn.Identity{User: "alice", Teams: []string{"eng", "ops"}}, id); diff != "" {
		t.Errorf("Verify (-want +got):\n%s", diff)
	}
	bobSecret, _, err := tokens.Create(ctx, "bob@example.com", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	list, err := tokens.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != tok.ID && list[1].ID != tok.ID {
		t.Fatalf("List = %+v, want alice's and bob's tokens", list)
	}
	for _, tk := range list {
		if tk.User == "alice" {
			if diff := cmp.Diff(tok, tk); diff != "" {
				t.Errorf("listed token (-want +got):\n%s", diff)
			}
		}
	}
	// Neither the secret nor its hash in what List returns; the secret
	// nowhere in the store.
	b, _ := json.Marshal(list)
	for _, s := range []string{secret, bobSecret} {
		if hash := sha256Hex(s); strings.Contains(string(b), hash) || strings.Contains(string(b), s[len(s)-43:]) {
			t.Errorf("List shows a secret or its hash: %s", b)
		}
		grepTree(t, dir, s[len(s)-43:])
	}

	// Revoked: refused at once here, and gone from the list.
	if err := tokens.Revoke(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := tokens.Verify(ctx, secret); !errors.Is(err, authn.ErrUnknownToken) {
		t.Errorf("Verify of a revoked token: %v, want ErrUnknownToken", err)
	}
	if list, _ := tokens.List(ctx); len(list) != 1 || list[0].User != "bob@example.com" {
		t.Errorf("List after revoke = %+v, want bob's token only", list)
	}
	// Revoke takes the start of the secret too.
	if err := tokens.Revoke(ctx, bobSecret[:len(authn.TokenPrefix)+12]); err != nil {
		t.Errorf("Revoke(tsk_ID): %v", err)
	}

	for _, c := range []struct {
		name              string
		user, tokenName   string
		teams             []string
		wantErrContaining string
	}{
		{"empty user", "", "", nil, "the user is empty"},
		{"user with a space", "alice smith", "", nil, `user "alice smith": byte ' ' is not allowed`},
		{"long user", strings.Repeat("a", 129), "", nil, "longer than 128 bytes"},
		{"bad team", "alice", "", []string{"eng/ops"}, `team "eng/ops": byte '/' is not allowed`},
		{"empty team", "alice", "", []string{""}, "the team is empty"},
		{"name with ESC", "alice", "lap\x1b[2Jtop", nil, "control characters"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := tokens.Create(ctx, c.user, c.teams, c.tokenName)
			if err == nil || !strings.Contains(err.Error(), c.wantErrContaining) {
				t.Errorf("Create: %v, want an error containing %q", err, c.wantErrContaining)
			}
		})
	}
	for _, id := range []string{"0123456789ab", "nope", ""} {
		if err := tokens.Revoke(ctx, id); !errors.Is(err, authn.ErrUnknownToken) {
			t.Errorf("Revoke(%q): %v, want ErrUnknownToken", id, err)
		}
	}
	for _, s := range []string{"", "hello", secret + "x", strings.Replace(secret, "tsk_", "tsx_", 1), "tsk_0123456789ab_" + strings.Repeat("A", 43)} {
		_, err := tokens.Verify(ctx, s)
		if !errors.Is(err, authn.ErrUnknownToken) {
			t.Errorf("Verify(%q): %v, want ErrUnknownToken", s, err)
		}
		if s != "" && strings.Contains(err.Error(), s) {
			t.Errorf("Verify's error holds the secret: %v", err)
		}
	}
}

// grepTree fails the test if a file under dir holds s.
func grepTree(t *testing.T, dir, s string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), s) {
			t.Errorf("%s holds %.12q...", p, s)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkTokenVerify: the cost of Verify on every request: warm (the
// cache holds the token: no store read) and cold (a store read per call:
// a Dir's file, or Memory).
func BenchmarkTokenVerify(b *testing.B) {
	ctx := context.Background()
	for _, kind := range []string{"dir", "memory"} {
		var st store.Store = store.NewMemory()
		if kind == "dir" {
			st = newDir(b, b.TempDir())
		}
		tokens := authn.NewTokens(st)
		secret, _, err := tokens.Create(ctx, "alice", []string{"eng"}, "")
		if err != nil {
			b.Fatal(err)
		}
		b.Run(kind+"/warm", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tokens.Verify(ctx, secret); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(kind+"/cold", func(b *testing.B) {
			// A clock past the cache's expiry at every call.
			var n time.Duration
			tokens.SetClock(func() time.Time { n += time.Hour; return time.Now().Add(n) })
			defer tokens.SetClock(time.Now)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tokens.Verify(ctx, secret); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
