package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/toolsift/toolsift/internal/cachefile"
)

// ErrTooLarge is wrapped by the error of GetBounded for a value over the
// caller's limit.
var ErrTooLarge = errors.New("store: value over the limit")

// BoundedGetter is a Store that can refuse a value over a limit without
// reading it: a kind of record whose values are small (a tool list, a
// login) then never costs more than its limit, whatever another process
// put there. Dir and store/postgres implement it.
type BoundedGetter interface {
	// GetBounded is Get of a value of at most max bytes; a larger one is
	// an error wrapping ErrTooLarge that names the key and both sizes.
	GetBounded(ctx context.Context, key string, max int) ([]byte, error)
}

// GetBounded returns the value under key when it is at most max bytes,
// and otherwise an error wrapping ErrTooLarge: read with the store's
// GetBounded when it is a BoundedGetter, checked after Get otherwise.
func GetBounded(ctx context.Context, s Store, key string, max int) ([]byte, error) {
	if b, ok := s.(BoundedGetter); ok {
		return b.GetBounded(ctx, key, max)
	}
	v, err := s.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	if len(v) > max {
		return nil, fmt.Errorf("%w: %s: %d bytes, over the limit of %d", ErrTooLarge, key, len(v), max)
	}
	return v, nil
}

var _ BoundedGetter = (*Dir)(nil)

// GetBounded implements BoundedGetter: a file over max is refused by its
// size, before it is read.
func (d *Dir) GetBounded(ctx context.Context, key string, max int) ([]byte, error) {
	file, err := d.file(ctx, key)
	if err != nil {
		return nil, err
	}
	max = min(max, MaxValueBytes)
	if max <= 0 {
		return nil, fmt.Errorf("store: %s: limit %d, want a positive number of bytes", key, max)
	}
	data, err := cachefile.ReadFile(file, int64(max))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	if err != nil {
		if fi, serr := os.Stat(file); serr == nil && fi.Mode().IsRegular() && fi.Size() > int64(max) {
			return nil, fmt.Errorf("%w: %w", ErrTooLarge, err)
		}
		return nil, fmt.Errorf("store: %w", err)
	}
	return data, nil
}
