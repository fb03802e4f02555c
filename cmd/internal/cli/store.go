package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/store/postgres"
)

// OpenStore opens what a --store flag names: a folder (store.Dir; created
// by the first write) or a postgres:// or postgresql:// URL. The one place
// both commands turn the flag into a store.Store. The error names the
// value, with a URL's password hidden.
//
// A PostgreSQL store (store/postgres) is shared by every process given
// the same URL (the replicas of a team gateway); log gets its loss and
// recovery (nil: discarded). A server that cannot be reached is an error
// wrapping postgres.ErrUnavailable.
func OpenStore(ctx context.Context, spec string, log *slog.Logger) (store.Store, error) {
	switch {
	case spec == "":
		return nil, errors.New("--store: empty; give a folder")
	case strings.HasPrefix(spec, "postgres://"), strings.HasPrefix(spec, "postgresql://"):
		st, err := postgres.Open(ctx, spec, &postgres.Options{Logger: log})
		if err != nil {
			return nil, fmt.Errorf("--store: %w", err) // postgres names the URL, its password hidden
		}
		return st, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d, err := store.NewDir(spec)
	if err != nil {
		return nil, fmt.Errorf("--store %s: %w", spec, err)
	}
	return d, nil
}
