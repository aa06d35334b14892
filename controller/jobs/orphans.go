package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/ingest"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/internal/tick"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// OrphanReason is the error of a job whose message left the jobs stream
// before its agent took it.
const OrphanReason = "the job left the jobs stream without reaching its agent (deleted, purged or expired); submit it again"

// DefaultOrphanCheck is how often the controller looks for queued jobs whose
// message is no longer in the jobs stream.
const DefaultOrphanCheck = 30 * time.Second

// OrphanWatch remembers the jobs found missing from the jobs stream at the
// last check: a job is ended only when it is missing at two checks in a
// row, so that the report of an agent that took and finished it just then
// (an agent acknowledges a job, which removes it, after reporting on it)
// is ingested first, and a cancel that removed it has marked it cancelled.
//
// Two checks are not enough on their own when ingestion lags (a busy
// controller, hundreds of agents): the agent's report may still wait in the
// events stream at the second check, and the job was failed although it
// completed. So a job is also ended only once the controller has taken in
// everything the events stream held when the job was first found missing.
type OrphanWatch struct {
	missing map[string]uint64 // job id → the stream sequence found empty
	// eventsAt is the events stream's last sequence when the job was first
	// found missing: its report, if any, is at or before it.
	eventsAt map[string]uint64
}

// NewOrphanWatch remembers nothing yet: no job was found missing.
func NewOrphanWatch() *OrphanWatch {
	return &OrphanWatch{missing: map[string]uint64{}, eventsAt: map[string]uint64{}}
}

// WatchOrphans runs CheckOrphans every OrphanCheckInterval until ctx ends.
func (sc *Scheduler) WatchOrphans(ctx context.Context) {
	w := NewOrphanWatch()
	tick.Every(ctx, sc.opt.OrphanCheckInterval, func() {
		if err := sc.CheckOrphans(ctx, w); err != nil && ctx.Err() == nil {
			sc.log.Warn().Err(err).Msg("looking for queued jobs gone from the jobs stream failed; trying again at the next check")
		}
	})
}

// orphanCandidate is a job the rule may apply to: queued, published, and
// with no state from its agent (or from the controller) yet.
func orphanCandidate(j store.JobRecord) bool {
	return j.State == protocol.JobQueued && j.Published && j.StreamSeq > 0 && len(j.History) == 0
}

// CheckOrphans ends, as failed, each queued job whose message has left the
// jobs stream without its agent having reported on it: nothing will ever
// deliver it now. A job whose message is still there, or whose agent sent
// any state, is never touched; a job missing only since the last check is
// remembered and ended at the next one if it is still missing and queued.
func (sc *Scheduler) CheckOrphans(ctx context.Context, w *OrphanWatch) error {
	jobs, err := sc.store.Jobs(ctx, store.JobQuery{State: protocol.JobQueued})
	if err != nil {
		return err
	}
	var candidates []store.JobRecord
	for _, j := range jobs {
		if orphanCandidate(j) {
			candidates = append(candidates, j)
		}
	}
	if len(candidates) == 0 {
		clear(w.missing)
		clear(w.eventsAt)
		return nil
	}
	stream, err := sc.js.Stream(ctx, protocol.StreamJobs)
	if err != nil {
		return fmt.Errorf("jobs stream: %w", err)
	}
	eventsLast, err := sc.eventsLastSeq(ctx)
	if err != nil {
		return err
	}
	// ingested is asked for once, and only if some job is at its second
	// check: it is a request to the server.
	var ingested *eventsProgress
	missing, eventsAt := map[string]uint64{}, map[string]uint64{}
	keep := func(id string, seq uint64) {
		missing[id] = seq
		eventsAt[id] = w.eventsAt[id]
	}
	var errs []error
	for _, j := range candidates {
		gone, err := jobMsgGone(ctx, stream, j)
		if err != nil {
			errs = append(errs, err)
			if seq, ok := w.missing[j.Job.ID]; ok {
				keep(j.Job.ID, seq) // undecided: keep what the last check saw
			}
			continue
		}
		if !gone {
			continue
		}
		if seq, ok := w.missing[j.Job.ID]; !ok || seq != j.StreamSeq {
			missing[j.Job.ID], eventsAt[j.Job.ID] = j.StreamSeq, eventsLast
			continue
		}
		if ingested == nil {
			p, err := sc.eventsIngested(ctx, eventsLast)
			if err != nil {
				errs = append(errs, err)
				keep(j.Job.ID, j.StreamSeq)
				continue
			}
			ingested = &p
		}
		if !ingested.covers(w.eventsAt[j.Job.ID]) {
			// Its agent's report may be among what is still to ingest.
			keep(j.Job.ID, j.StreamSeq)
			continue
		}
		if err := sc.failOrphan(j); err != nil {
			errs = append(errs, err)
			keep(j.Job.ID, j.StreamSeq)
		}
	}
	w.missing, w.eventsAt = missing, eventsAt
	return errors.Join(errs...)
}

