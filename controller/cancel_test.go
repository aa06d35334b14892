package controller

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

func deleteJSON(t *testing.T, url string, v any) int {
	t.Helper()
	code, body := request(t, http.MethodDelete, url, "")
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("DELETE %s: %d: %v", url, code, err)
	}
	return code
}

func stateAt(job string, st protocol.JobState, attempt int) func(api.Event) bool {
	return func(e api.Event) bool {
		s, ok := e.Data.(protocol.JobStateChange)
		return e.Kind == api.EventState && ok && s.JobID == job && s.State == st && s.Attempt == attempt
	}
}

// A job whose agent is offline is cancelled by the controller itself, its
// run closed as cancelled. The agent is asked anyway, and asked again when
// it reports the job after: its late report does not undo the cancel, its
// own verdict is recorded.
func TestCancelJobOfOfflineAgent(t *testing.T) {
	// Every agent counts as offline: no heartbeat is ever recent enough.
	c := startControllerWith(t, Options{DataDir: t.TempDir(), HeartbeatTimeout: time.Nanosecond})
	ev := watchEvents(t, c)
	a := newFakeAgent(t, c, "off")
	control, err := a.nc.SubscribeSync(protocol.ControlSubject("off"))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	ev.waitFor(t, 1, helloStored(a.hello(t, "d1")))
	sw := submit(t, c, protocol.Sweep{Agents: []string{"off"}, Workload: testWorkload()})
	job := sw.Jobs[0]
	run := testRun(store.RunIDFor(job, 1), "off")
	run.JobID, run.SweepID = job, sw.ID
	a.state(t, job, protocol.JobRunning, 1, true)
	a.publish(t, protocol.KindResult, protocol.ResultMessage{Schema: 1, AgentID: "off", Run: run, Combination: testCombo("480p", 1)}, "")
	ev.waitFor(t, 1, stateAt(job, protocol.JobRunning, 1))
	ev.waitFor(t, 1, func(e api.Event) bool { r, ok := e.Data.(api.ResultEvent); return ok && r.RunID == run.ID })

	var v api.JobView
	if code := deleteJSON(t, c.HTTPURL()+"/api/jobs/"+job, &v); code != http.StatusOK || v.State != protocol.JobCancelled ||
		!strings.Contains(v.Error, "offline") {
		t.Fatalf("cancel: %d, state %s, error %q", code, v.State, v.Error)
	}
	r, err := c.store.RunSummary(context.Background(), run.ID)
	if err != nil || r.Status != protocol.RunCancelled {
		t.Fatalf("run after cancel: %s, %v", r.Status, err)
	}
	nextCancel := func() {
		t.Helper()
		m, err := control.NextMsg(waitLimit)
		if err != nil {
			t.Fatalf("no cancel on %s: %v", protocol.ControlSubject("off"), err)
		}
		cm, err := protocol.DecodeCancel(m.Data)
		if err != nil || cm.JobID != job {
			t.Fatalf("cancel message %s: %v", m.Data, err)
		}
	}
	nextCancel()

	// The agent returns and takes the job again before it hears: the job
	// stays cancelled and the agent is asked again.
	a.state(t, job, protocol.JobAccepted, 2, true)
	nextCancel()
	if rec, _ := c.store.Job(job); rec.State != protocol.JobCancelled {
		t.Fatalf("a late report moved the cancelled job to %s", rec.State)
	}
	a.state(t, job, protocol.JobCancelled, 2, true)
	ev.waitFor(t, 1, stateAt(job, protocol.JobCancelled, 2))

	var sc api.SweepCancel
	if code := deleteJSON(t, c.HTTPURL()+"/api/sweeps/"+sw.ID, &sc); code != http.StatusOK || len(sc.Ended) != 1 {
		t.Fatalf("cancel ended sweep: %d %+v", code, sc)
	}
	var e map[string]string
	if code := deleteJSON(t, c.HTTPURL()+"/api/jobs/nope", &e); code != http.StatusNotFound {
		t.Fatalf("cancel unknown job: %d %v", code, e)
	}
}

// A queued job's message can leave the jobs stream between the check that
// it is there and its deletion (its agent took it and acknowledged it):
// the server then refuses the deletion as of a message it does not have,
// and the cancel goes on, its goal reached.
func TestDeletingAJobMessageAlreadyGoneIsNoError(t *testing.T) {
	c := startControllerWith(t, Options{DataDir: t.TempDir()})
	if err := c.jobs.DeleteJobMsg(context.Background(), 1<<40); err != nil {
		t.Errorf("deleting a jobs stream message that is not there: %v", err)
	}
}
