package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteIsWholeOrNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	n, err := Write(path, 0o644, func(w io.Writer) error { _, err := io.WriteString(w, "first"); return err })
	if err != nil || n != 5 {
		t.Fatalf("write: %d, %v", n, err)
	}
	boom := errors.New("boom")
	if _, err := Write(path, 0o644, func(w io.Writer) error { _, _ = io.WriteString(w, "half"); return boom }); !errors.Is(err, boom) {
		t.Fatalf("failed write returned %v, want boom", err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "first" {
		t.Errorf("after a failed write the file holds %q (%v), want the old content", got, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files left in the directory, want 1 (no temporary files)", len(ents))
	}
}
