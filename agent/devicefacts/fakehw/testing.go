package fakehw

import (
	"fmt"
	"os"
	"testing"
)

// Main builds the fake tools once for a package's tests, stores the binary's
// path in *binary, runs the tests and removes the build. Call it from
// TestMain: os.Exit(fakehw.Main(m, &fakeBinary)).
func Main(m *testing.M, binary *string) int {
	dir, err := os.MkdirTemp("", "fakehw-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if *binary, err = Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// Scenario lays out a fixture system root ("" for an empty one) and the
// fake tools of cfg; it returns the root and a PATH holding only the fakes.
func Scenario(t testing.TB, binary, sysroot string, cfg Config) (root, path string) {
	t.Helper()
	root = t.TempDir()
	if sysroot != "" {
		if err := WriteSysroot(sysroot, root); err != nil {
			t.Fatal(err)
		}
	}
	path = t.TempDir()
	if err := Install(path, binary, cfg); err != nil {
		t.Fatal(err)
	}
	return root, path
}
