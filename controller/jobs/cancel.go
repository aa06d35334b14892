package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// JobEndedError says a job to cancel has already ended; the API answers it
// with 409 and the job as it is.
type JobEndedError struct {
	ID    string
	State protocol.JobState
}

func (e *JobEndedError) Error() string {
	return fmt.Sprintf("job %s already ended (%s); nothing to cancel", e.ID, e.State)
}

// cancelReason is what a cancelled job and its run say.
const cancelReason = "cancelled by a user"

// CancelJob cancels a job that has not ended. A job still queued (not yet
// taken by its agent), or whose agent is offline, is removed from the jobs
// stream and marked cancelled here. A job its agent runs is cancelled by the
// agent, asked on its control subject: it stops the engine, closes the run
// as cancelled with what was measured and reports the job cancelled. The
// agent is asked in every case, so that a job it took just now is caught
// too; a job that reports any non-terminal state after it was asked is asked
// again (see ingest). It returns the job as it stands, or a *JobEndedError.
func (sc *Scheduler) CancelJob(ctx context.Context, id string) (store.JobRecord, error) {
	now := time.Now().UTC()
	rec, _, err := sc.store.RequestCancel(id, now)
	if err != nil {
		return store.JobRecord{}, fmt.Errorf("controller: %w", err)
	}
	if rec.State.Terminal() {
		return rec, &JobEndedError{ID: id, State: rec.State}
	}
	sc.SendCancel(rec.Job.AgentID, id)
	online := false
	if a, err := sc.agentView(rec.Job.AgentID); err == nil {
		online = a.Online
	}
	if rec.State != protocol.JobQueued && online {
		sc.log.Info().Str("job", id).Str("agent", rec.Job.AgentID).Msg("asked the agent to cancel its job")
		return rec, nil
	}
	reason := cancelReason
	if rec.State != protocol.JobQueued {
		reason += " while its agent was offline"
	}
	return sc.endCancelled(ctx, rec, reason, now)
}

// endCancelled ends a job here, not by its agent: removed from the jobs
// stream if it is still there, and stored as cancelled with the reason.
func (sc *Scheduler) endCancelled(ctx context.Context, rec store.JobRecord, reason string, now time.Time) (store.JobRecord, error) {
	id := rec.Job.ID
	if rec.Published && rec.StreamSeq != 0 {
		if err := sc.deleteQueuedJob(ctx, rec); err != nil {
			return rec, fmt.Errorf("controller: cancel job %s: %w", id, err)
		}
	}
	ch := protocol.JobStateChange{
		Schema: protocol.SchemaVersion, JobID: id, SweepID: rec.Job.SweepID, RunID: rec.RunID,
		AgentID: rec.Job.AgentID, State: protocol.JobCancelled, Time: now, Attempt: rec.Attempt, Error: reason,
	}
	after, changed, err := sc.store.CancelJob(ch, now)
	if err != nil {
		return rec, fmt.Errorf("controller: %w", err)
	}
	if changed {
		sc.live.JobEnded(id)
		sc.emit(api.EventState, rec.Job.AgentID, ch)
		sc.log.Info().Str("job", id).Str("agent", rec.Job.AgentID).Str("was", string(rec.State)).Str("reason", reason).Msg("job cancelled")
	}
	return after, nil
}

// CancelSweep cancels every job of the sweep that has not ended.
func (sc *Scheduler) CancelSweep(ctx context.Context, id string) (api.SweepCancel, error) {
	if _, err := sc.store.Sweep(id); err != nil {
		return api.SweepCancel{}, fmt.Errorf("controller: %w", err)
	}
	jobs, err := sc.store.Jobs(ctx, store.JobQuery{SweepID: id})
	if err != nil {
		return api.SweepCancel{}, fmt.Errorf("controller: %w", err)
	}
	out := api.SweepCancel{ID: id, Cancelled: []string{}, Requested: []string{}, Ended: []string{}}
	var errs []error
	for _, j := range jobs {
		rec, err := sc.CancelJob(ctx, j.Job.ID)
		var ended *JobEndedError
		switch {
		case errors.As(err, &ended):
			out.Ended = append(out.Ended, j.Job.ID)
		case err != nil:
			errs = append(errs, err)
		case rec.State == protocol.JobCancelled:
			out.Cancelled = append(out.Cancelled, j.Job.ID)
		default:
			out.Requested = append(out.Requested, j.Job.ID)
		}
	}
	return out, errors.Join(errs...)
}

// SendCancel asks the agent, on core NATS, to cancel the job if it runs it.
// Losing the message is harmless: the job is asked again at its next state
// report, or by cancelling again.
func (sc *Scheduler) SendCancel(agentID, jobID string) {
	m := protocol.Cancel{Schema: protocol.SchemaVersion, JobID: jobID, Reason: cancelReason}
	if err := m.Validate(); err != nil {
		sc.log.Error().Err(err).Str("job", jobID).Msg("not sending an invalid cancel")
		return
	}
	data, err := json.Marshal(m)
	if err != nil {
		sc.log.Error().Err(err).Str("job", jobID).Msg("encode cancel")
		return
	}
	if err := sc.nc.Publish(protocol.ControlSubject(agentID), data); err != nil {
		sc.log.Warn().Err(err).Str("job", jobID).Str("agent", agentID).Msg("sending a cancel failed")
	}
}

// deleteQueuedJob removes the job from the jobs stream, after checking that
// the message at its recorded sequence is this job (a recreated stream
// numbers its messages afresh). A message already gone is no error.
func (sc *Scheduler) deleteQueuedJob(ctx context.Context, rec store.JobRecord) error {
	stream, err := sc.js.Stream(ctx, protocol.StreamJobs)
	if err != nil {
		return fmt.Errorf("jobs stream: %w", err)
	}
	raw, err := stream.GetMsg(ctx, rec.StreamSeq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("jobs stream message %d: %w", rec.StreamSeq, err)
	}
	if raw.Subject != protocol.JobSubject(rec.Job.AgentID) {
		return nil
	}
	if job, err := protocol.DecodeJob(raw.Data); err != nil || job.ID != rec.Job.ID {
		return nil
	}
	return sc.DeleteJobMsg(ctx, rec.StreamSeq)
}