// eventsProgress is how far the controller has taken in the events stream.
type eventsProgress struct {
	ackFloor   uint64 // every message up to this stream sequence is ingested
	streamLast uint64 // the stream's last sequence, read before ackFloor
}

// covers reports whether every event up to seq has been ingested. A
// consumer that has acknowledged everything up to the stream's last
// sequence covers every sequence, also after the stream was recreated and
// numbers its messages afresh. The consumer's pending counts are no such
// evidence: the server counts a stored message as pending for its
// consumers only after acknowledging its publish, so an agent's report
// just taken in by the stream can read as nothing pending. The cost: an
// event deleted from the stream before the consumer got it holds the floor
// below it until the next event is ingested, and a job waits for that.
func (p eventsProgress) covers(seq uint64) bool {
	return p.ackFloor >= min(seq, p.streamLast)
}

// eventsLastSeq is the events stream's last sequence.
func (sc *Scheduler) eventsLastSeq(ctx context.Context) (uint64, error) {
	ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	stream, err := sc.js.Stream(ictx, protocol.StreamEvents)
	if err != nil {
		return 0, fmt.Errorf("events stream: %w", err)
	}
	return stream.CachedInfo().State.LastSeq, nil
}

// eventsIngested asks the server how far the events consumer has got;
// streamLast is the events stream's last sequence, read before.
func (sc *Scheduler) eventsIngested(ctx context.Context, streamLast uint64) (eventsProgress, error) {
	ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cons, err := sc.js.Consumer(ictx, protocol.StreamEvents, ingest.EventsConsumerConfig().Durable)
	if err != nil {
		return eventsProgress{}, fmt.Errorf("events consumer: %w", err)
	}
	return eventsProgress{ackFloor: cons.CachedInfo().AckFloor.Stream, streamLast: streamLast}, nil
}

// jobMsgGone reports whether the jobs stream no longer holds the job's
// message at its recorded sequence. A different message there (a stream
// recreated since numbers its messages afresh) means the job's is gone too.
func jobMsgGone(ctx context.Context, stream jetstream.Stream, j store.JobRecord) (bool, error) {
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	raw, err := stream.GetMsg(gctx, j.StreamSeq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("job %s: jobs stream message %d: %w", j.Job.ID, j.StreamSeq, err)
	}
	if raw.Subject != protocol.JobSubject(j.Job.AgentID) {
		return true, nil
	}
	job, err := protocol.DecodeJob(raw.Data)
	return err != nil || job.ID != j.Job.ID, nil
}

// failOrphan ends the job as failed through the store's failure path, as a
// failure of attempt 0: the store leaves a job that ended meanwhile (a
// cancel) as it is, and a report of the agent's, were it to have the job
// after all, is of attempt 1 or more and moves the job on again.
func (sc *Scheduler) failOrphan(j store.JobRecord) error {
	now := time.Now().UTC()
	// Read again: the agent may have reported since the list was made.
	cur, err := sc.store.Job(j.Job.ID)
	if err != nil {
		return err
	}
	if !orphanCandidate(cur) || cur.StreamSeq != j.StreamSeq {
		return nil
	}
	ch := protocol.JobStateChange{
		Schema: protocol.SchemaVersion, JobID: j.Job.ID, SweepID: j.Job.SweepID, AgentID: j.Job.AgentID,
		State: protocol.JobFailed, Time: now, Attempt: 0, Error: OrphanReason,
	}
	if cur.CancelRequested {
		// A user asked to cancel it: what they asked for is what happened.
		ch.State, ch.Error = protocol.JobCancelled, cancelReason
	}
	var rec store.JobRecord
	var changed bool
	if ch.State == protocol.JobCancelled {
		rec, changed, err = sc.store.CancelJob(ch, now)
	} else {
		rec, changed, err = sc.store.FailJob(ch, now)
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if changed {
		ch.RunID = rec.RunID
		sc.live.JobEnded(j.Job.ID)
		sc.emit(api.EventState, j.Job.AgentID, ch)
		sc.log.Warn().Str("job", j.Job.ID).Str("agent", j.Job.AgentID).Uint64("stream_seq", j.StreamSeq).
			Str("state", string(ch.State)).Msg("queued job left the jobs stream before its agent took it; ended")
	}
	return nil
}
