package simlab_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/harness/simlab"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Submit waits for the agents a sweep names: it fails with the
// controller's reason when none comes in time, and succeeds once one
// announces itself while it waits. AddAgent gives up on an agent that
// cannot announce itself. Wait returns when both agents' sweeps
// have ended, and a restarted agent announces itself again.
func TestHarness(t *testing.T) {
	l := newLab(t, testContext(t, 60*time.Second), simlab.Options{ReadyTimeout: 300 * time.Millisecond})

	_, err := l.Submit(l.ctx, protocol.Sweep{Agents: []string{"late"}, Workload: tinyWorkload(1)})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "never announced") {
		t.Fatalf("submit for an agent that never came: %v", err)
	}
	if _, err := l.Submit(l.ctx, protocol.Sweep{Workload: protocol.Workload{}}); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("an invalid sweep must be refused at once, got %v", err)
	}
	if _, err := l.AddAgent(l.ctx, simlab.Device{ID: "x", Device: "No Such Device", Speedup: 1}); err == nil {
		t.Fatal("an agent on a device with no simulated profile was started")
	}
	unreachable := agx("lost")
	unreachable.NATSURL = "nats://127.0.0.1:1"
	if _, err := l.AddAgent(l.ctx, unreachable); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("an agent that cannot reach NATS: %v", err)
	}

	l = newLab(t, l.ctx, simlab.Options{})
	submitted := make(chan error, 1)
	var late protocol.Sweep
	go func() {
		var err error
		late, err = l.Submit(l.ctx, protocol.Sweep{Agents: []string{"late"}, Workload: tinyWorkload(1)})
		submitted <- err
	}()
	l.startAgent(agx("late"))
	if err := <-submitted; err != nil {
		t.Fatal(err)
	}
	a := l.startAgent(agx("other"))
	other, err := l.Submit(l.ctx, protocol.Sweep{Agents: []string{"other"}, Workload: tinyWorkload(1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Wait(l.ctx, late, other); err != nil {
		t.Fatal(err)
	}
	for _, id := range append(late.Jobs, other.Jobs...) {
		if j, err := l.Controller().Job(l.ctx, id); err != nil || j.State != protocol.JobCompleted {
			t.Fatalf("job %s after Wait: %s %v", id, j.State, err)
		}
	}

	// Restarted under the same id, the agent counts as added only once its
	// new announcement is stored, and takes jobs again.
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	l.startAgent(agx("other"))
	l.waitState(l.submit("other", tinyWorkload(1)), protocol.JobCompleted, 1)
}
