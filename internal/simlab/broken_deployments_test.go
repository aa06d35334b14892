package simlab_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/agent"
	"github.com/vlmfleet/vlmfleet/agent/engine"
	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/internal/simlab"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// One wrong deployment in an agent's configuration no longer stops the
// agent: it serves the others and announces the broken one with the
// reason, which the controller shows and gives when a sweep asks for it.
// An agent with nothing valid still starts and announces why (issue 9).
func TestAgentWithBrokenDeployments(t *testing.T) {
	l := newLab(t, testContext(t, 90*time.Second), simlab.Options{})
	ctl := l.Controller()
	views := make(chan controller.AgentView, 64)
	t.Cleanup(ctl.OnEvent(func(ev controller.Event) {
		if v, ok := ev.Data.(controller.AgentView); ok && ev.Kind == controller.EventAgent {
			select {
			case views <- v:
			default:
			}
		}
	}))

	sim, err := agent.SimulatedDeployments("Jetson AGX Orin", 50, "Cosmos3-Edge")
	if err != nil {
		t.Fatal(err)
	}
	// No model roots are configured, so no model file may be used.
	broken := agent.DeploymentConfig{ID: "tiny-q8", Model: "Tiny", Engine: engine.Config{Kind: engine.KindLlamaCpp, Model: "tiny.gguf", MMProj: "mmproj-tiny.gguf"}}
	const why = `deployments[1].engine: model: "tiny.gguf": no model roots are configured`
	start := func(id string, deps ...agent.DeploymentConfig) controller.AgentView {
		t.Helper()
		seed, err := ctl.EnrolAgent(l.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		a, err := agent.New(agent.Config{ID: id, NATSURL: ctl.NATSURL(), NATSSeed: seed, Deployments: deps,
			Simulate: "Jetson AGX Orin", SimSpeedup: 50, LogDir: t.TempDir()}, agent.Options{})
		if err != nil {
			t.Fatalf("agent %s refused to start: %v", id, err)
		}
		ctx, stop := context.WithCancel(l.ctx)
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx) }()
		t.Cleanup(func() {
			stop()
			if err := <-done; err != nil {
				t.Errorf("agent %s: %v", id, err)
			}
		})
		for {
			select {
			case v := <-views:
				if v.ID == id {
					return v
				}
			case err := <-done:
				t.Fatalf("agent %s ended before announcing itself: %v", id, err)
			case <-l.ctx.Done():
				t.Fatalf("agent %s never announced itself", id)
			}
		}
	}

	mixed := start("mixed", sim[0], broken)
	if len(mixed.Deployments) != 1 || mixed.Deployments[0].ID != sim[0].ID {
		t.Errorf("mixed offers %+v, want %s alone", mixed.Deployments, sim[0].ID)
	}
	if len(mixed.BrokenDeployments) != 1 || mixed.BrokenDeployments[0].ID != "tiny-q8" ||
		!strings.Contains(mixed.BrokenDeployments[0].Reason, why) {
		t.Errorf("mixed announces broken %+v, want tiny-q8: %s", mixed.BrokenDeployments, why)
	}
	_, err = l.Submit(l.ctx, protocol.Sweep{Agents: []string{"mixed"}, Deployments: []string{"tiny-q8"}, Workload: tinyWorkload(1)})
	if err == nil || !strings.Contains(err.Error(), `"tiny-q8" cannot run: on agent mixed its configuration is wrong: `+why) {
		t.Errorf("sweep of the broken deployment: %v, want a refusal with the reason", err)
	}
	// The valid deployment is measured as ever.
	l.waitState(l.submit("mixed", tinyWorkload(1)), protocol.JobCompleted, 1)

	none := start("nothing-valid", agent.DeploymentConfig{ID: "x", Model: "M", Engine: broken.Engine}, broken)
	if len(none.Deployments) != 0 || len(none.BrokenDeployments) != 2 || !none.Online {
		t.Errorf("nothing-valid: online %v, offers %+v, broken %+v", none.Online, none.Deployments, none.BrokenDeployments)
	}
	_, err = l.Submit(l.ctx, protocol.Sweep{Agents: []string{"nothing-valid"}, Workload: tinyWorkload(1)})
	if err == nil || !strings.Contains(err.Error(), "offer no deployment: on agent nothing-valid its configuration is wrong: deployments[0].engine") {
		t.Errorf("sweep of an agent with nothing valid: %v", err)
	}
}
