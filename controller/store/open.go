package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/vlmfleet/vlmfleet/internal/atomicfile"
	"github.com/vlmfleet/vlmfleet/internal/private"
)

// DamagedError says that the database file cannot be used as it is: it
// lost its contents or its pages do not read. Open refuses it rather than
// serve (and go on writing) a store that silently lost sweeps, runs and
// the agents' enrolments; the message says how to restore a backup.
type DamagedError struct {
	Path string
	// Found is what is wrong, as a sentence's predicate ("is empty ...").
	Found string
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("store: %s %s. The controller does not start on it. "+
		"Restore the newest backup (vlmfleet controller backup): with the controller stopped, move %s away "+
		"(keep it to look into), put the backup in its place readable by the controller's user only "+
		"(install -m 600 BACKUP %s), and start again; docs/operations.md, \"A damaged store\". "+
		"Without a backup, moving the file away and starting makes a new, empty store",
		e.Path, e.Found, e.Path, e.Path)
}

// maxCheckErrors is how many of the consistency check's findings the error
// names; the rest are counted.
const maxCheckErrors = 3

// preflight looks at an existing database file before bbolt opens it for
// writing. bbolt rebuilds its free list at every open by walking every
// page (NoFreelistSync) in a goroutine of its own, where a damaged page's
// panic cannot be recovered and ends the process with a stack trace that
// names no file. So the same pages are read here first, in this goroutine,
// where a panic (or a fault on a page past the end of a cut file) becomes
// a DamagedError. After an unclean stop (the pid file of the process that
// had the file open is still there), bbolt's full consistency check runs
// too. An empty file is refused when something shows that it had data.
func preflight(path, pidPath string, opt Options) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if err := private.File(path, fi); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	_, perr := os.Lstat(pidPath)
	unclean := perr == nil
	if fi.Size() == 0 {
		var had []string
		if opt.PriorState != "" {
			had = append(had, opt.PriorState)
		}
		if unclean {
			had = append(had, pidPath+" is left by a controller that had the store open")
		}
		if len(had) == 0 {
			// Nothing was ever stored: bbolt was cut short making it.
			return nil
		}
		return &DamagedError{Path: path, Found: "is empty (0 bytes), although the data directory was in use (" + strings.Join(had, "; ") + ")"}
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: opt.LockTimeout})
	if err != nil {
		return openError(path, pidPath, err)
	}
	err = readPages(db, path, fi.Size(), unclean)
	if cerr := db.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("store: close %s after checking it: %w", path, cerr)
	}
	return err
}

// readPages reads every page of every bucket, as bbolt's own walk at
// open does, and with full runs bbolt's consistency check (tx.Check).
func readPages(db *bolt.DB, path string, size int64, full bool) (err error) {
	// A page past the end of a file cut short is a fault on the mapping:
	// a panic here, not a crash.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = &DamagedError{Path: path, Found: fmt.Sprintf("is damaged: reading its pages failed (%v)", r)}
		}
	}()
	return db.View(func(tx *bolt.Tx) error {
		if tx.Size() > size {
			return &DamagedError{Path: path, Found: fmt.Sprintf("is cut short: it is %d bytes, and its pages reach %d", size, tx.Size())}
		}
		if err := tx.ForEach(func(_ []byte, b *bolt.Bucket) error { readBucket(b); return nil }); err != nil {
			return err
		}
		if !full {
			return nil
		}
		var found []string
		n := 0
		for err := range tx.Check() {
			if n++; n <= maxCheckErrors {
				found = append(found, err.Error())
			}
		}
		if n > 0 {
			if n > maxCheckErrors {
				found = append(found, fmt.Sprintf("and %d more", n-maxCheckErrors))
			}
			return &DamagedError{Path: path, Found: "fails bbolt's consistency check after an unclean stop: " + strings.Join(found, "; ")}
		}
		return nil
	})
}

// readBucket visits every key of b and of the buckets in it: every branch
// and leaf page, each of which bbolt checks as it reads it.
func readBucket(b *bolt.Bucket) {
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if v == nil {
			if nb := b.Bucket(k); nb != nil {
				readBucket(nb)
			}
		}
	}
}

// openWritable opens the file for writing. preflight read its pages
// already; a panic that bbolt still raises here (in its own walk, on what
// the read missed) is turned into a DamagedError. bbolt then keeps the file
// descriptor and its lock: the controller is about to exit anyway.
func openWritable(path, pidPath string, opt Options) (db *bolt.DB, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, &DamagedError{Path: path, Found: fmt.Sprintf("is damaged: opening it failed (%v)", r)}
		}
	}()
	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: opt.LockTimeout, FreelistType: bolt.FreelistMapType, NoFreelistSync: true})
	if err != nil {
		return nil, openError(path, pidPath, err)
	}
	return db, nil
}

// openError explains why bbolt did not open path: another process holds
// it (named from its pid file), the file is not a database (a DamagedError),
// or the system refused.
func openError(path, pidPath string, err error) error {
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		holder := "another process"
		if b, rerr := os.ReadFile(pidPath); rerr == nil {
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
				holder = fmt.Sprintf("another vlmfleet (pid %d)", pid)
			}
		}
		return fmt.Errorf("store: database %s is locked by %s; stop it or use another --data-dir", path, holder)
	case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrChecksum), errors.Is(err, bolterrors.ErrVersionMismatch):
		return &DamagedError{Path: path, Found: fmt.Sprintf("is damaged: its first pages do not describe a database (%v)", err)}
	}
	return fmt.Errorf("store: open %s: %w", path, err)
}

// writePid records this process as the file's holder, for the lock error of
// a second one and as the sign of an unclean stop (Close removes it). It
// is written beside the file and renamed over the old one, so a symbolic
// link planted in its place is replaced, never followed.
func writePid(pidPath string) error {
	_, err := atomicfile.Write(pidPath, 0o600, func(w io.Writer) error {
		_, err := io.WriteString(w, strconv.Itoa(os.Getpid())+"\n")
		return err
	})
	return err
}
