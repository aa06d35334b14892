package faults

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// binaries are the programs the tests run, built once by TestMain.
type binaries struct {
	vlmfleet   string
	natsServer string
}

// bin is set by TestMain before any test runs and only read after.
var bin binaries

func TestMain(m *testing.M) {
	if cfg := os.Getenv(listProbeEnv); cfg != "" {
		os.Exit(runListProbe(cfg))
	}
	if os.Getenv(faultsEnv) == "" && os.Getenv(soakEnv) == "" && os.Getenv(capacityEnv) == "" {
		os.Exit(m.Run()) // every test skips itself
	}
	dir, err := os.MkdirTemp("", "vlmfleet-faults-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := 1
	if bin, err = build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// build builds the vlmfleet binary of this tree and a nats-server of the
// version go.mod names into dir.
func build(dir string) (binaries, error) {
	b := binaries{vlmfleet: filepath.Join(dir, "vlmfleet"), natsServer: filepath.Join(dir, "nats-server")}
	for _, c := range [][]string{
		{"go", "build", "-o", b.vlmfleet, "github.com/vlmfleet/vlmfleet/cmd/vlmfleet"},
		{"go", "build", "-o", b.natsServer, "github.com/nats-io/nats-server/v2"},
	} {
		cmd := exec.Command(c[0], c[1:]...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return b, fmt.Errorf("%v: %w\n%s", c, err, out)
		}
	}
	return b, nil
}
