package engine

import (
	"errors"
	"fmt"
	"strings"
)

// ErrOutOfMemory matches (errors.Is) an *Error whose log says the engine ran
// out of memory, the common failure on a 16 GB Jetson Orin NX.
var ErrOutOfMemory = errors.New("the engine ran out of memory")

// Phases of an engine failure.
const (
	PhaseStartup = "startup"
	PhaseRunning = "running"
)

// Error is an engine that failed: it exited, or never became ready.
type Error struct {
	Kind  string // adapter kind
	Phase string // PhaseStartup or PhaseRunning
	// Reason says what happened: "exited during startup: exit status 1",
	// "not ready after 10m0s: ...".
	Reason  string
	OOM     bool
	LogFile string
	LogTail string
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: engine %s", e.Kind, e.Reason)
	if e.OOM {
		b.WriteString(" (out of memory: the model, its context or the camera level does not fit; see the log tail)")
	}
	if e.LogFile != "" {
		fmt.Fprintf(&b, "; log %s", e.LogFile)
	}
	if t := strings.TrimRight(e.LogTail, "\n"); t != "" {
		b.WriteString("; log tail:\n")
		b.WriteString(t)
	} else {
		b.WriteString("; the log is empty")
	}
	return b.String()
}

// Is lets errors.Is(err, ErrOutOfMemory) find an out-of-memory failure.
func (e *Error) Is(target error) bool { return target == ErrOutOfMemory && e.OOM }

// oomMarkers are what vLLM (PyTorch), llama.cpp (ggml-cuda) and the kernel
// print when memory runs out.
func oomMarkers() []string {
	return []string{
		"out of memory",
		"outofmemory",
		"cudaerrormemoryallocation",
		"failed to allocate",
		"not enough memory",
		"no available memory for the cache blocks",
		"insufficient memory",
		"oom-kill",
		"killed process",
	}
}

// looksOOM reports whether a log tail says memory ran out.
func looksOOM(tail string) bool {
	t := strings.ToLower(tail)
	for _, m := range oomMarkers() {
		if strings.Contains(t, m) {
			return true
		}
	}
	return false
}

// bindFailed reports whether the engine could not listen on its port, which
// another process may have taken between our probe and its bind.
func bindFailed(tail string) bool {
	t := strings.ToLower(tail)
	return strings.Contains(t, "address already in use") ||
		strings.Contains(t, "couldn't bind") ||
		strings.Contains(t, "could not bind")
}
