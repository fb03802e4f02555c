package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/toolsift/toolsift/internal/cachefile"
)

// Dir is a Store in a folder: a key is a relative path in it (its "/"
// the OS separator). Values are written atomically (a synced temporary
// file renamed over the old one, mode 0600, folders 0700) and read back
// only from regular files owned by the user and not writable by others
// (another user who could write the folder could forge a tool's
// description or a login in it); a refused file is an error wrapping
// cachefile's ErrUnsafe that names it. Locks are flock(2) on files in the
// folder's .locks/ (no key starts with "."), so they hold across
// processes on one machine; without flock, within this process only.
// A key's folders are made by its Put and removed by the Delete that
// leaves them empty (never the store's own folder, nor .locks/), so a
// prefix whose keys are all deleted leaves no folder behind.
type Dir struct {
	path string
}

var _ Store = (*Dir)(nil)

// NewDir returns the Store in folder path, which is made absolute and
// created (0700) by the first Put. It refuses a path that exists and is
// not a folder, or is a folder others may write.
func NewDir(path string) (*Dir, error) {
	if path == "" {
		return nil, errors.New("store: empty folder path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: folder %s: %w", path, err)
	}
	if err := cachefile.CheckDir(abs); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	return &Dir{path: abs}, nil
}

// Path returns the folder.
func (d *Dir) Path() string { return d.path }

func (d *Dir) file(ctx context.Context, key string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if err := CheckKey(key); err != nil {
		return "", err
	}
	return filepath.Join(d.path, filepath.FromSlash(key)), nil
}

// Get implements Store.
func (d *Dir) Get(ctx context.Context, key string) ([]byte, error) {
	file, err := d.file(ctx, key)
	if err != nil {
		return nil, err
	}
	data, err := cachefile.ReadFile(file, MaxValueBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	return data, nil
}

// putTries bounds the writes of one Put whose folder a Delete (of this
// process or another) removed between its making and the write.
const putTries = 5

// Put implements Store. The key's folders are made as needed, and made
// again if a concurrent Delete removed them before the value was in
// (up to putTries times): a Put that returns nil has stored the value.
func (d *Dir) Put(ctx context.Context, key string, value []byte) error {
	file, err := d.file(ctx, key)
	if err != nil {
		return err
	}
	if len(value) > MaxValueBytes {
		return fmt.Errorf("store: %s: %d bytes, over MaxValueBytes", key, len(value))
	}
	for try := 1; ; try++ {
		// WriteAtomic makes the folders (os.MkdirAll), then a temporary
		// file in the key's folder. A folder removed in between fails the
		// write with ErrNotExist; one made by another Put and removed
		// again while MkdirAll looked fails it with ErrExist (MkdirAll's
		// mkdir found it, its check after did not). Once the temporary
		// file is in, the folder is not empty and stays.
		err := cachefile.WriteAtomic(file, value)
		if err == nil {
			return nil
		}
		if !(errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrExist)) || try == putTries {
			return fmt.Errorf("store: %w", err)
		}
	}
}

// Delete implements Store. It also removes the key's folders that are
// left empty, from the key's own upward, stopping at the first that is
// not (a folder's removal failing for any reason only stops it: the key
// is deleted); the store's folder itself stays.
func (d *Dir) Delete(ctx context.Context, key string) error {
	file, err := d.file(ctx, key)
	if err != nil {
		return err
	}
	if err := os.Remove(file); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("store: %w", err)
	}
	d.removeEmptyFolders(key)
	return nil
}

// removeEmptyFolders removes the folders of key (a valid key: its
// segments are neither "." nor ".." nor empty) that are empty, deepest
// first, up to but not including d.path. os.Remove does not remove a
// folder that holds anything (ENOTEMPTY, EEXIST on some systems), and one
// already gone (ErrNotExist) was removed by another Delete: either ends
// the walk, as does any other error. A concurrent Put that loses its
// folder makes it again (Put).
func (d *Dir) removeEmptyFolders(key string) {
	for i := strings.LastIndexByte(key, '/'); i > 0; i = strings.LastIndexByte(key[:i], '/') {
		if os.Remove(filepath.Join(d.path, filepath.FromSlash(key[:i]))) != nil {
			return
		}
	}
}

// List implements Store. Files whose path is not a valid key (temporary
// files, locks, what something else left in the folder) are not listed.
func (d *Dir) List(ctx context.Context, prefix string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}
	// Walk only the folder the prefix's complete segments name.
	root := d.path
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		root = filepath.Join(d.path, filepath.FromSlash(prefix[:i]))
	}
	var keys []string
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if p == root {
			return nil
		}
		if strings.HasPrefix(e.Name(), ".") {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !e.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(d.path, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if strings.HasPrefix(key, prefix) && CheckKey(key) == nil {
			keys = append(keys, key)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: list %q: %w", prefix, err)
	}
	slices.Sort(keys)
	return keys, nil
}

// lockPoll is how often a Lock waiting for another holder tries again.
const lockPoll = 20 * time.Millisecond

// Lock implements Store.
func (d *Dir) Lock(ctx context.Context, key string) (func(), error) {
	if _, err := d.file(ctx, key); err != nil {
		return nil, err
	}
	dir := filepath.Join(d.path, ".locks")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: lock %s: %w", key, err)
	}
	// One lock file per key, named so that "a/b" and "a_b" differ.
	file := filepath.Join(dir, strings.ReplaceAll(key, "/", "%")+".lock")
	for {
		unlock, ok, err := tryLock(file)
		if err != nil {
			return nil, fmt.Errorf("store: lock %s: %w", key, err)
		}
		if ok {
			return unlock, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(lockPoll):
		}
	}
}

// Close implements Store; a Dir holds nothing open.
func (d *Dir) Close() error { return nil }
