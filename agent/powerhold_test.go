package agent

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/agent/power"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// A job said to be queued that never comes: the hold restores after
// restore_after anyway; one that comes first keeps the power.
func TestPowerHoldRestoresWhenTheQueuedJobDoesNotCome(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sim := power.NewSimulated("Jetson Orin NX")
	found, _ := sim.Current(ctx)
	h := &powerHold{guard: power.NewGuard(t.TempDir(), sim), log: zerolog.Nop(), after: 20 * time.Millisecond}
	if now, err := h.begin(ctx, protocol.PowerSetting{Mode: "10W"}); err != nil || now.Mode != "10W" {
		t.Fatalf("begin: %v, %v", now, err)
	}
	// Queued, and the next job begins in time: still switched, from 10W.
	h.end(ctx, true)
	if now, err := h.begin(ctx, protocol.PowerSetting{Mode: "15W"}); err != nil || now.Mode != "15W" || !h.pending() {
		t.Fatalf("second begin: %v, %v, pending %v", now, err, h.pending())
	}
	h.end(ctx, true)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for h.pending() {
		select {
		case <-ctx.Done():
			t.Fatal("never restored after restore_after")
		case <-tick.C:
		}
	}
	if cur, _ := sim.Current(ctx); cur != found || h.current() != found {
		t.Errorf("after the restore: device %v, reported %v, want %v", cur, h.current(), found)
	}
	// A job that sets nothing restores first.
	if _, err := h.begin(ctx, protocol.PowerSetting{Mode: "10W"}); err != nil {
		t.Fatal(err)
	}
	if now, err := h.begin(ctx, protocol.PowerSetting{}); err != nil || now != found || h.pending() {
		t.Errorf("as found: %v, %v, pending %v", now, err, h.pending())
	}
}
