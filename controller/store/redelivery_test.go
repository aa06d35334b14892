package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// reportAttempt reports the job accepted at attempt, as its agent does
// before anything else of that attempt.
func reportAttempt(t *testing.T, s *Store, job, agent string, attempt int) {
	t.Helper()
	ch := protocol.JobStateChange{Schema: 1, JobID: job, AgentID: agent, State: protocol.JobAccepted, Attempt: attempt,
		RunID: RunIDFor(job, attempt), Time: time.Now()}
	if _, _, err := s.ApplyJobState(ch, time.Now()); err != nil {
		t.Fatal(err)
	}
}

// closing is the message an agent sends, taking a job again as attempt, to
// close the previous attempt's run: it cannot know whether that attempt
// ever reached an agent (agent/job.go closePrevious).
func closing(r protocol.Run, attempt int) protocol.ResultMessage {
	r.ID = RunIDFor(r.JobID, attempt-1)
	r.Status, r.Error = protocol.RunFailed, "the agent stopped during this attempt; the job was delivered again as attempt 2"
	return protocol.ResultMessage{Schema: 1, AgentID: r.AgentID, Run: r, Final: true}
}

// A job whose first delivery never reached an agent (JetStream delivered
// it to a pull the agent had given up on) runs as attempt
// 2, whose agent closes attempt 1 as stopped. The store knows better: no
// agent ever reported attempt 1, so there is nothing to close, and no
// failed run is made up for it, nor a refusal recorded.
func TestClosingAnAttemptNeverReportedMakesNoRun(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	putTestJob(t, s, "j1", "a1", false)
	reportAttempt(t, s, "j1", "a1", 2)
	second := testRun(RunIDFor("j1", 2), "a1")
	second.JobID, second.SweepID = "j1", "s-j1"

	err := s.ApplyResult(closing(second, 2), time.Now())
	if !errors.Is(err, ErrUnreportedAttempt) {
		t.Fatalf("closing an attempt never reported: got %v, want ErrUnreportedAttempt", err)
	}
	if r, err := s.RunSummary(ctx, RunIDFor("j1", 1)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a run was made for an attempt no agent reported: %+v (err %v)", r, err)
	}
	if rej, err := s.Rejected(ctx, 10); err != nil || len(rej) != 0 {
		t.Fatalf("rejected: %+v (err %v)", rej, err)
	}
}

// An attempt its agent did report, and which measured nothing yet (no run
// stored), is still closed as failed by the next attempt's agent, with the
// header that agent sends.
func TestClosingAReportedAttemptMakesItsFailedRun(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	first := labRun(t, s, "j1", "a1") // attempt 1 accepted, no result
	reportAttempt(t, s, "j1", "a1", 2)
	second := first
	second.ID = RunIDFor("j1", 2)
	if err := s.ApplyResult(closing(second, 2), time.Now()); err != nil {
		t.Fatal(err)
	}
	r, err := s.RunSummary(ctx, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != protocol.RunFailed {
		t.Fatalf("attempt 1's run: %s, want failed", r.Status)
	}
}
