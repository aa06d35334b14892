package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// putTestJob stores job id of agent as the scheduler does (queued), and
// reports attempt 1 accepted when accepted is set.
func putTestJob(t *testing.T, s *Store, id, agent string, accepted bool) {
	t.Helper()
	job := protocol.Job{Schema: 1, ID: id, SweepID: "s-" + id, AgentID: agent, Deployment: "d", Workload: testWorkload()}
	if err := s.PutJob(JobRecord{Job: job, State: protocol.JobQueued, Published: true}); err != nil {
		t.Fatal(err)
	}
	if !accepted {
		return
	}
	if _, _, err := s.ApplyJobState(protocol.JobStateChange{Schema: 1, JobID: id, AgentID: agent, State: protocol.JobAccepted, Attempt: 1, Time: time.Now()}, time.Now()); err != nil {
		t.Fatal(err)
	}
}

// labRun stores job jobID of agent, accepted as attempt 1, and returns the
// header of that attempt's run as the agent names it.
func labRun(t *testing.T, s *Store, jobID, agent string) protocol.Run {
	t.Helper()
	putTestJob(t, s, jobID, agent, true)
	r := testRun(RunIDFor(jobID, 1), agent)
	r.JobID, r.SweepID = jobID, "s-"+jobID
	return r
}

func wantReject(t *testing.T, what string, err error, reason string) {
	t.Helper()
	var rej *RejectError
	if !errors.As(err, &rej) {
		t.Fatalf("%s: got %v, want a RejectError", what, err)
	}
	if !strings.Contains(rej.Reason, reason) {
		t.Errorf("%s: reason %q, want it to say %q", what, rej.Reason, reason)
	}
}

// A state report for a job this store never made is refused: it does not
// make up a job (with an empty workload, completed by whoever said so).
func TestStateOfUnknownJobIsRefused(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	putTestJob(t, s, "j1", "a1", false)
	_, _, err := s.ApplyJobState(protocol.JobStateChange{Schema: 1, JobID: "ghost", AgentID: "a1", State: protocol.JobCompleted, Attempt: 1, Time: time.Now()}, time.Now())
	wantReject(t, "unknown job", err, "unknown job ghost")
	if _, err := s.Job("ghost"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the unknown job was stored: %v", err)
	}
	jobs, err := s.Jobs(ctx, JobQuery{})
	if err != nil || len(jobs) != 1 || jobs[0].Job.ID != "j1" {
		t.Errorf("jobs %+v (%v), want only j1", jobs, err)
	}
	// The controller's own verdicts on an unknown job stay ErrNotFound.
	if _, _, err := s.FailJob(protocol.JobStateChange{Schema: 1, JobID: "ghost", AgentID: "a1", Attempt: 1}, time.Now()); !errors.Is(err, ErrNotFound) {
		t.Errorf("FailJob of an unknown job: %v, want ErrNotFound", err)
	}
	if _, _, err := s.CancelJob(protocol.JobStateChange{Schema: 1, JobID: "ghost", AgentID: "a1", Attempt: 1}, time.Now()); !errors.Is(err, ErrNotFound) {
		t.Errorf("CancelJob of an unknown job: %v, want ErrNotFound", err)
	}
}

// An agent speaks only for its own jobs, and names only its own job's runs.
func TestStateOfAnotherAgentsJobIsRefused(t *testing.T) {
	s := openTest(t)
	putTestJob(t, s, "j1", "a1", true)
	_, _, err := s.ApplyJobState(protocol.JobStateChange{Schema: 1, JobID: "j1", AgentID: "a2", State: protocol.JobFailed, Attempt: 1, Time: time.Now()}, time.Now())
	wantReject(t, "another agent's job", err, "belongs to agent a1, not a2")
	// Its run id must be the attempt's run of this job: naming another run
	// would let a cancel of this job close that run.
	_, _, err = s.ApplyJobState(protocol.JobStateChange{Schema: 1, JobID: "j1", RunID: "other-a1", AgentID: "a1", State: protocol.JobRunning, Attempt: 1, Time: time.Now()}, time.Now())
	wantReject(t, "foreign run id", err, "j1-a1")
	if rec, err := s.Job("j1"); err != nil || rec.State != protocol.JobAccepted || rec.RunID != "" {
		t.Errorf("job after refused reports: %s run %q (%v), want accepted without a run", rec.State, rec.RunID, err)
	}
}

