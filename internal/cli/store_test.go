package cli_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/internal/cli"
	"github.com/toolsift/toolsift/store"
)

func TestOpenStore(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "state")
	st, err := cli.OpenStore(ctx, dir)
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
		{"postgres://app:s3cr3t@db.example.com/toolsift", "--store postgres://app:xxxxx@db.example.com/toolsift: a PostgreSQL store is not supported yet", "s3cr3t"},
		{"postgresql://db.example.com/toolsift?sslmode=require", "--store postgresql://db.example.com/toolsift?sslmode=require", ""},
	} {
		_, err := cli.OpenStore(ctx, c.spec)
		if err == nil || !strings.Contains(err.Error(), c.want) || (c.not != "" && strings.Contains(err.Error(), c.not)) {
			t.Errorf("OpenStore(%q) error %v; want it to say %q", c.spec, err, c.want)
		}
	}
	if _, err := cli.OpenStore(ctx, "postgres://x"); !errors.Is(err, cli.ErrPostgresPending) {
		t.Errorf("OpenStore of a postgres URL: %v, want ErrPostgresPending", err)
	}
}
