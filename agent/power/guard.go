package power

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vlmfleet/vlmfleet/internal/atomicfile"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// GuardFile is the name of the guard's file in the agent's spool directory.
const GuardFile = "power-restore.json"

// RestoreTimeout bounds a restore: the switch and the wait for its clocks.
const RestoreTimeout = DefaultSettle + 30*time.Second

// Guard switches a device and puts it back: before the first switch it
// writes down what it found, in a file, so that an agent killed before it
// restored restores at its next start.
type Guard struct {
	sw   Switcher
	path string
}

// NewGuard keeps its file in dir (the agent's spool directory: the
// agent's own, private and kept across reboots).
func NewGuard(dir string, sw Switcher) *Guard {
	return &Guard{sw: sw, path: filepath.Join(dir, GuardFile)}
}

// Switcher is the switcher the guard drives.
func (g *Guard) Switcher() Switcher { return g.sw }

// Path is the guard's file.
func (g *Guard) Path() string { return g.path }

// guardRecord is the file's content.
type guardRecord struct {
	// Found is the power the device ran in before the agent switched it.
	Found protocol.PowerSetting `json:"found"`
	Since time.Time             `json:"since"`
}

// Pending says that the device was switched and not yet put back.
func (g *Guard) Pending() bool {
	_, err := os.Stat(g.path)
	return err == nil
}

// Switch switches to s, writing down what the device ran in first unless
// a previous switch did (the device is then already away from what was
// found). A switch that fails is undone at once: the error says what was
// restored, or why not.
func (g *Guard) Switch(ctx context.Context, s protocol.PowerSetting) error {
	if !g.Pending() {
		found, err := g.sw.Current(ctx)
		if err != nil {
			return fmt.Errorf("power %s: cannot tell what to restore afterwards: %w", s, err)
		}
		if found.IsZero() {
			return fmt.Errorf("power %s: the device reports no power setting to restore afterwards", s)
		}
		rec := guardRecord{Found: found, Since: time.Now().UTC()}
		if _, err := atomicfile.Write(g.path, 0o600, func(w io.Writer) error { return json.NewEncoder(w).Encode(rec) }); err != nil {
			return fmt.Errorf("power %s: write down what to restore: %w", s, err)
		}
	}
	err := g.sw.Set(ctx, s)
	if err == nil {
		return nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RestoreTimeout)
	defer cancel()
	restored, rerr := g.Restore(rctx)
	if rerr != nil {
		return fmt.Errorf("%w; putting the device back failed too: %v", err, rerr)
	}
	if strings.Contains(err.Error(), "stays in "+restored.String()) {
		return err // the switcher said so already
	}
	return fmt.Errorf("%w; the device is back in %s", err, restored)
}

// Restore puts the device back in what the file says it was found in and
// removes the file; nothing to do without one. A file that cannot be read
// is removed with an error: it can never say what to restore.
func (g *Guard) Restore(ctx context.Context) (protocol.PowerSetting, error) {
	b, err := os.ReadFile(g.path)
	if errors.Is(err, os.ErrNotExist) {
		return protocol.PowerSetting{}, nil
	}
	if err != nil {
		return protocol.PowerSetting{}, fmt.Errorf("read %s: %w", g.path, err)
	}
	rec, err := decodeGuard(b)
	if err != nil {
		_ = os.Remove(g.path)
		return protocol.PowerSetting{}, fmt.Errorf("%s: %w; removed, the device stays as it is", g.path, err)
	}
	if err := g.sw.Set(ctx, rec.Found); err != nil {
		return protocol.PowerSetting{}, fmt.Errorf("restore power %s (found %s): %w", rec.Found, rec.Since.Format(time.RFC3339), err)
	}
	if err := os.Remove(g.path); err != nil {
		return rec.Found, fmt.Errorf("restored power %s, but %w", rec.Found, err)
	}
	return rec.Found, nil
}

// decodeGuard reads the guard's file, strictly.
func decodeGuard(b []byte) (guardRecord, error) {
	var rec guardRecord
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return guardRecord{}, fmt.Errorf("want {\"found\": {\"mode\": ...} or {\"limit_w\": ...}, \"since\": time}: %w", err)
	}
	if rec.Found.IsZero() {
		return guardRecord{}, fmt.Errorf("found: empty, want the mode or the power limit the device ran in")
	}
	if err := rec.Found.Validate("found"); err != nil {
		return guardRecord{}, err
	}
	return rec, nil
}
