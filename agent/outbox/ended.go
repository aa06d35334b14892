package outbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/vlmfleet/vlmfleet/internal/atomicfile"
)

// endedName is the file in the spool that lists the jobs the agent ended
// last, one id a line. It outlives a restart so that a job which ended
// while the link was down, and which JetStream delivers again once it is
// back (its ack never arrived), is acknowledged rather than measured twice
// by an agent restarted meanwhile.
const endedName = "ended-jobs"

// maxEnded bounds the list as read, whatever the file holds.
const maxEnded = 1024

// Ended is the list of ended jobs as the previous run saved it, oldest
// first.
func (o *Outbox) Ended() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.ended...)
}

// SaveEnded replaces the list of ended jobs, synced to disk.
func (o *Outbox) SaveEnded(ids []string) error {
	path := filepath.Join(o.dir, endedName)
	_, err := atomicfile.Write(path, 0o600, func(w io.Writer) error {
		for _, id := range ids {
			if strings.ContainsAny(id, "\n\r") {
				return fmt.Errorf("job id %q has a line break", id)
			}
			if _, err := io.WriteString(w, id+"\n"); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = syncDir(o.dir)
	}
	if err == nil {
		o.mu.Lock()
		o.ended = append([]string(nil), ids...)
		o.mu.Unlock()
	}
	return err
}

// loadEnded reads the list; a missing file is an empty list.
func loadEnded(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseEnded(b), nil
}

// parseEnded keeps the non-empty lines, the last maxEnded of them.
func parseEnded(b []byte) []string {
	var ids []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<10)
	for sc.Scan() {
		if id := strings.TrimSpace(sc.Text()); id != "" {
			ids = append(ids, id)
		}
	}
	if len(ids) > maxEnded {
		ids = ids[len(ids)-maxEnded:]
	}
	return ids
}
