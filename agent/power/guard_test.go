package power

import (
	"os"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// The simulated switcher lists the simulated device's modes and switches
// among them; a guard over it restores from its file, as after a kill.
func TestSimulatedSwitchesAndAGuardFileRestores(t *testing.T) {
	ctx := testContext(t)
	modes, found := NewSimulated("Jetson Orin NX").modes, NewSimulated("Jetson Orin NX").mode
	if len(modes) < 2 {
		t.Fatalf("the simulated Orin NX has modes %v", modes)
	}
	other := modes[1].Name
	dir := t.TempDir()
	sim := NewSimulated("Jetson Orin NX")
	if err := NewGuard(dir, sim).Switch(ctx, protocol.PowerSetting{Mode: other}); err != nil {
		t.Fatal(err)
	}
	// The agent was killed here: the next start's guard restores.
	g := NewGuard(dir, sim)
	if !g.Pending() {
		t.Fatal("no guard file after a switch")
	}
	if restored, err := g.Restore(ctx); err != nil || restored.Mode != found {
		t.Fatalf("restore: %v, %v", restored, err)
	}
	if cur, _ := sim.Current(ctx); cur.Mode != found {
		t.Errorf("after the restore: %s, want %s", cur.Mode, found)
	}
	if err := sim.Set(ctx, protocol.PowerSetting{Mode: "99W"}); err == nil || !strings.Contains(err.Error(), "its modes: "+modes[0].Name) {
		t.Errorf("unknown mode: %v", err)
	}
	gpu := NewSimulated("RTX PRO 6000")
	if pc, _ := gpu.Control(ctx); len(pc.Modes) != 0 || !pc.Switchable || pc.LimitW != 600 || pc.MinLimitW != 150 {
		t.Errorf("a simulated GPU host: %+v, want its 150-600 W limit, switchable", pc)
	}
	if err := gpu.Set(ctx, protocol.PowerSetting{LimitW: 450}); err != nil {
		t.Fatal(err)
	}
	if cur, _ := gpu.Current(ctx); cur.LimitW != 450 {
		t.Errorf("a simulated GPU host after setting 450 W: %+v", cur)
	}
	if err := gpu.Set(ctx, protocol.PowerSetting{LimitW: 700}); err == nil || !strings.Contains(err.Error(), "150-600 W") {
		t.Errorf("a limit out of range: %v", err)
	}
}

// A guard file that cannot say what to restore is removed with an error.
func TestGuardDropsAnUnreadableFile(t *testing.T) {
	ctx := testContext(t)
	dir := t.TempDir()
	g := NewGuard(dir, NewSimulated("Jetson Orin NX"))
	if err := os.WriteFile(g.Path(), []byte(`{"found":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Restore(ctx); err == nil || !strings.Contains(err.Error(), "found: empty") || !strings.Contains(err.Error(), "removed") {
		t.Fatalf("restore: %v", err)
	}
	if g.Pending() {
		t.Error("the unreadable file is still there")
	}
}

func FuzzDecodeGuard(f *testing.F) {
	f.Add([]byte(`{"found":{"mode":"MAXN"},"since":"2026-12-03T11:00:00Z"}`))
	f.Add([]byte(`{"found":{"limit_w":300},"since":"2026-12-03T11:00:00Z"}`))
	f.Add([]byte(`{"found":{"mode":"MAXN","limit_w":3}}`))
	f.Add([]byte(`{"found":{"mode":"a b"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := decodeGuard(data)
		if err != nil {
			return
		}
		if rec.Found.IsZero() || rec.Found.Validate("found") != nil {
			t.Fatalf("accepted %+v", rec)
		}
	})
}
