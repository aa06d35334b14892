package telemetry

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
