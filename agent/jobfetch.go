package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/agent/outbox"
	"github.com/vlmfleet/vlmfleet/internal/backoff"
	"github.com/vlmfleet/vlmfleet/internal/jobconsumer"
	"github.com/vlmfleet/vlmfleet/internal/tick"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Pulls for jobs are long and answered on one inbox for the agent's life.
//
// A pull that the client gives up on while the server still holds it loses
// the job the server then delivers: it goes to an inbox nobody reads and
// waits out the ack wait, to run as a second attempt. A busy server reads
// its clients late, so any pull the client abandons can still be held.
// Through jetstream's Messages iterator every pull is answered on the same
// inbox, subscribed until the agent stops, so a late delivery still
// arrives. The heartbeats tell a server that stopped answering from an
// empty queue.
//
// The iterator's buffer is as long as its batch, and what arrives while it
// is full is dropped (nats.go's slow consumer); heartbeats and the pulls'
// status messages share it with the jobs. With a batch of 1, a job that
// arrives in one read with a heartbeat, before the reader has emptied the
// buffer, is dropped and waits out its ack wait. A batch of jobPullBatch
// leaves room; the consumer's MaxAckPending of 1 still hands out one job at
// a time. docs/architecture.md ("NATS: subjects and streams") has what
// showed both.
const (
	jobPullExpiry    = 30 * time.Second
	jobPullHeartbeat = 5 * time.Second
	jobPullBatch     = 16
)

// handBackDelay is how long a job handed back by a stopping agent waits
// before the server delivers it again: longer than the agent takes to
// close its connection.
const handBackDelay = 2 * time.Second

// jobQueue is the agent's open pull on its durable job consumer, read by
// one goroutine for as long as the agent runs, a job running or not.
//
// The iterator must be read all the time: its buffer is short (see
// jobPullBatch), so heartbeats and statuses of a pull still open fill it
// while nobody reads, and a job delivered then is dropped as a slow
// consumer's message, to wait out its ack wait and run as attempt 2.
// Reading all the time also keeps a pull open while a job runs; that costs
// nothing: the consumer's MaxAckPending of 1 keeps the server from
// delivering the next job before this one is acknowledged, so no job
// waits, its ack wait running, behind another.
type jobQueue struct {
	a    *Agent
	jobs chan jetstream.Msg
	// done is closed when the reader has ended; err says why.
	done chan struct{}
	err  error

	// checking is set while a missed heartbeat's check of the consumer runs.
	checking atomic.Bool

	mu   sync.Mutex
	cons jetstream.Consumer
	it   jetstream.MessagesContext
}

// openJobs binds the agent's consumer, opens the pull on it and starts its
// reader, which runs until ctx ends.
func (a *Agent) openJobs(ctx context.Context) (*jobQueue, error) {
	q := &jobQueue{a: a, jobs: make(chan jetstream.Msg), done: make(chan struct{})}
	if err := q.open(ctx); err != nil {
		return nil, err
	}
	go func() {
		defer close(q.done)
		q.err = q.read(ctx)
	}()
	return q, nil
}

func (q *jobQueue) open(ctx context.Context) error {
	cons, err := q.a.bindJobs(ctx)
	if err != nil {
		return err
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(jobPullBatch), jetstream.PullExpiry(jobPullExpiry),
		jetstream.PullHeartbeat(jobPullHeartbeat))
	if err != nil {
		return fmt.Errorf("pull jobs from %s: %w", protocol.JobConsumerName(q.a.cfg.ID), err)
	}
	q.mu.Lock()
	q.cons, q.it = cons, it
	q.mu.Unlock()
	return nil
}

func (q *jobQueue) consumer() jetstream.Consumer {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.cons
}

func (q *jobQueue) iterator() jetstream.MessagesContext {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.it
}

// stop ends the pull: the server delivers no more jobs to it once its
// unsubscription arrives (the iterator sends it from a goroutine of its own).
func (q *jobQueue) stop() {
	if it := q.iterator(); it != nil {
		it.Stop()
	}
}

