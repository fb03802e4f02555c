package peruser_test

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/gateway/peruser"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store"
)

// TestMain keeps the caches of this run in a folder of its own and checks
// that no goroutine outlives the tests.
func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

func newKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, peruser.LoginKeySize)
	rand.Read(k)
	return k
}

// TestPerUserOptions: each missing or wrong per-user option is refused,
// named, before anything connects; so is, by gateway.Open, per-user
// servers its config does not have.
func TestPerUserOptions(t *testing.T) {
	cfg := &config.Config{Servers: map[string]config.Server{
		"remote": {URL: "http://127.0.0.1:1/mcp", Type: "http"},
		"keyed":  {URL: "http://127.0.0.1:1/mcp", Type: "http", Headers: map[string]string{"authorization": "Bearer shared"}},
		"local":  {Command: "/nonexistent/server"},
	}}
	good := peruser.Options{Servers: []string{"remote"}, Store: store.NewMemory(), LoginKey: newKey(t), PublicURL: "https://gw.example.com"}
	for _, tc := range []struct {
		name   string
		change func(o *peruser.Options)
		want   string
	}{
		{"no store", func(o *peruser.Options) { o.Store = nil }, "needs a Store"},
		{"no key", func(o *peruser.Options) { o.LoginKey = nil }, "needs a LoginKey"},
		{"short key", func(o *peruser.Options) { o.LoginKey = o.LoginKey[:16] }, "LoginKey has 16 bytes, want 32"},
		{"no public url", func(o *peruser.Options) { o.PublicURL = "" }, "needs the PublicURL"},
		{"public url with a query", func(o *peruser.Options) { o.PublicURL = "https://gw.example.com/?x=1" }, "without query"},
		{"public url not http", func(o *peruser.Options) { o.PublicURL = "ftp://gw.example.com" }, `PublicURL "ftp://gw.example.com"`},
		{"no server", func(o *peruser.Options) { o.Servers = nil }, "names no server"},
		{"unknown server", func(o *peruser.Options) { o.Servers = []string{"nope"} }, `server "nope", which the config does not have`},
		{"stdio server", func(o *peruser.Options) { o.Servers = []string{"local"} }, `server "local", which is not a url server`},
		{"shared credential", func(o *peruser.Options) { o.Servers = []string{"keyed"} }, "sets an Authorization header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := good
			tc.change(&o)
			_, err := peruser.New(context.Background(), cfg, &o)
			if !errors.Is(err, gateway.ErrOptions) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want ErrOptions saying %q", err, tc.want)
			}
		})
	}

	t.Run("another config", func(t *testing.T) {
		logins, err := peruser.New(context.Background(), cfg, &good)
		if err != nil {
			t.Fatal(err)
		}
		other := &config.Config{Servers: map[string]config.Server{"local": cfg.Servers["local"]}}
		gw, err := gateway.Open(context.Background(), other, &gateway.Options{PerUser: logins,
			Toolset: toolsift.Options{NoSemantic: true, Store: store.NewMemory(), Logger: slog.New(slog.DiscardHandler)}})
		if err == nil {
			gw.Close()
		}
		if !errors.Is(err, gateway.ErrOptions) || !strings.Contains(err.Error(), `server "remote"`) {
			t.Fatalf("Open: %v, want ErrOptions naming remote", err)
		}
	})
}
