package engine

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Tail limits: the tail attached to errors and kept in Info().LogTail.
const (
	tailLines = 40
	tailBytes = 8 << 10
)

// openLog creates <dir>/<kind>-<time>.log. The engine writes to the file
// directly (no pipe through the agent), so its output survives an agent
// crash and a grandchild holding the descriptor cannot stall us.
func openLog(dir, kind string) (*os.File, error) {
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "vlmfleet-engine-logs")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("log dir: %w", err)
	}
	stamp := time.Now().UTC().Format("20060102T150405.000Z")
	for i := 0; ; i++ {
		name := fmt.Sprintf("%s-%s.log", kind, stamp)
		if i > 0 {
			name = fmt.Sprintf("%s-%s-%d.log", kind, stamp, i)
		}
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o640)
		if os.IsExist(err) && i < 100 {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("log file: %w", err)
		}
		return f, nil
	}
}

// readTail returns the last n lines of the file at path, from at most its
// last maxBytes bytes (a partial first line is dropped).
func readTail(path string, n, maxBytes int) string {
	if path == "" || n <= 0 {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	off := fi.Size() - int64(maxBytes)
	if off < 0 {
		off = 0
	}
	buf, err := io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
	if err != nil {
		return ""
	}
	s := string(buf)
	if off > 0 {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	return lastLines(s, n)
}

// lastLines keeps the last n lines of s, without a trailing newline.
func lastLines(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	if s == "" || n <= 0 {
		return ""
	}
	end := len(s)
	for i := 0; i < n; i++ {
		j := strings.LastIndexByte(s[:end], '\n')
		if j < 0 {
			return s
		}
		end = j
	}
	return s[end+1:]
}
