// Package cachefile holds the rules of a file that toolsift keeps and
// others could have planted: ReadFile reads one (regular, bounded, not
// writable by others), CheckDir checks its folder, WriteAtomic replaces
// one so that a reader in any process sees the old content or the new,
// RemoveStaleTemps removes what a writer that died left. store.Dir keeps
// every value under these rules; toolsift serve reads its --token-file
// with ReadFile.
package cachefile

import (
	"os"
	"path/filepath"
	"time"
)

// WriteAtomic writes data to file (mode 0600, its folder 0700) so that a
// reader, in this process or another, sees the old content or the new,
// never a part: a temporary file in the same folder, synced, then renamed.
func WriteAtomic(file string, data []byte) (err error) {
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := CheckDir(dir); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), file); err != nil {
		return err
	}
	// Make the rename itself durable where folders can be synced.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// StaleTemp is how old a temporary file must be before [RemoveStaleTemps]
// takes it for the leftover of a writer that died between creating and
// renaming it.
const StaleTemp = time.Hour

// RemoveStaleTemps removes what writers that died left in dir.
func RemoveStaleTemps(dir string) {
	temps, _ := filepath.Glob(filepath.Join(dir, ".tmp-*"))
	for _, f := range temps {
		if fi, err := os.Stat(f); err == nil && time.Since(fi.ModTime()) > StaleTemp {
			_ = os.Remove(f)
		}
	}
}
