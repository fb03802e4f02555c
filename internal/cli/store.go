package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/toolsift/toolsift/store"
)

// ErrPostgresPending is wrapped by the error of OpenStore for a PostgreSQL
// URL until the commands can open one.
var ErrPostgresPending = errors.New("a PostgreSQL store is not supported yet (support is being added); use a folder")

// OpenStore opens what a --store flag names: a folder (store.Dir; created
// by the first write) or a postgres:// or postgresql:// URL. The one place
// both commands turn the flag into a store.Store. The error names the
// value, with a URL's password hidden.
func OpenStore(ctx context.Context, spec string) (store.Store, error) {
	switch {
	case spec == "":
		return nil, errors.New("--store: empty; give a folder")
	case strings.HasPrefix(spec, "postgres://"), strings.HasPrefix(spec, "postgresql://"):
		return nil, fmt.Errorf("--store %s: %w", redactURL(spec), ErrPostgresPending)
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

// redactURL hides the password of a database URL (user:password@host).
func redactURL(u string) string {
	scheme, rest, _ := strings.Cut(u, "://")
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return u
	}
	userinfo := rest[:at]
	if user, _, ok := strings.Cut(userinfo, ":"); ok {
		userinfo = user + ":xxxxx"
	}
	return scheme + "://" + userinfo + rest[at:]
}
