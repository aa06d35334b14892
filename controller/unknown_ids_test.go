package controller

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Messages about ids the controller never made are refused and recorded,
// not stored as made-up jobs and runs: a state for an unknown job, a state
// or result for another agent's job, and results for a run that is no
// reported attempt of the sender's job. The job's real messages, in the
// order an agent sends them, are then stored.
func TestMessagesAboutUnknownIDsAreRefused(t *testing.T) {
	c := startController(t, t.TempDir())
	ev, a := announced(t, c, "a1", "d1")
	b := newFakeAgent(t, c, "a2")
	sw := submit(t, c, protocol.Sweep{Agents: []string{"a1"}, Workload: testWorkload()})
	job := sw.Jobs[0]
	runOf := func(jobID string, attempt int, agent string) protocol.Run {
		r := testRun(store.RunIDFor(jobID, attempt), agent)
		r.JobID, r.SweepID = jobID, sw.ID
		return r
	}
	result := func(fa *fakeAgent, r protocol.Run, final bool) {
		t.Helper()
		m := protocol.ResultMessage{Schema: 1, AgentID: fa.id, Run: r}
		if final {
			m.Run.Status, m.Final = protocol.RunCompleted, true
		} else {
			m.Combination = testCombo("480p", 1)
		}
		fa.publish(t, protocol.KindResult, m, "")
	}

	a.state(t, "ghost", protocol.JobCompleted, 1, false) // unknown job
	b.state(t, job, protocol.JobFailed, 1, false)        // another agent's job
	result(a, runOf("ghost", 1, "a1"), false)            // a run of an unknown job
	result(a, runOf("ghost", 1, "a1"), true)             // its final
	result(b, runOf(job, 1, "a2"), true)                 // a run of another agent's job
	result(a, runOf(job, 1, "a1"), true)                 // an attempt the job has not reported
	ev.waitFor(t, 1, helloStored(a.hello(t, "d1")))      // stored after all of them

	rej, err := c.store.Rejected(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{ // newest first
		"has not reported attempt 1",
		"belongs to agent a1, not a2",
		"unknown job ghost",
		"unknown job ghost",
		"belongs to agent a1, not a2",
		"unknown job ghost",
	}
	if len(rej) != len(want) {
		t.Fatalf("%d rejections, want %d: %+v", len(rej), len(want), rej)
	}
	for i, w := range want {
		if !strings.Contains(rej[i].Reason, w) {
			t.Errorf("rejection %d (%s): %q, want it to say %q", i, rej[i].Subject, rej[i].Reason, w)
		}
	}
	jobs, err := c.store.Jobs(context.Background(), store.JobQuery{})
	if err != nil || len(jobs) != 1 || jobs[0].Job.ID != job || jobs[0].State != protocol.JobQueued {
		t.Fatalf("jobs after the refused messages: %+v (%v), want only %s, queued", jobs, err, job)
	}
	if code := getJSON(t, c.HTTPURL()+"/api/jobs/ghost", nil); code != http.StatusNotFound {
		t.Errorf("GET /api/jobs/ghost: %d, want 404", code)
	}
	var runs []protocol.Run
	if code := getJSON(t, c.HTTPURL()+"/api/runs", &runs); code != http.StatusOK || len(runs) != 0 {
		t.Errorf("GET /api/runs: %d, %d runs, want none", code, len(runs))
	}
	if n := len(ev.waitFor(t, 0, func(e api.Event) bool { return e.Kind == api.EventState || e.Kind == api.EventResult })); n != 0 {
		t.Errorf("%d state or result events for refused messages", n)
	}

	// The job's own messages, as its agent sends them, are stored.
	a.state(t, job, protocol.JobAccepted, 1, true)
	result(a, runOf(job, 1, "a1"), false)
	result(a, runOf(job, 1, "a1"), true)
	a.state(t, job, protocol.JobCompleted, 1, true)
	ev.waitFor(t, 1, stateAt(job, protocol.JobCompleted, 1))
	r, err := c.store.RunSummary(context.Background(), store.RunIDFor(job, 1))
	if err != nil || r.Status != protocol.RunCompleted || len(r.Combinations) != 1 {
		t.Fatalf("the job's run: %+v (%v)", r, err)
	}
	if rej, _ := c.store.Rejected(context.Background(), 0); len(rej) != len(want) {
		t.Errorf("%d rejections after the job's own messages, want %d", len(rej), len(want))
	}
}
