package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/agent"
	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// lab is a controller with one simulated agent that can be stopped and
// started again under the same id.
type lab struct {
	t     *testing.T
	ctx   context.Context
	ctrl  *controller.Controller
	dir   string
	log   zerolog.Logger
	state chan protocol.JobStateChange
	hello chan struct{}
	stop  func()
}

func newLab(t *testing.T, ctx context.Context) *lab {
	t.Helper()
	l := &lab{t: t, ctx: ctx, dir: t.TempDir(), log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
		state: make(chan protocol.JobStateChange, 256), hello: make(chan struct{}, 8)}
	ctrl, err := controller.New(controller.Options{DataDir: l.dir, NATSListen: "127.0.0.1:-1", HTTPAddr: "127.0.0.1:0", Log: l.log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctrl.Close() })
	if err := ctrl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	l.ctrl = ctrl
	cancel := ctrl.OnEvent(func(ev controller.Event) {
		if s, ok := ev.Data.(protocol.JobStateChange); ok {
			l.state <- s
		}
		if ev.Kind == controller.EventAgent {
			select {
			case l.hello <- struct{}{}:
			default:
			}
		}
	})
	t.Cleanup(cancel)
	return l
}

// startAgent runs the agent until stopAgent; it waits for its announcement.
func (l *lab) startAgent(id string) {
	l.t.Helper()
	deps, err := agent.SimulatedDeployments("Jetson AGX Orin", 50, "Cosmos3-Edge")
	if err != nil {
		l.t.Fatal(err)
	}
	a, err := agent.New(agent.Config{ID: id, NATSURL: l.ctrl.NATSURL(), Deployments: deps, Simulate: "Jetson AGX Orin", LogDir: l.dir},
		agent.Options{Log: l.log, Version: "test"})
	if err != nil {
		l.t.Fatal(err)
	}
	actx, cancel := context.WithCancel(l.ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(actx) }()
	l.stop = func() { cancel(); <-done }
	l.t.Cleanup(func() { cancel(); <-done })
}

func (l *lab) submit(agentID string, w protocol.Workload) string {
	l.t.Helper()
	for {
		s, err := l.ctrl.SubmitSweep(l.ctx, protocol.Sweep{Agents: []string{agentID}, Workload: w})
		if err == nil {
			return s.Jobs[0]
		}
		select {
		case <-l.hello:
		case <-time.After(200 * time.Millisecond): // the hello may have come before the subscription
		case <-l.ctx.Done():
			l.t.Fatalf("submit: %v", err)
		}
	}
}

// waitState waits for the job to reach state at the given attempt.
func (l *lab) waitState(job string, state protocol.JobState, attempt int) protocol.JobStateChange {
	l.t.Helper()
	for {
		select {
		case s := <-l.state:
			if s.JobID == job && s.State == state && s.Attempt == attempt {
				return s
			}
			if s.JobID == job && s.State.Terminal() && s.State != state {
				l.t.Fatalf("job ended %s (attempt %d): %s", s.State, s.Attempt, s.Error)
			}
		case <-l.ctx.Done():
			l.t.Fatalf("job %s never reached %s at attempt %d", job, state, attempt)
		}
	}
}

func tinyWorkload(requests int) protocol.Workload {
	w := protocol.DefaultWorkload()
	w.Sizes = []string{"480p"}
	w.Cameras = []int{1}
	w.RequestsPerLevel = requests
	w.MultiImageSizes = nil
	w.ImagesPerRequest = nil
	return w
}

// An agent stopped mid-job hands the job back; started again, it measures
// the job as a new attempt and closes the interrupted attempt's run.
func TestAgentStoppedMidJobGetsItAgain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l := newLab(t, ctx)
	l.startAgent("restart")
	job := l.submit("restart", tinyWorkload(200))
	l.waitState(job, protocol.JobRunning, 1)
	l.stop()

	l.startAgent("restart")
	l.waitState(job, protocol.JobRunning, 2)
	l.stop() // no need to measure 200 requests twice: attempt 2 started
	first := fetchRun(t, l.ctrl.HTTPURL(), job+"-a1")
	if first.Status != protocol.RunFailed || !strings.Contains(first.Error, "delivered again as attempt 2") {
		t.Fatalf("interrupted run: status %s error %q", first.Status, first.Error)
	}
}

// An agent whose job consumer disappears binds it again and keeps taking jobs.
func TestAgentRebindsALostConsumer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l := newLab(t, ctx)
	l.startAgent("rebind")
	job := l.submit("rebind", tinyWorkload(1))
	l.waitState(job, protocol.JobCompleted, 1)

	nc, err := nats.Connect(l.ctrl.NATSURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if err := js.DeleteConsumer(ctx, protocol.StreamJobs, protocol.JobConsumerName("rebind")); err != nil {
		t.Fatal(err)
	}
	job = l.submit("rebind", tinyWorkload(1))
	l.waitState(job, protocol.JobCompleted, 1)
}