// A result (a combination or the final message) is stored only for the
// run of a job that exists, belongs to the sending agent and has reported
// the run's attempt; nothing is made up otherwise.
func TestResultOfUnknownRunIsRefused(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	good := labRun(t, s, "j1", "a1")
	putTestJob(t, s, "j2", "a2", true)
	unknown := func(mut func(r *protocol.Run)) protocol.Run {
		r := good
		mut(&r)
		return r
	}
	final := func(r protocol.Run) protocol.ResultMessage {
		r.Status = protocol.RunCompleted
		return protocol.ResultMessage{Schema: 1, AgentID: "a1", Run: r, Final: true}
	}
	comb := func(r protocol.Run) protocol.ResultMessage {
		return protocol.ResultMessage{Schema: 1, AgentID: "a1", Run: r, Combination: combo("480p", 1)}
	}
	for _, tc := range []struct {
		name   string
		run    protocol.Run
		reason string
	}{
		{"no job", unknown(func(r *protocol.Run) { r.ID, r.JobID = "r1", "" }), "names no job"},
		{"unknown job", unknown(func(r *protocol.Run) { r.ID, r.JobID = "ghost-a1", "ghost" }), "unknown job ghost"},
		{"another agent's job", unknown(func(r *protocol.Run) { r.ID, r.JobID = "j2-a1", "j2" }), "belongs to agent a2"},
		{"not the job's run", unknown(func(r *protocol.Run) { r.ID = "r1" }), "j1-a<attempt>"},
		{"attempt zero", unknown(func(r *protocol.Run) { r.ID = "j1-a0" }), "j1-a<attempt>"},
		{"padded attempt", unknown(func(r *protocol.Run) { r.ID = "j1-a01" }), "j1-a<attempt>"},
		{"attempt not reported", unknown(func(r *protocol.Run) { r.ID = "j1-a2" }), "attempt 2"},
	} {
		for _, m := range []protocol.ResultMessage{comb(tc.run), final(tc.run)} {
			wantReject(t, tc.name, s.ApplyResult(m, time.Now()), tc.reason)
		}
	}
	runs, err := s.ListRuns(ctx, RunQuery{})
	if err != nil || len(runs) != 0 {
		t.Fatalf("refused results made runs: %+v (%v)", runs, err)
	}
	// The job's own run is stored, and once attempt 2 is reported a late
	// final of attempt 1 (the agent closing the run it lost) is too.
	if err := s.ApplyResult(comb(good), time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ApplyJobState(protocol.JobStateChange{Schema: 1, JobID: "j1", AgentID: "a1", State: protocol.JobAccepted, Attempt: 2, Time: time.Now()}, time.Now()); err != nil {
		t.Fatal(err)
	}
	second := unknown(func(r *protocol.Run) { r.ID = "j1-a2" })
	for _, m := range []protocol.ResultMessage{final(good), comb(second)} {
		if err := s.ApplyResult(m, time.Now()); err != nil {
			t.Fatalf("run %s: %v", m.Run.ID, err)
		}
	}
	if runs, _ := s.ListRuns(ctx, RunQuery{}); len(runs) != 2 {
		t.Errorf("%d runs, want j1-a1 and j1-a2", len(runs))
	}
}

// A job the controller cancelled itself keeps its state when its agent
// takes it again late, but the attempt is in its history: that attempt's
// run is the job's and its results are stored.
func TestResultOfLateAttemptOfCancelledJob(t *testing.T) {
	s := openTest(t)
	putTestJob(t, s, "j1", "a1", false)
	if _, _, err := s.RequestCancel("j1", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CancelJob(protocol.JobStateChange{Schema: 1, JobID: "j1", AgentID: "a1", Error: "agent offline"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	rec, _, err := s.ApplyJobState(protocol.JobStateChange{Schema: 1, JobID: "j1", AgentID: "a1", State: protocol.JobAccepted, Attempt: 1, Time: time.Now()}, time.Now())
	if err != nil || rec.State != protocol.JobCancelled {
		t.Fatalf("late accepted: %s (%v), want the job still cancelled", rec.State, err)
	}
	run := testRun(RunIDFor("j1", 1), "a1")
	run.JobID, run.Status = "j1", protocol.RunCancelled
	if err := s.ApplyResult(protocol.ResultMessage{Schema: 1, AgentID: "a1", Run: run, Final: true}, time.Now()); err != nil {
		t.Fatalf("the late attempt's final: %v", err)
	}
}
