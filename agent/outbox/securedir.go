package outbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// maxLinks bounds how many symbolic links SecureDir follows.
const maxLinks = 32

// SecureDir makes dir, each missing directory 0700, and returns it with
// the links on its way resolved, once no one but this user (and root) can
// put a file in it. Every message in the spool is sent as the agent's own,
// so a directory another user made or may write to would let them speak
// for it (Open); so would the directory of the agent's credentials and
// join settings, which the join writes beside the spool. Under a directory
// others may write to (the system's temp dir, where the default spool
// lies), each directory must be a real directory, not a link (Lstat), this
// user's, and not writable by others; so must dir itself and every
// directory made here. A link is followed only where no one but root and
// this user could have made it.
func SecureDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for range maxLinks {
		next, err := walkDir(abs)
		if err != nil || next == "" {
			return abs, err
		}
		abs = next
	}
	return "", fmt.Errorf("%s: more than %d symbolic links on the way", dir, maxLinks)
}

// walkDir checks (and makes) the directories of the absolute path abs from
// the root down. It returns the path to walk again when it meets a link it
// may follow: the link resolved, the rest of abs after it.
func walkDir(abs string) (string, error) {
	me := os.Geteuid()
	parts := strings.Split(strings.TrimPrefix(filepath.Clean(abs), string(filepath.Separator)), string(filepath.Separator))
	cur := string(filepath.Separator)
	parent, err := os.Lstat(cur)
	if err != nil {
		return "", err
	}
	for i, name := range parts {
		if name == "" {
			continue
		}
		p := filepath.Join(cur, name)
		fi, made, err := lstatOrMkdir(p)
		if err != nil {
			return "", err
		}
		shared := sharedDir(parent, me)
		if fi.Mode()&fs.ModeSymlink != 0 && !shared && !made {
			// A link only root or this user could have made: the
			// operator's (a spool on another disk).
			target, err := filepath.EvalSymlinks(p)
			if err != nil {
				return "", err
			}
			return filepath.Join(append([]string{target}, parts[i+1:]...)...), nil
		}
		if shared || made || i == len(parts)-1 {
			if err := ownDir(p, fi, parent, cur, me); err != nil {
				return "", err
			}
		} else if !fi.IsDir() {
			return "", fmt.Errorf("%s is not a directory", p)
		}
		cur, parent = p, fi
	}
	return "", nil
}

// lstatOrMkdir describes p without following a link, making it (0700)
// when it is missing; made says that this call made it.
func lstatOrMkdir(p string) (fs.FileInfo, bool, error) {
	fi, err := os.Lstat(p)
	if !errors.Is(err, fs.ErrNotExist) {
		return fi, false, err
	}
	made := true
	if err := os.Mkdir(p, 0o700); errors.Is(err, fs.ErrExist) {
		made = false // made by someone else meanwhile: checked as found
	} else if err != nil {
		return nil, false, err
	}
	fi, err = os.Lstat(p)
	return fi, made, err
}

// ownDir refuses p unless it is a real directory of user me that others
// cannot write to, in parent (at parentPath), which others cannot rename
// it in: the temp dir's sticky bit keeps others from renaming what is not
// theirs; without it, a directory everyone may write to lets anyone swap
// the spool for their own.
func ownDir(p string, fi, parent fs.FileInfo, parentPath string, me int) error {
	const fix = "set spool_dir (or log_dir) in the agent's configuration to a directory of its own user"
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s is a symbolic link in %s, which others may write to: the agent does not follow it; remove it, or %s", p, parentPath, fix)
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", p)
	case owner(fi) != me:
		return fmt.Errorf("%s belongs to uid %d, not to this agent's uid %d: another user may have made it to plant messages that the agent would send as its own; remove it (as root or its owner), or %s", p, owner(fi), me, fix)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s may be written by others (mode %04o): they could plant messages that the agent would send as its own; look at what is in it (or remove it), then run chmod 700 %s", p, fi.Mode().Perm(), p)
	case parent.Mode().Perm()&0o002 != 0 && parent.Mode()&fs.ModeSticky == 0:
		return fmt.Errorf("%s lies in %s, which everyone may write to without the sticky bit (mode %04o): anyone could swap it for a directory of their own; %s", p, parentPath, parent.Mode().Perm(), fix)
	}
	return nil
}

// sharedDir says whether someone other than root and user me may add,
// remove or rename entries of the directory fi describes.
func sharedDir(fi fs.FileInfo, me int) bool {
	o := owner(fi)
	return fi.Mode().Perm()&0o022 != 0 || (o != 0 && o != me)
}

func owner(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
