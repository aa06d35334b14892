//go:build unix

package engine

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
)

// inNewGroup makes the command lead a process group of its own, so that
// Stop reaches the workers vLLM and container runtimes spawn.
func inNewGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup signals every process of the group; a group that no longer
// exists is not an error.
func signalGroup(pgid int, sig syscall.Signal) error {
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// waitStatus exposes how a process ended.
func waitStatus(s *os.ProcessState) (syscall.WaitStatus, bool) {
	ws, ok := s.Sys().(syscall.WaitStatus)
	return ws, ok
}

func sigTerm() syscall.Signal { return syscall.SIGTERM }
func sigKill() syscall.Signal { return syscall.SIGKILL }

// groupAlive reports whether any process of the group still runs. Zombies do
// not count: an orphaned worker waits for its reaper (PID 1), which may never
// come in a container, but it holds no memory.
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		state, pgrp, ok := procStat(filepath.Join("/proc", e.Name(), "stat"))
		if ok && pgrp == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// procStat reads the state and process group from /proc/PID/stat, whose
// second field (the command) may itself contain spaces and parentheses.
func procStat(path string) (state byte, pgrp int, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	// Fields after the command: state, ppid, pgrp, ...
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	pg, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], pg, true
}
