package simlab_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/agent"
	"github.com/vlmfleet/vlmfleet/agent/engine"
	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/harness/simlab"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// agentRunner starts real agents with configurations of the test's own
// against the lab's controller and waits for the controller's view of
// each announcement.
type agentRunner struct {
	l     *testLab
	views chan api.AgentView
	seeds map[string]string
}

func newAgentRunner(t *testing.T, l *testLab) *agentRunner {
	r := &agentRunner{l: l, views: make(chan api.AgentView, 64), seeds: map[string]string{}}
	t.Cleanup(l.Controller().OnEvent(func(ev api.Event) {
		if v, ok := ev.Data.(api.AgentView); ok && ev.Kind == api.EventAgent {
			select {
			case r.views <- v:
			default:
			}
		}
	}))
	return r
}

// start runs agent id with deps until stop (or the test's end) and
// returns the controller's view of its announcement.
func (r *agentRunner) start(t *testing.T, id string, deps ...agent.DeploymentConfig) (view api.AgentView, stop func()) {
	t.Helper()
	seed, ok := r.seeds[id]
	if !ok {
		var err error
		if seed, err = r.l.Controller().EnrolAgent(r.l.ctx, id); err != nil {
			t.Fatal(err)
		}
		r.seeds[id] = seed
	}
	a, err := agent.New(agent.Config{ID: id, NATSURL: r.l.Controller().NATSURL(), NATSSeed: seed, Deployments: deps,
		Simulate: "Jetson AGX Orin", SimSpeedup: 50, LogDir: t.TempDir()}, agent.Options{})
	if err != nil {
		t.Fatalf("agent %s refused to start: %v", id, err)
	}
	ctx, cancel := context.WithCancel(r.l.ctx)
	done := make(chan error, 1)
	since := time.Now().Truncate(time.Microsecond)
	go func() { done <- a.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent %s: %v", id, err)
		}
	}
	t.Cleanup(stop)
	for {
		select {
		case v := <-r.views:
			if v.ID == id && !v.StartedAt.Before(since) {
				return v, stop
			}
		case err := <-done:
			stopped = true // its end is read here: stop must not wait for it
			t.Fatalf("agent %s ended before announcing itself: %v", id, err)
		case <-r.l.ctx.Done():
			t.Fatalf("agent %s never announced itself", id)
		}
	}
}

// brokenLlama names model files although no model roots are configured.
var brokenLlama = agent.DeploymentConfig{ID: "tiny-q8", Model: "Tiny",
	Engine: engine.Config{Kind: engine.KindLlamaCpp, Model: "tiny.gguf", MMProj: "mmproj-tiny.gguf"}}

func cosmos(t *testing.T) agent.DeploymentConfig {
	t.Helper()
	sim, err := agent.SimulatedDeployments("Jetson AGX Orin", 50, "Cosmos3-Edge")
	if err != nil {
		t.Fatal(err)
	}
	return sim[0]
}

// One wrong deployment in an agent's configuration no longer stops the
// agent: it serves the others and announces the broken one with the
// reason, which the controller shows and gives when a sweep asks for it.
// An agent with nothing valid still starts and announces why.
func TestAgentWithBrokenDeployments(t *testing.T) {
	l := newLab(t, testContext(t, 90*time.Second), simlab.Options{})
	r := newAgentRunner(t, l)
	good := cosmos(t)
	const why = `deployments[1].engine: model: "tiny.gguf": no model roots are configured`

	mixed, _ := r.start(t, "mixed", good, brokenLlama)
	if len(mixed.Deployments) != 1 || mixed.Deployments[0].ID != good.ID {
		t.Errorf("mixed offers %+v, want %s alone", mixed.Deployments, good.ID)
	}
	if len(mixed.BrokenDeployments) != 1 || mixed.BrokenDeployments[0].ID != "tiny-q8" ||
		!strings.Contains(mixed.BrokenDeployments[0].Reason, why) {
		t.Errorf("mixed announces broken %+v, want tiny-q8: %s", mixed.BrokenDeployments, why)
	}
	_, err := l.Submit(l.ctx, protocol.Sweep{Agents: []string{"mixed"}, Deployments: []string{"tiny-q8"}, Workload: tinyWorkload(1)})
	if err == nil || !strings.Contains(err.Error(), `"tiny-q8" cannot run: on agent mixed its configuration is wrong: `+why) {
		t.Errorf("sweep of the broken deployment: %v, want a refusal with the reason", err)
	}
	// The valid deployment is measured as ever.
	l.waitState(l.submit("mixed", tinyWorkload(1)), protocol.JobCompleted, 1)

	none, _ := r.start(t, "nothing-valid", agent.DeploymentConfig{ID: "x", Model: "M", Engine: brokenLlama.Engine}, brokenLlama)
	if len(none.Deployments) != 0 || len(none.BrokenDeployments) != 2 || !none.Online {
		t.Errorf("nothing-valid: online %v, offers %+v, broken %+v", none.Online, none.Deployments, none.BrokenDeployments)
	}
	_, err = l.Submit(l.ctx, protocol.Sweep{Agents: []string{"nothing-valid"}, Workload: tinyWorkload(1)})
	if err == nil || !strings.Contains(err.Error(), "offer no deployment: on agent nothing-valid its configuration is wrong: deployments[0].engine") {
		t.Errorf("sweep of an agent with nothing valid: %v", err)
	}
}

// A job queued for a deployment that is broken by the time its agent
// gets it (the agent came back with its configuration changed) is
// rejected with the reason, not with "not configured".
func TestQueuedJobMeetsBrokenDeployment(t *testing.T) {
	l := newLab(t, testContext(t, 90*time.Second), simlab.Options{})
	r := newAgentRunner(t, l)
	good := cosmos(t)
	_, stop := r.start(t, "changed", good)
	stop()
	job := l.submit("changed", tinyWorkload(1)) // queued for the agent, offline now

	broken := good
	broken.Engine.SimDevice = "Jetson Nowhere"
	v, _ := r.start(t, "changed", broken)
	if len(v.Deployments) != 0 || len(v.BrokenDeployments) != 1 {
		t.Fatalf("changed: offers %+v, broken %+v", v.Deployments, v.BrokenDeployments)
	}
	s := l.waitState(job, protocol.JobRejected, 1)
	want := `deployment "` + good.ID + `" on agent changed cannot run, its configuration is wrong: deployments[0].engine: sim_device/sim_model`
	if !strings.Contains(s.Error, want) {
		t.Errorf("rejected with %q, want %q", s.Error, want)
	}
}
