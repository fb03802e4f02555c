package config

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// maxFileBytes bounds a config file and an envFile (docs/limits.md): a
// larger one is an error, read no further than the limit.
const maxFileBytes = 16 << 20

// readFile reads a config or dotenv file: only a regular file of at most
// maxFileBytes. It opens it without blocking and checks what it opened, so
// that a FIFO does not hang Load and /dev/zero does not fill memory.
func readFile(name string) ([]byte, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("not a regular file (mode %s)", fi.Mode().Type())}
	}
	if fi.Size() > maxFileBytes {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("%d bytes, over the limit of %d", fi.Size(), maxFileBytes)}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileBytes {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("grew over the limit of %d bytes while read", maxFileBytes)}
	}
	return data, nil
}
