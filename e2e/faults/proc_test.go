package faults

import (
	"net"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/internal/testutil/proctest"
)

// proc is one process the test runs, its output in a log file that the
// test shows the end of when it fails.
type proc = proctest.Proc

// start runs bin with args, logging to <logDir>/<name>.log (appended to,
// so that a restart continues the same log).
func start(t testing.TB, logDir, name, bin string, args ...string) *proc {
	t.Helper()
	return proctest.Start(t, name, filepath.Join(logDir, name+".log"), exec.Command(bin, args...))
}

func dialTCP(addr string) (net.Conn, error) { return net.DialTimeout("tcp", addr, time.Second) }