// next waits for the agent's next job until ctx ends.
func (q *jobQueue) next(ctx context.Context) (jetstream.Msg, error) {
	select {
	case msg := <-q.jobs:
		return msg, nil
	case <-q.done:
		return nil, q.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// read hands every job the pull delivers to next, binding the consumer
// again where it is gone, until ctx ends.
func (q *jobQueue) read(ctx context.Context) error {
	wait := backoff.Default.Start()
	for {
		msg, err := q.iterator().Next(jetstream.NextContext(ctx))
		if err == nil {
			wait.Reset()
			select {
			case q.jobs <- msg:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, jetstream.ErrNoHeartbeat) {
			// The server has not answered the pull for two heartbeats: it
			// is busy, stopped or unreachable, or the consumer is gone
			// without a word. The iterator pulls again on the same inbox;
			// the agent has the controller make the consumer again if it is
			// gone, and the pull names it, so the iterator goes on with the
			// new one. That is done aside: a reader that stops reading drops
			// the job a late server delivers meanwhile (see jobQueue).
			q.a.log.Warn().Err(err).Msg("no answer to the pull for jobs; checking the job consumer")
			if q.checking.CompareAndSwap(false, true) {
				go func() {
					defer q.checking.Store(false)
					q.check(ctx)
				}()
			}
			continue
		}
		if q.a.isDrained() {
			// The pull was stopped for the drain (setDrained): pull again
			// once the agent is taken back.
			if err := q.a.waitWhileDrained(ctx); err != nil {
				return err
			}
			if err := q.open(ctx); err != nil {
				return err
			}
			continue
		}
		// Anything else ends the iterator (the consumer was deleted, the
		// connection closed): back off rather than spin, and pull again
		// from a consumer bound again.
		q.a.log.Warn().Err(err).Msg("pulling jobs failed; binding the job consumer again")
		if wait.Wait(ctx) != nil {
			return ctx.Err()
		}
		q.iterator().Stop()
		if err := q.open(ctx); err != nil {
			return err
		}
	}
}

// check has the consumer made again (bindJobs asks the controller) if the
// server says it is gone. It looks first: a busy server misses heartbeats
// of many agents at once, and a lookup costs it less than each of them
// having its consumer written again.
func (q *jobQueue) check(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := q.consumer().Info(cctx)
	if err == nil || !errors.Is(err, jetstream.ErrConsumerNotFound) && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return // there, or no answer: the next missed heartbeat asks again
	}
	_, _ = q.a.bindJobs(ctx) // asks the controller for it; fails only once ctx ends
}

// serveJobs binds the agent's durable consumer and runs its jobs one at a
// time. A job is acknowledged only after its results are stored by the
// stream, so an agent that dies mid-job gets the job again when it returns.
//
// A drained agent pulls nothing: a drain stops the pull (setDrained), and
// one drained before the pull opens waits here. A pull kept open would have
// the server deliver the next job into it, where its ack wait would run out
// again and again while the agent stays drained, until the job was dropped.
func (a *Agent) serveJobs(ctx context.Context) error {
	if err := a.waitWhileDrained(ctx); err != nil {
		return err
	}
	q, err := a.openJobs(ctx)
	if err != nil {
		return err
	}
	a.setJobQueue(q)
	defer a.setJobQueue(nil)
	defer q.stop()
	for {
		msg, err := q.next(ctx)
		if err != nil {
			return err
		}
		if a.isDrained() {
			// Delivered as the drain arrived: back to the stream, for this
			// agent once it is taken back.
			a.log.Info().Msg("drained: handing back a job delivered as the drain arrived")
			_ = msg.NakWithDelay(handBackDelay)
			continue
		}
		a.handleJob(ctx, msg, q)
	}
}

// bindJobs binds the agent's durable job consumer, waiting for the
// controller to have made it. The agent may only look its consumer up:
// a consumer's configuration names where it delivers, so the controller
// makes it, when the agent asks (handshake: a heartbeat sent as a request
// is answered once the consumer is made). The agent asks whenever it
// finds none. One whose controller answers without saying that it makes
// consumers (a controller from before) creates its consumer itself, as
// agents did then.
func (a *Agent) bindJobs(ctx context.Context) (jetstream.Consumer, error) {
	name := protocol.JobConsumerName(a.cfg.ID)
	var cons jetstream.Consumer
	err := backoff.Default.Retry(ctx, func(attempt int) error {
		var err error
		cons, err = a.js.Consumer(ctx, protocol.StreamJobs, name)
		// One that pushes was made by someone else; the controller replaces it.
		if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrNotPullConsumer) {
			a.handshake(ctx)
			if a.makesOwnConsumer.Load() {
				cons, err = a.createJobConsumer(ctx)
			} else {
				cons, err = a.js.Consumer(ctx, protocol.StreamJobs, name)
			}
		}
		if err != nil && ctx.Err() == nil && (attempt == 1 || attempt%10 == 0) {
			a.log.Warn().Err(err).Int("attempt", attempt).
				Msg("job consumer not ready (is the controller up? it makes the consumer when the agent asks); retrying")
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("bind job consumer %s: %w", name, err)
	}
	return cons, nil
}

// createJobConsumer creates the agent's job consumer as the controller
// makes it (jobconsumer.Config), for a controller from before
// that leaves it to the agent and grants it the right to.
func (a *Agent) createJobConsumer(ctx context.Context) (jetstream.Consumer, error) {
	return a.js.CreateOrUpdateConsumer(ctx, protocol.StreamJobs, jobconsumer.Config(a.cfg.ID, a.opt.JobAckWait))
}

// ackWait is how long the server waits for a sign of life of a job it
// delivered: its consumer's AckWait, which the controller chose.
func (q *jobQueue) ackWait() time.Duration {
	if cons := q.consumer(); cons != nil {
		if info := cons.CachedInfo(); info != nil && info.Config.AckWait > 0 {
			return info.Config.AckWait
		}
	}
	return q.a.opt.JobAckWait
}

func (a *Agent) handleJob(ctx context.Context, msg jetstream.Msg, q *jobQueue) {
	attempt := 1
	if md, err := msg.Metadata(); err == nil {
		attempt = int(md.NumDelivered)
	}
	job, refusal, ok := a.takeJob(msg)
	if !ok {
		return
	}
	if last, ended := a.out.EndedJob(job.ID); ended {
		// Its acknowledgement reached the server after the ack wait had
		// run out (the server was stopped, or unreachable, while the job
		// ran; or the agent stopped, or restarted, before its spool was
		// sent), so the server delivered it again: it is done, not to be
		// measured twice.
		a.log.Info().Str("job", job.ID).Int("attempt", attempt).Msg("job delivered again after it ended here; acknowledging it")
		a.spoolAgain(ctx, job.ID, last)
		a.ackWhenSent(ctx, msg, job.ID)
		return
	}
	// The job's context ends with the agent's, or with a cancel from the
	// controller (onControl), whose cause says so.
	jobCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	a.setState(protocol.AgentBusy, job.ID, stop)
	defer a.setState(protocol.AgentIdle, "", nil)

	// Keep JetStream from redelivering a long job to nobody while it runs,
	// and while its messages wait in the spool after it ended.
	alive, stopAlive := context.WithCancel(ctx)
	defer stopAlive()
	go tick.Every(alive, q.ackWait()/3, func() { _ = msg.InProgress() })
	err := a.runJob(ctx, jobCtx, job, attempt, refusal)
	stop(nil)
	if err != nil && ctx.Err() != nil {
		// Stopping mid-job: hand the job back at once, so that the agent
		// gets it again when it returns instead of after the ack wait. The
		// pull open meanwhile may still be subscribed when the server reads
		// the hand-back: a job delivered to it now would be lost on the way
		// out and wait out its ack wait. Handed back for a moment later, it
		// goes to no one until the agent's connection is closed.
		a.log.Warn().Str("job", job.ID).Msg("agent stopping mid-job; the job will be delivered again")
		q.stop()
		_ = msg.NakWithDelay(handBackDelay)
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = a.nc.FlushWithContext(actx)
		return
	}
	// A job whose last state was spooled was listed then (spoolEnding);
	// one that could not spool it is listed now, without it.
	a.endJob(job.ID, nil)
	a.ackWhenSent(ctx, msg, job.ID)
	if job.Power.IsZero() && !a.power.pending() {
		return
	}
	a.power.end(ctx, q.queued(ctx))
}

// queued says whether the server holds another job for the agent, not yet
// delivered or delivered and not yet taken: asked once the job that ended
// is acknowledged, so the answer counts only what comes after it. A server
// that does not answer counts as none: the device is then put back.
func (q *jobQueue) queued(ctx context.Context) bool {
	cons := q.consumer()
	if cons == nil {
		return false
	}
	ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := cons.Info(ictx)
	if err != nil {
		q.a.log.Debug().Err(err).Msg("cannot tell whether another job is queued; counting none")
		return false
	}
	return info.NumPending > 0 || info.NumAckPending > 0
}

// takeJob reads a delivered job. One that cannot be read, or is addressed
// to another agent, is terminated here (ok false): it names no job of this
// agent to report on. One addressed here that asks what no agent may run
// (a workload past protocol's limits) comes back with refusal, why: it is
// reported rejected, so that its sweep says why, and nothing of it is
// planned.
func (a *Agent) takeJob(msg jetstream.Msg) (job *protocol.Job, refusal error, ok bool) {
	job, err := protocol.DecodeJob(msg.Data())
	var refused *protocol.RefusedJobError
	if errors.As(err, &refused) {
		job, refusal, err = refused.Job, refused.Err, nil
	}
	if err != nil {
		a.log.Error().Err(err).Msg("rejecting a malformed job")
		_ = msg.TermWithReason(err.Error())
		return nil, nil, false
	}
	if job.AgentID != a.cfg.ID {
		a.log.Error().Str("job", job.ID).Str("for", job.AgentID).Msg("rejecting a job addressed to another agent")
		_ = msg.TermWithReason("addressed to another agent")
		return nil, nil, false
	}
	return job, refusal, true
}

// ackWhenSent acknowledges an ended job once the stream has acknowledged
// every message it spooled: a job is acknowledged only after its final
// result and state are stored, as when they were published directly. While
// the link is down that waits (the pull could deliver no other job
// meanwhile anyway). An agent stopping meanwhile leaves the job
// unacknowledged: it is delivered again, and the list of ended jobs, kept
// in the spool, has it acknowledged then rather than measured twice.
func (a *Agent) ackWhenSent(ctx context.Context, msg jetstream.Msg, jobID string) {
	if err := a.out.Wait(ctx, a.out.Last()); err != nil {
		a.log.Info().Str("job", jobID).Msg("stopping before the job's messages were sent; they stay in the spool and the job is acknowledged after the next start")
		return
	}
	// The acknowledgement outlives a shutdown that began after the job
	// ended: a finished (or cancelled) job must not run again.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := msg.DoubleAck(actx); err != nil {
		a.log.Warn().Err(err).Str("job", jobID).Msg("acknowledge job")
	}
}

// endJob lists the job as ended here, with its last message (nil: none):
// when it comes back it is acknowledged, not measured again.
func (a *Agent) endJob(id string, last *outbox.Message) {
	if err := a.out.EndJob(id, last); err != nil {
		a.log.Warn().Err(err).Str("job", id).Msg("cannot save the list of ended jobs; a restart before the job is acknowledged would measure it again")
	}
}

// spoolAgain spools an ended job's last state once more, in case the
// agent was killed after listing the job as ended and before spooling
// it. The message keeps its id, so the stream, or else the controller's
// ingest, drops it if it was sent before.
func (a *Agent) spoolAgain(ctx context.Context, jobID string, last *outbox.Message) {
	if last == nil {
		return
	}
	if _, err := a.out.Append(ctx, last.Subject, last.MsgID, last.Data); err != nil {
		a.log.Warn().Err(err).Str("job", jobID).Msg("cannot spool the ended job's last state again")
	}
}
