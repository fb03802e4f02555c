package cli_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/cmd/internal/cli"
	"github.com/toolsift/toolsift/internal/pgtest"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/store/postgres"
)

// The postgres tests run on a throwaway cluster of their own (pgtest).
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestOpenStore(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "state")
	st, err := cli.OpenStore(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := st.(*store.Dir); !ok || d.Path() != dir {
		t.Fatalf("OpenStore(%q) = %#v, want the store.Dir of that folder", dir, st)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ spec, want, not string }{
		{"", "--store: empty", ""},
		{file, "--store " + file, ""},
		{"postgres://app:s3cr3t@127.0.0.1:1/toolsift?connect_timeout=5", "127.0.0.1:1/toolsift", "s3cr3t"},
		{"postgresql://127.0.0.1:1/toolsift?sslmode=disable&connect_timeout=5", "postgresql://127.0.0.1:1/toolsift", ""},
	} {
		_, err := cli.OpenStore(ctx, c.spec, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || (c.not != "" && strings.Contains(err.Error(), c.not)) {
			t.Errorf("OpenStore(%q) error %v; want it to say %q", c.spec, err, c.want)
		}
	}
	if _, err := cli.OpenStore(ctx, "postgres://127.0.0.1:1/x?connect_timeout=5", nil); !errors.Is(err, postgres.ErrUnavailable) {
		t.Errorf("OpenStore of an unreachable postgres URL: %v, want postgres.ErrUnavailable", err)
	}
}

// TestOpenStorePostgres: a postgres URL opens the shared store, which two
// handles share.
func TestOpenStorePostgres(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Start(t)
	a, err := cli.OpenStore(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := cli.OpenStore(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := a.Put(ctx, "trust/x.json", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Get(ctx, "trust/x.json"); err != nil || string(got) != "v" {
		t.Fatalf("the other handle read %q, %v", got, err)
	}
}
