package simlab_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/internal/simlab"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// cancelJob sends DELETE /api/jobs/{id} and decodes the answer into v.
func cancelJob(t *testing.T, ctx context.Context, base, path string, v any) int {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("DELETE %s: %s: %v", path, resp.Status, err)
	}
	return resp.StatusCode
}

// A user cancels a job queued behind a running one, then the running one:
// the queued job never runs, the running one ends cancelled with the
// combination it had measured, and the agent goes on with the next job.
// Cancelling a job that ended changes nothing.
func TestCancelQueuedAndRunningJobs(t *testing.T) {
	l := newLab(t, testContext(t, 60*time.Second), simlab.Options{})
	measured := make(chan string, 64)
	stopResults := l.Controller().OnEvent(func(ev controller.Event) {
		if r, ok := ev.Data.(controller.ResultEvent); ok && r.Combo != nil {
			select {
			case measured <- r.JobID:
			default:
			}
		}
	})
	defer stopResults()
	l.startAgent(agx("cancel"))
	base := l.url()

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

	var v controller.JobView
	if code := cancelJob(t, l.ctx, base, "/api/jobs/"+queued, &v); code != http.StatusOK || v.State != protocol.JobCancelled || !v.CancelRequested {
		t.Fatalf("cancel queued job: %d, state %s, cancel_requested %v", code, v.State, v.CancelRequested)
	}
	l.waitState(queued, protocol.JobCancelled, 0)

	if code := cancelJob(t, l.ctx, base, "/api/jobs/"+running, &v); code != http.StatusAccepted || v.State.Terminal() {
		t.Fatalf("cancel running job: %d, state %s", code, v.State)
	}
	ch := l.waitState(running, protocol.JobCancelled, 1)
	run := fetchRun(t, base, ch.RunID)
	if run.Status != protocol.RunCancelled || len(run.Combinations) != 1 || run.Combinations[0].ComboKey.Cameras != 1 {
		t.Fatalf("cancelled run: status %s, %d combinations, error %q; want cancelled with the one measured", run.Status, len(run.Combinations), run.Error)
	}

	// The stream delivers in order: a job submitted now runs after the
	// cancelled one would have.
	next := l.submit("cancel", tinyWorkload(1))
	l.waitState(next, protocol.JobCompleted, 1)
	var j controller.JobView
	getJSON(t, fmt.Sprintf("%s/api/jobs/%s", base, queued), &j)
	if j.State != protocol.JobCancelled || len(j.History) != 1 || j.RunID != "" {
		t.Fatalf("cancelled queued job ran: state %s, history %+v, run %q", j.State, j.History, j.RunID)
	}

	// Cancelling what has ended is refused and changes nothing.
	var conflict struct {
		Error string             `json:"error"`
		Job   controller.JobView `json:"job"`
	}
	if code := cancelJob(t, l.ctx, base, "/api/jobs/"+next, &conflict); code != http.StatusConflict || conflict.Job.State != protocol.JobCompleted {
		t.Fatalf("cancel completed job: %d, state %s", code, conflict.Job.State)
	}
	var after controller.JobView
	getJSON(t, fmt.Sprintf("%s/api/jobs/%s", base, next), &after)
	if after.State != protocol.JobCompleted || after.CancelRequested {
		t.Fatalf("completed job after a cancel: state %s, cancel_requested %v", after.State, after.CancelRequested)
	}
	var sw controller.SweepCancel
	if code := cancelJob(t, l.ctx, base, "/api/sweeps/"+after.SweepID, &sw); code != http.StatusOK || len(sw.Ended) != 1 || len(sw.Cancelled)+len(sw.Requested) != 0 {
		t.Fatalf("cancel finished sweep: %d, %+v", code, sw)
	}
}
