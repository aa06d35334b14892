package simlab_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/harness/simlab"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// testLab is a simlab.Lab that fails the test instead of returning errors,
// with every job state change the controller reports kept for waitState.
type testLab struct {
	*simlab.Lab
	t     *testing.T
	ctx   context.Context
	state chan protocol.JobStateChange
}

// testContext bounds a test's waits to d; it ends with the test.
func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// newLab starts a lab for the test, logging to the test and keeping its
// data in a temp dir unless opt names one, and closes it when the test ends.
func newLab(t *testing.T, ctx context.Context, opt simlab.Options) *testLab {
	t.Helper()
	if opt.DataDir == "" {
		opt.DataDir = t.TempDir()
	}
	opt.Log = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	if opt.Version == "" {
		opt.Version = "test"
	}
	lab, err := simlab.Start(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := lab.Close(); err != nil {
			t.Errorf("close the lab: %v", err)
		}
	})
	l := &testLab{Lab: lab, t: t, ctx: ctx, state: make(chan protocol.JobStateChange, 1024)}
	cancel := lab.Controller().OnEvent(func(ev api.Event) {
		if s, ok := ev.Data.(protocol.JobStateChange); ok {
			select {
			case l.state <- s:
			default:
				t.Errorf("state log full: dropped %s %s", s.JobID, s.State)
			}
		}
	})
	t.Cleanup(cancel)
	return l
}

// agx is the simulated agent the tests use: one model on a Jetson AGX
// Orin, fifty times faster than the device.
func agx(id string) simlab.Device {
	return simlab.Device{ID: id, Device: "Jetson AGX Orin", Models: []string{"Cosmos3-Edge"}, Speedup: 50}
}

// startAgent adds the agent and waits for its announcement.
func (l *testLab) startAgent(d simlab.Device) *simlab.Agent {
	l.t.Helper()
	a, err := l.AddAgent(l.ctx, d)
	if err != nil {
		l.t.Fatal(err)
	}
	return a
}

// submit submits a one-agent sweep and returns its one job.
func (l *testLab) submit(agentID string, w protocol.Workload) string {
	l.t.Helper()
	s, err := l.Submit(l.ctx, protocol.Sweep{Agents: []string{agentID}, Workload: w})
	if err != nil {
		l.t.Fatal(err)
	}
	if len(s.Jobs) != 1 {
		l.t.Fatalf("sweep made %d jobs, want 1", len(s.Jobs))
	}
	return s.Jobs[0]
}

// waitState waits for the job to reach state at the given attempt.
func (l *testLab) waitState(job string, state protocol.JobState, attempt int) protocol.JobStateChange {
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

func (l *testLab) url() string { return l.Controller().HTTPURL() }

func tinyWorkload(requests int) protocol.Workload {
	w := protocol.DefaultWorkload()
	w.Sizes = []string{"480p"}
	w.Cameras = []int{1}
	w.RequestsPerLevel = requests
	w.MultiImageSizes = nil
	w.ImagesPerRequest = nil
	return w
}

// waitIngested waits until the controller's durable consumer has acknowledged
// the stream sequence seq. The controller reports no event for a message
// it stores again unchanged, so this one wait polls.
func waitIngested(ctx context.Context, t *testing.T, js jetstream.JetStream, seq uint64) {
	t.Helper()
	for {
		cons, err := js.Consumer(ctx, protocol.StreamEvents, "controller")
		if err != nil {
			t.Fatalf("controller consumer: %v", err)
		}
		info, err := cons.Info(ctx)
		if err == nil && info.AckFloor.Stream >= seq {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("message %d never acknowledged by the controller", seq)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func fetchRun(t *testing.T, base, id string) protocol.Run {
	t.Helper()
	var r protocol.Run
	getJSON(t, fmt.Sprintf("%s/api/runs/%s", base, id), &r)
	return r
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}
