package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/controller/client"
	"github.com/vlmfleet/vlmfleet/harness/labtest"
)

// Ctrl-C during `sweep --wait` says that the sweep goes on, with the
// commands to follow it again and to cancel it, and exits 130; the sweep
// is left as it was.
func TestSweepWaitInterruptedSaysTheSweepGoesOn(t *testing.T) {
	l := labtest.Start(t, controller.Options{})
	url := l.Ctl.HTTPURL()
	cmd := exec.CommandContext(l.Ctx, os.Args[0], "sweep", "--controller", url, "--agents", "a1", "--sizes", "720p",
		"--cameras", "1", "--multi-sizes", "none", "--requests", "2", "--wait")
	cmd.Env = append(append(os.Environ(), asCLI+"=1"), "VLMFLEET_TOKEN="+l.Ctl.APIToken())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The first line names the sweep once it is submitted; the signal
	// handler was set before the command ran.
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		t.Fatalf("no output: %s", errb.String())
	}
	first := sc.Text()
	id, _, ok := strings.Cut(strings.TrimPrefix(first, "sweep "), ":")
	if !ok || !strings.HasPrefix(first, "sweep ") {
		t.Fatalf("first line %q, want the sweep's id", first)
	}
	go func() {
		for sc.Scan() {
		}
	}()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit %d, want 130; stderr:\n%s", code, errb.String())
	}
	for _, want := range []string{
		"vlmfleet sweep: interrupted; sweep " + id + " goes on on the controller",
		"follow it again: vlmfleet sweep watch --controller " + url + " " + id,
		"cancel it:       vlmfleet sweep cancel --controller " + url + " " + id,
	} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}
	if strings.Contains(errb.String(), "context canceled") {
		t.Errorf("stderr says %q", errb.String())
	}
	cl, err := client.New(url, client.WithToken(l.Ctl.APIToken()))
	if err != nil {
		t.Fatal(err)
	}
	v, err := cl.Sweep(l.Ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if v.Status.Done {
		t.Errorf("sweep %s ended with the wait: %+v", id, v.Status)
	}
}
