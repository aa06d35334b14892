package private

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file its group or others may read is refused with the chmod that
// fixes it; one only its owner may read or write is taken.
func TestFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(p, []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}
	for mode, ok := range map[os.FileMode]bool{0o600: true, 0o400: true, 0o640: false, 0o604: false, 0o660: false} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		err = File(p, fi)
		if ok != (err == nil) || !ok && !strings.Contains(err.Error(), "run chmod 600 "+p) {
			t.Errorf("mode %04o: %v", mode, err)
		}
	}
}

// A missing directory is made 0700; one of the caller's own that others
// may use is made 0700 and its old mode returned; one its group may only
// read is left. One that is not the caller's, or has the sticky bit (a
// shared directory), is refused, not closed to the others.
func TestMkdirAll(t *testing.T) {
	mine := func(string) bool { return true }
	dir := filepath.Join(t.TempDir(), "a", "b")
	if was, err := MkdirAll(dir, mine); err != nil || was != 0 {
		t.Fatalf("new: %v, %04o", err, was)
	}
	for mode, want := range map[os.FileMode]os.FileMode{0o755: 0o755, 0o770: 0o770, 0o750: 0, 0o700: 0} {
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		was, err := MkdirAll(dir, mine)
		if err != nil || was != want {
			t.Errorf("at %04o: %v, was %04o; want %04o", mode, err, was, want)
		}
		fi, _ := os.Stat(dir)
		if wantNow := map[bool]os.FileMode{true: 0o700, false: mode}[want != 0]; fi.Mode().Perm() != wantNow {
			t.Errorf("at %04o: now %04o, want %04o", mode, fi.Mode().Perm(), wantNow)
		}
	}
}

func TestMkdirAllLeavesSharedDirectories(t *testing.T) {
	dir := t.TempDir()
	if !Empty(dir) {
		t.Fatalf("a new temp dir is not empty")
	}
	if err := os.WriteFile(filepath.Join(dir, "theirs"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o755, 0o777 | os.ModeSticky} {
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		_, err := MkdirAll(dir, func(d string) bool { return Empty(d) || mode&os.ModeSticky != 0 })
		if err == nil || !strings.Contains(err.Error(), "give the controller a directory of its own, or run chmod 700 "+dir) {
			t.Errorf("at %v: %v; want it refused", mode, err)
		}
		if fi, _ := os.Stat(dir); fi.Mode() != mode|os.ModeDir {
			t.Errorf("at %v: made %v", mode, fi.Mode())
		}
	}
}
