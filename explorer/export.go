package explorer

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/vlmfleet/vlmfleet/explorer/web"
)

// Export writes the explorer page with ds inside: one self-contained HTML
// file that works offline.
func Export(w io.Writer, ds Dataset) error {
	data, err := json.Marshal(ds)
	if err != nil {
		return fmt.Errorf("encoding the dataset: %w", err)
	}
	if err := web.Export(w, data); err != nil {
		return fmt.Errorf("writing the page: %w", err)
	}
	return nil
}

// ExportFile writes the page to path and returns its size. It writes
// through a temporary file in the same directory, so a failed export never
// leaves half a page where the old one was.
func ExportFile(path string, ds Dataset) (int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return 0, fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	cw := &countingWriter{w: tmp}
	if err := Export(cw, ds); err != nil {
		tmp.Close()
		return 0, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return 0, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return 0, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
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
