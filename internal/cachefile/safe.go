package cachefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrUnsafe is wrapped by the error of a cache file or folder that is
// refused: not a regular file (a FIFO, a device such as /dev/zero, a
// folder), larger than the caller's limit, or, on Unix, owned by another
// user (root excepted) or writable by group or others, as ssh refuses such
// a key file. Another user who can write the cache could forge a tool's
// description or annotations in it.
var ErrUnsafe = errors.New("cachefile: refused")

// ReadFile reads a cache file of at most max bytes (max <= 0 means no
// limit). It opens it without blocking (a FIFO in its place does not hang
// the reader) and checks what it opened, not the path, so that a file
// swapped in meanwhile is checked too; then it checks the file's folder.
// A missing file is an error wrapping fs.ErrNotExist; a refused one wraps
// [ErrUnsafe] and says why.
func ReadFile(file string, max int64) ([]byte, error) {
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w %s: not a regular file (%s)", ErrUnsafe, file, typeName(fi.Mode()))
	}
	if max > 0 && fi.Size() > max {
		return nil, fmt.Errorf("%w %s: %d bytes, over the limit of %d", ErrUnsafe, file, fi.Size(), max)
	}
	if why := unsafeOwner(fi); why != "" {
		return nil, fmt.Errorf("%w %s: %s", ErrUnsafe, file, why)
	}
	if err := CheckDir(filepath.Dir(file)); err != nil {
		return nil, err
	}
	r := io.Reader(f)
	if max > 0 {
		r = io.LimitReader(f, max+1)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if max > 0 && int64(len(data)) > max {
		return nil, fmt.Errorf("%w %s: grew over the limit of %d bytes while read", ErrUnsafe, file, max)
	}
	return data, nil
}

// CheckDir returns an error wrapping [ErrUnsafe] when dir, a cache folder,
// is not a folder, or (on Unix) is owned by another user (root excepted)
// or writable by group or others; nil when it is fine or does not exist
// (it is then created 0700 by the first write).
func CheckDir(dir string) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w %s: not a folder (%s)", ErrUnsafe, dir, typeName(fi.Mode()))
	}
	if why := unsafeOwner(fi); why != "" {
		return fmt.Errorf("%w folder %s: %s", ErrUnsafe, dir, why)
	}
	return nil
}

func typeName(m fs.FileMode) string {
	switch t := m.Type(); {
	case t&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a device"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeDir != 0:
		return "a folder"
	default:
		return m.String()
	}
}
