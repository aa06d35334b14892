package simlab_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/agent"
	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/harness/simlab"
)

// A second agent process with the id and credentials of a running one,
// from another spool directory (as from another host), is refused: it
// stops with an error that says who holds the id and what to do, its
// announcement does not replace the first's deployments, and the
// controller shows it on the agent and in /api/health until it stops.
func TestSecondProcessOfAnAgentIsRefused(t *testing.T) {
	ctx := testContext(t, 90*time.Second)
	l := newLab(t, ctx, simlab.Options{})
	ctl := l.Controller()
	seed, err := ctl.EnrolAgent(ctx, "orin-1")
	if err != nil {
		t.Fatal(err)
	}
	first := agx("orin-1")
	first.NATSURL, first.NATSSeed = ctl.NATSURL(), seed
	running := l.startAgent(first)
	before := agentView(t, l, "orin-1")

	// The second offers every profile of the device: more deployments.
	deps, err := agent.SimulatedDeployments("Jetson AGX Orin", 50)
	if err != nil {
		t.Fatal(err)
	}
	if len(deps) <= len(before.Deployments) {
		t.Fatalf("the second process offers %d deployments, the first %d: want more, to tell them apart", len(deps), len(before.Deployments))
	}
	var secondLog logLines
	another := func() *agent.Agent {
		t.Helper()
		a, err := agent.New(agent.Config{
			ID: "orin-1", NATSURL: ctl.NATSURL(), NATSSeed: seed, Deployments: deps,
			Simulate: "Jetson AGX Orin", SimSpeedup: 50, LogDir: t.TempDir(),
		}, agent.Options{Log: zerolog.New(&secondLog).Level(zerolog.InfoLevel), Version: "test"})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	err = another().Run(ctx)
	var dup *agent.DuplicateError
	if !errors.As(err, &dup) || !strings.Contains(err.Error(), `agent "orin-1" already runs`) || !strings.Contains(err.Error(), "Stop one of them") {
		t.Fatalf("the second process ended with %v (%T), want a DuplicateError saying who holds the id and what to do", err, err)
	}
	// A refused process never says it is ready.
	if log := secondLog.String(); strings.Contains(log, `"agent ready"`) || !strings.Contains(log, "the controller refused this process") {
		t.Errorf("the refused process logged:\n%s\nwant its refusal and no \"agent ready\"", log)
	}

	after := agentView(t, l, "orin-1")
	if len(after.Deployments) != len(before.Deployments) || !after.StartedAt.Equal(before.StartedAt) {
		t.Errorf("orin-1 after the second process: %d deployments, started %s; want the first's %d, started %s",
			len(after.Deployments), after.StartedAt, len(before.Deployments), before.StartedAt)
	}
	if len(after.Duplicates) != 1 || !after.Online {
		t.Errorf("orin-1's duplicates %+v (online %v), want the refused process, the first still online", after.Duplicates, after.Online)
	}
	var h api.Health
	getJSON(t, l.url()+"/api/health", &h)
	if !slices.Equal(h.AgentsDuplicate, []string{"orin-1"}) || h.Status != api.HealthOK ||
		!slices.ContainsFunc(h.Fleet, func(p api.HealthProblem) bool { return strings.Contains(p.Error, "second process") }) {
		t.Errorf("health: %+v, want orin-1 under agents_duplicate and fleet, status ok", h)
	}

	// The first stopped, a process from another spool takes the id at
	// once: a stopping agent lets it go.
	if err := running.Stop(); err != nil {
		t.Fatal(err)
	}
	announced := make(chan struct{}, 1)
	t.Cleanup(ctl.OnEvent(func(e api.Event) {
		if v, ok := e.Data.(api.AgentView); ok && e.Kind == api.EventAgent && v.ID == "orin-1" && len(v.Deployments) == len(deps) {
			select {
			case announced <- struct{}{}:
			default:
			}
		}
	}))
	runCtx, stop := context.WithCancel(ctx)
	ended := make(chan error, 1)
	go func() { ended <- another().Run(runCtx) }()
	select {
	case <-announced:
	case err := <-ended:
		t.Fatalf("the next process after the first stopped ended: %v", err)
	case <-ctx.Done():
		t.Fatal("the next process after the first stopped never announced itself")
	}
	stop()
	if err := <-ended; err != nil {
		t.Errorf("the next process: %v", err)
	}
}

// agentView is the agent as GET /api/agents shows it.
func agentView(t *testing.T, l *testLab, id string) api.AgentView {
	t.Helper()
	var agents []api.AgentView
	getJSON(t, l.url()+"/api/agents", &agents)
	for _, a := range agents {
		if a.ID == id {
			return a
		}
	}
	t.Fatalf("/api/agents lacks %s: %+v", id, agents)
	return api.AgentView{}
}

// logLines is a log that goroutines write while the test reads it.
type logLines struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
