package devicefacts

import (
	"fmt"
	"os"
	"testing"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts/fakehw"
)

// fakeBinary is the fake tools binary TestMain builds once for all tests.
var fakeBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fakehw-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakeBinary, err = fakehw.Build(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// scenario lays out a fixture system root (or none for "") and the fake
// tools of cfg, and returns the root and a PATH with only the fakes.
func scenario(t *testing.T, sysroot string, cfg fakehw.Config) (root, path string) {
	t.Helper()
	root = t.TempDir()
	if sysroot != "" {
		if err := fakehw.WriteSysroot(sysroot, root); err != nil {
			t.Fatal(err)
		}
	}
	path = t.TempDir()
	if err := fakehw.Install(path, fakeBinary, cfg); err != nil {
		t.Fatal(err)
	}
	return root, path
}
