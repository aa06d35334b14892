// Package atomicfile writes a file whole or not at all: through a temporary
// file in the same directory, renamed over the target once complete, so a
// failed write never leaves half a file where the old one was.
package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write writes path with write, with permissions perm, and returns the
// bytes written. The content is synced before the rename, so a crash leaves
// the old file or the new one, never an empty one.
func Write(path string, perm os.FileMode, write func(io.Writer) error) (int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return 0, fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	cw := &countingWriter{w: tmp}
	err = write(cw)
	if err == nil {
		err = tmp.Chmod(perm)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return 0, fmt.Errorf("writing %s: %w", path, err)
	}
	return cw.n, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
