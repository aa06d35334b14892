package simlab_test

import (
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/client"
	"github.com/vlmfleet/vlmfleet/harness/simlab"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// A user cancels a job queued behind a running one, then the running one:
// the queued job never runs, the running one ends cancelled with the
// combination it had measured, and the agent goes on with the next job.
// Cancelling a job that ended changes nothing.
func TestCancelQueuedAndRunningJobs(t *testing.T) {
	l := newLab(t, testContext(t, 60*time.Second), simlab.Options{})
	measured := make(chan string, 64)
	stopResults := l.Controller().OnEvent(func(ev api.Event) {
		if r, ok := ev.Data.(api.ResultEvent); ok && r.Combo != nil {
			select {
			case measured <- r.JobID:
			default:
			}
		}
	})
	defer stopResults()
	l.startAgent(agx("cancel"))
	base := l.url()
	cl, err := client.New(base, client.WithToken(l.Controller().APIToken()))
	if err != nil {
		t.Fatal(err)
	}

	// A quick first combination, then a multi-image one far too long to end
	// before the cancel.
	long := tinyWorkload(2)
	long.MultiImageSizes = []string{"480p"}
	long.ImagesPerRequest = []int{2}
	long.MultiImageRequests = protocol.MaxRequestsPerComb
	running := l.submit("cancel", long)
	queued := l.submit("cancel", tinyWorkload(1)) // MaxAckPending 1: it waits in the stream
	for got := ""; got != running; {
		select {
		case got = <-measured:
		case <-l.ctx.Done():
			t.Fatalf("job %s never measured its first combination", running)
		}
	}

	v, outcome, err := cl.CancelJob(l.ctx, queued)
	if err != nil || outcome != client.Cancelled || v.State != protocol.JobCancelled || !v.CancelRequested {
		t.Fatalf("cancel queued job: %v, %v, state %s, cancel_requested %v", err, outcome, v.State, v.CancelRequested)
	}
	l.waitState(queued, protocol.JobCancelled, 0)

	if v, outcome, err = cl.CancelJob(l.ctx, running); err != nil || outcome != client.StopRequested || v.State.Terminal() {
		t.Fatalf("cancel running job: %v, %v, state %s", err, outcome, v.State)
	}
	ch := l.waitState(running, protocol.JobCancelled, 1)
	run := fetchRun(t, base, ch.RunID)
	if run.Status != protocol.RunCancelled || len(run.Combinations) != 1 || run.Combinations[0].ComboKey.Cameras != 1 {
		t.Fatalf("cancelled run: status %s, %d combinations, error %q; want cancelled with the one measured", run.Status, len(run.Combinations), run.Error)
	}
	if ch.Error == "" || run.Error != ch.Error {
		t.Errorf("cancelled run says %q, its job %q; want both the reason the controller gave", run.Error, ch.Error)
	}

	// The stream delivers in order: a job submitted now runs after the
	// cancelled one would have.
	next := l.submit("cancel", tinyWorkload(1))
	l.waitState(next, protocol.JobCompleted, 1)
	if j, err := cl.Job(l.ctx, queued); err != nil || j.State != protocol.JobCancelled || len(j.History) != 1 || j.RunID != "" {
		t.Fatalf("cancelled queued job ran: %v, state %s, history %+v, run %q", err, j.State, j.History, j.RunID)
	}

	// Cancelling what has ended is refused and changes nothing.
	if v, outcome, err = cl.CancelJob(l.ctx, next); err != nil || outcome != client.AlreadyEnded || v.State != protocol.JobCompleted {
		t.Fatalf("cancel completed job: %v, %v, state %s", err, outcome, v.State)
	}
	after, err := cl.Job(l.ctx, next)
	if err != nil || after.State != protocol.JobCompleted || after.CancelRequested {
		t.Fatalf("completed job after a cancel: %v, state %s, cancel_requested %v", err, after.State, after.CancelRequested)
	}
	if sw, err := cl.CancelSweep(l.ctx, after.SweepID); err != nil || len(sw.Ended) != 1 || len(sw.Cancelled)+len(sw.Requested) != 0 {
		t.Fatalf("cancel finished sweep: %v, %+v", err, sw)
	}
}
