// Package private keeps the controller's secrets and data its user's
// alone. A file (a private key, the store) that others may read is refused
// at start with the chmod that fixes it, as the API token's file is, rather
// than made private behind the operator's back: what it held may have been
// read already, and the operator should know. A directory is made 0700,
// and one of the controller's own that others may use is made 0700 with a
// word in the log: the files in it are checked on their own, and refusing
// would stop every controller whose data directory an earlier version made
// 0755.
package private

import (
	"fmt"
	"os"
	"runtime"
)

// File refuses a file that its group or others may read or write. fi
// describes path (os.Stat).
func File(path string, fi os.FileInfo) error {
	if runtime.GOOS == "windows" || fi.Mode().Perm()&0o077 == 0 {
		return nil
	}
	return fmt.Errorf("%s may be read by others (mode %04o): run chmod 600 %s", path, fi.Mode().Perm(), path)
}

// loose are the bits of a directory's mode that let others list or enter
// it, or its group write to it. Its group may read it: the installer gives
// the data directory to the service's own group (0750), which holds no one
// else.
const loose = 0o027

// MkdirAll makes dir (and its missing parents) 0700. An existing dir that
// others may use is made 0700 when ours says that it is the caller's own
// (it holds what the caller keeps there, or nothing), and refused
// otherwise, as is one with the sticky bit: a shared directory (the temp
// dir, --data-dir /var/lib by mistake) must not be closed to everyone else.
// was is the mode before it was made 0700, for the caller to log, else 0.
func MkdirAll(dir string, ours func(dir string) bool) (was os.FileMode, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return 0, err
	}
	if !fi.IsDir() {
		return 0, fmt.Errorf("%s is not a directory", dir)
	}
	if runtime.GOOS == "windows" || fi.Mode().Perm()&loose == 0 {
		return 0, nil
	}
	if fi.Mode()&os.ModeSticky != 0 || !ours(dir) {
		return 0, fmt.Errorf("%s is open to others (mode %04o) and holds what is not the controller's: give the controller a directory of its own, or run chmod 700 %s", dir, fi.Mode().Perm(), dir)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return 0, fmt.Errorf("%s is open to others (mode %04o) and could not be made private: %w; run chmod 700 %s", dir, fi.Mode().Perm(), err, dir)
	}
	return fi.Mode().Perm(), nil
}

// Empty says whether dir holds nothing: a directory made for the caller.
func Empty(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	names, _ := f.Readdirnames(1)
	return len(names) == 0
}
