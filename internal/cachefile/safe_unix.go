//go:build unix

package cachefile

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// unsafeOwner says why a file or folder that another user could have
// written is not trusted, or "".
func unsafeOwner(fi fs.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if uid := int(st.Uid); uid != os.Getuid() && uid != 0 {
			return fmt.Sprintf("owned by uid %d, not this user (uid %d)", uid, os.Getuid())
		}
	}
	if fi.IsDir() && fi.Mode()&fs.ModeSticky != 0 {
		// A sticky folder (/tmp): others may add files but not replace
		// or remove this user's, and theirs fail the owner check above.
		return ""
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Sprintf("writable by group or others (mode %04o); chmod go-w it", perm)
	}
	return ""
}
