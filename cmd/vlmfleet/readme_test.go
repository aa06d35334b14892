package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// rehearsalMarker precedes the README's block that TestReadmeRehearsal runs.
const rehearsalMarker = "<!-- rehearsal: TestReadmeRehearsal (cmd/vlmfleet) runs this block as written -->"

// readmeBlock returns the fenced sh block that follows marker in the README.
func readmeBlock(t *testing.T, marker string) string {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(data), marker+"\n```sh\n")
	if !ok {
		t.Fatalf("README.md has no ```sh block right after %q", marker)
	}
	block, _, ok := strings.Cut(after, "\n```\n")
	if !ok {
		t.Fatalf("README.md: the block after %q does not end", marker)
	}
	return block + "\n"
}

// cliOnPath makes a directory holding `vlmfleet`: a script that runs this
// test binary as the CLI (TestMain).
func cliOnPath(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := fmt.Sprintf("#!/bin/sh\n%s=1 exec '%s' \"$@\"\n", asCLI, self)
	if err := os.WriteFile(filepath.Join(dir, "vlmfleet"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The README's "Rehearse a lab on one machine", run as written with bash
// (only its ports are free ones): a controller with TLS on, a join token,
// two simulated Orin NX that join, and a sweep over both in two power
// modes that completes with a row per mode.
func TestReadmeRehearsal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
	defer cancel()
	block := readmeBlock(t, rehearsalMarker)
	dir := t.TempDir()
	// At its end, bash stops what the block left running and waits for it,
	// as the README's reader does with kill $(jobs -p).
	script := "trap 'kill $(jobs -p) 2> /dev/null; wait' EXIT\n" + block
	cmd := exec.CommandContext(ctx, "bash", "-e", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), "PATH="+cliOnPath(t)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+dir, "HTTP="+freeAddr(t), "NATS="+freeAddr(t))
	// Its own process group, so that a block that hangs is killed with
	// the controller and the agents it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the README's rehearsal: %v\n%s\n%s", err, out.String(), rehearsalLogs(dir))
	}
	for _, want := range []string{"done: 4 jobs, 4 completed, 0 not", "Jetson Orin NX · 15W", "Jetson Orin NX · 25W", "SIMULATED"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the rehearsal's output lacks %q:\n%s", want, out.String())
		}
	}
}

// cleanEnv is this process's environment without the VLMFLEET_ settings
// a developer's shell may hold, which the block would otherwise follow.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VLMFLEET_") {
			env = append(env, kv)
		}
	}
	return env
}

// rehearsalLogs is the end of each log the block wrote, for a failure.
func rehearsalLogs(dir string) string {
	logs, _ := filepath.Glob(filepath.Join(dir, "rehearsal", "*.log"))
	var b strings.Builder
	for _, l := range logs {
		data, _ := os.ReadFile(l)
		if len(data) > 3000 {
			data = data[len(data)-3000:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", filepath.Base(l), data)
	}
	return b.String()
}
