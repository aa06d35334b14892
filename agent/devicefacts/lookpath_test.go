package devicefacts

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// A tool in the working directory is never run through a relative or empty
// PATH entry; the same tool through an absolute entry is found.
func TestLookPathSkipsRelativeEntries(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "nvidia-smi"), filepath.Join(bin, "nvidia-smi")} {
		if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	sep := string(os.PathListSeparator)
	for _, list := range []string{".", "", "bin", "./bin", sep + "." + sep, "." + sep + "bin"} {
		got, err := LookPath(list, "nvidia-smi")
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("LookPath(%q) = %q, %v; want not found", list, got, err)
		}
	}
	got, err := LookPath("."+sep+bin, "nvidia-smi")
	if err != nil || got != filepath.Join(bin, "nvidia-smi") {
		t.Errorf("LookPath(%q) = %q, %v; want %s", "."+sep+bin, got, err, filepath.Join(bin, "nvidia-smi"))
	}
}
