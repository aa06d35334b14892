// Package proctest runs the real processes of the tests that need them
// (a controller, an agent, a nats-server to kill -9), each with its output
// in a log file that a failed test shows the end of. Only tests import it.
package proctest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/internal/backoff"
)

// Proc is one process a test runs.
type Proc struct {
	t    testing.TB
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	// Quiet keeps the log out of a failed test's output (a soak's many
	// agents).
	Quiet bool
}

// Start starts cmd, its output appended to the file logPath (so that a
// restart continues the same log), and kills it when the test ends.
func Start(t testing.TB, name, logPath string, cmd *exec.Cmd) *Proc {
	t.Helper()
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &Proc{t: t, name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() && !p.Quiet {
			p.ShowLog()
		}
	})
	return p
}

// Pid is the process's id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited says whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Kill ends the process with SIGKILL, as a crash or the OOM killer does,
// and waits for it.
func (p *Proc) Kill() {
	if !p.Exited() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-p.done
}

// Signal sends sig, failing the test when it cannot be sent.
func (p *Proc) Signal(sig syscall.Signal) {
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal %s to %s: %v", sig, p.name, err)
	}
}

// logPace is how often WaitLogged reads the log.
var logPace = backoff.Policy{First: 50 * time.Millisecond, Max: 500 * time.Millisecond}

// WaitLogged waits until the process's output holds text and returns the
// output; the process exiting first fails the test.
func (p *Proc) WaitLogged(ctx context.Context, text string) string {
	p.t.Helper()
	var out []byte
	err := logPace.Retry(ctx, func(int) error {
		out, _ = os.ReadFile(p.log)
		if bytes.Contains(out, []byte(text)) {
			return nil
		}
		if p.Exited() {
			return backoff.Permanent(fmt.Errorf("%s exited", p.name))
		}
		return errors.New("not yet")
	})
	if err != nil {
		p.t.Fatalf("%s never logged %q: %v", p.name, text, err)
	}
	return string(out)
}

// ShowLog logs the end of the process's output.
func (p *Proc) ShowLog() {
	data, err := os.ReadFile(p.log)
	if err != nil {
		return
	}
	const tail = 6 << 10
	if len(data) > tail {
		data = data[len(data)-tail:]
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	p.t.Logf("--- end of %s's output (%s) ---\n%s", p.name, p.log, data)
}
