package agent

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
)

// bootIDFile names this boot of the host: a cloned system image keeps its
// hostname and paths, never this.
const bootIDFile = "/proc/sys/kernel/random/boot_id"

// newInstance names one process of the agent (protocol.AgentHello.Instance).
func newInstance() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// spoolLockName names the spool lock a process holds: its host, this boot
// and the spool directory, hashed. Two live processes cannot hold one
// spool, so a process naming the same lock as the one the controller
// heard last is that one restarted, not a second.
func spoolLockName(host, spoolDir string) string {
	boot, _ := os.ReadFile(bootIDFile)
	sum := sha256.Sum256([]byte(strings.TrimSpace(string(boot)) + "\x00" + host + "\x00" + spoolDir))
	return hex.EncodeToString(sum[:8])
}

// DuplicateError is the stop of an agent process the controller refused:
// another process runs with its id.
type DuplicateError struct {
	AgentID string
	// Reason is the controller's: who holds the id, and what to do.
	Reason string
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("the controller refused this process of agent %s: %s", e.AgentID, e.Reason)
}
