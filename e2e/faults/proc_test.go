package faults

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/internal/backoff"
)

// proc is one process the test runs, its output in a log file that the
// test shows the end of when it fails.
type proc struct {
	t    testing.TB
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	// quiet keeps the log out of a failed test's output.
	quiet bool
}

// start runs bin with args, logging to <logDir>/<name>.log (appended to,
// so that a restart continues the same log).
func start(t testing.TB, logDir, name, bin string, args ...string) *proc {
	t.Helper()
	path := filepath.Join(logDir, name+".log")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = os.Environ()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{t: t, name: name, cmd: cmd, log: path, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() && !p.quiet {
			p.showLog()
		}
	})
	return p
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill ends the process with SIGKILL, as a crash or the OOM killer does,
// and waits for it.
func (p *proc) kill() {
	if !p.exited() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-p.done
}

func (p *proc) signal(sig syscall.Signal) {
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal %s to %s: %v", sig, p.name, err)
	}
}

// waitLogged waits until the process's output holds text, and fails the
// test if the process exits first.
func (p *proc) waitLogged(ctx context.Context, text string) {
	p.t.Helper()
	err := poll.Retry(ctx, func(int) error {
		if data, err := os.ReadFile(p.log); err == nil && bytes.Contains(data, []byte(text)) {
			return nil
		}
		if p.exited() {
			return backoff.Permanent(fmt.Errorf("%s exited", p.name))
		}
		return errors.New("not yet")
	})
	if err != nil {
		p.t.Fatalf("%s never logged %q: %v", p.name, text, err)
	}
}

// showLog logs the end of the process's output.
func (p *proc) showLog() {
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

func dialTCP(addr string) (net.Conn, error) { return net.DialTimeout("tcp", addr, time.Second) }
