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

	"github.com/toolsift/toolsift/internal/cachefile"
)

// PrefixDeleter is a Store that deletes every key under a prefix at once:
// a kind of record dropped by the folder (a day of the audit log) then
// costs one operation, not one per key. Memory, Dir and store/postgres
// implement it.
type PrefixDeleter interface {
	// DeletePrefix deletes the keys that start with prefix (those List
	// returns for it) and returns how many it deleted. prefix is one List
	// accepts, except the empty prefix: deleting every key is never one
	// call's work, and "" is an error wrapping ErrKey. A prefix that is
	// not a folder ("catalog/a") deletes the keys that start with it
	// ("catalog/a.json", "catalog/ab/c.json"), as List lists them.
	//
	// It is atomic where the store can be (Memory, store/postgres: a Put
	// of a key under prefix made at the same time is either deleted or
	// kept, and readers see all the keys or none); where it is not (Dir,
	// file by file), such a Put may be kept or deleted, as with a List
	// then a Delete of each key. Keys of other prefixes are never touched.
	// A Watcher reports each deleted key to the other Stores' watches as
	// it reports a Delete. After an error the count is of the keys deleted
	// before it.
	DeletePrefix(ctx context.Context, prefix string) (int, error)
}

// DeletePrefix deletes every key of s that starts with prefix and returns
// how many it deleted: with s's DeletePrefix when it is a PrefixDeleter,
// else a List and a Delete of each key (a key deleted by another process
// meanwhile is counted too). The empty prefix is an error wrapping
// ErrKey, as for PrefixDeleter.
func DeletePrefix(ctx context.Context, s Store, prefix string) (int, error) {
	if d, ok := s.(PrefixDeleter); ok {
		return d.DeletePrefix(ctx, prefix)
	}
	if err := checkDeletePrefix(prefix); err != nil {
		return 0, err
	}
	keys, err := s.List(ctx, prefix)
	if err != nil {
		return 0, err
	}
	for i, k := range keys {
		if err := s.Delete(ctx, k); err != nil {
			return i, err
		}
	}
	return len(keys), nil
}

// checkDeletePrefix accepts the prefixes of DeletePrefix: those of List
// but the empty one.
func checkDeletePrefix(prefix string) error {
	if prefix == "" {
		return fmt.Errorf("%w: the empty prefix: DeletePrefix never deletes every key", ErrKey)
	}
	return checkPrefix(prefix)
}

var (
	_ PrefixDeleter = (*Memory)(nil)
	_ PrefixDeleter = (*Dir)(nil)
)

// DeletePrefix implements PrefixDeleter, atomically.
func (m *Memory) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if m.closed {
		return 0, fmt.Errorf("store: memory store closed")
	}
	if err := checkDeletePrefix(prefix); err != nil {
		return 0, err
	}
	n := 0
	for k := range m.vals {
		if strings.HasPrefix(k, prefix) {
			delete(m.vals, k)
			n++
		}
	}
	return n, nil
}

// DeletePrefix implements PrefixDeleter: it removes the files List lists
// for prefix, one by one, then the folders it left empty, deepest first
// (never the store's folder, nor .locks/, nor a folder holding anything
// else, such as a file that is not a key). It never follows a symbolic
// link out of the store: a link where one of the prefix's folders should
// be is refused (an error wrapping cachefile's ErrUnsafe) before anything
// is deleted, the walk below it does not follow links (a link is not a
// key), and every removal is made within the store's folder (os.Root),
// so a folder swapped for a link meanwhile fails the removal instead.
func (d *Dir) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := checkDeletePrefix(prefix); err != nil {
		return 0, err
	}
	// The folders the prefix's complete segments name, as List walks them.
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		dir := d.path
		for seg := range strings.SplitSeq(prefix[:i], "/") {
			dir = filepath.Join(dir, seg)
			fi, err := os.Lstat(dir)
			if errors.Is(err, fs.ErrNotExist) {
				return 0, nil // nothing under the prefix
			}
			if err != nil {
				return 0, fmt.Errorf("store: delete prefix %q: %w", prefix, err)
			}
			if !fi.IsDir() {
				if fi.Mode()&fs.ModeSymlink != 0 {
					return 0, fmt.Errorf("store: delete prefix %q: %w %s: a symbolic link where a folder should be", prefix, cachefile.ErrUnsafe, dir)
				}
				return 0, nil // a file where the folder would be: no key under it
			}
		}
	}
	keys, err := d.List(ctx, prefix)
	if err != nil || len(keys) == 0 {
		return 0, err
	}
	root, err := os.OpenRoot(d.path)
	if err != nil {
		return 0, fmt.Errorf("store: delete prefix %q: %w", prefix, err)
	}
	defer root.Close()
	n := 0
	folders := map[string]bool{} // the folders of the deleted keys
	defer func() { removeEmptyFoldersIn(root, folders) }()
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		err := root.Remove(filepath.FromSlash(k))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted meanwhile, by another Delete
		}
		if err != nil {
			return n, fmt.Errorf("store: delete prefix %q: %w", prefix, err)
		}
		n++
		if i := strings.LastIndexByte(k, '/'); i > 0 {
			folders[k[:i]] = true
		}
	}
	return n, nil
}

// removeEmptyFoldersIn removes, within root, each of folders (keys' folders)
// and its parents that are empty, deepest first, as Dir.Delete does for
// one key: a folder that holds anything, or is gone, ends its walk up.
func removeEmptyFoldersIn(root *os.Root, folders map[string]bool) {
	list := make([]string, 0, len(folders))
	for f := range folders {
		list = append(list, f)
	}
	// Reversed order puts a folder before its parent (a prefix of it).
	slices.Sort(list)
	slices.Reverse(list)
	for _, f := range list {
		for i := len(f); i > 0; i = strings.LastIndexByte(f[:i], '/') {
			if root.Remove(filepath.FromSlash(f[:i])) != nil {
				break
			}
		}
	}
}
