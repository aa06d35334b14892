package controller

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/ingest"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// newIngester is the controller's ingestion of the events stream (package
// ingest), with what the controller does besides storing results.
func (c *Controller) newIngester() *ingest.Ingester {
	return ingest.New(c.store, ingest.Hooks{
		Hello:    c.storeHello,
		State:    c.applyState,
		Stored:   c.emitResult,
		Ingested: func(kind string) { c.metrics.ingested.WithLabelValues(kind).Inc() },
		Rejected: func(subject string) { c.metrics.rejected.WithLabelValues(kindLabel(subject)).Inc() },
		StoreFailing: func(err error) {
			if err != nil {
				c.problems.set(ProblemStore, err)
			} else {
				c.problems.clear(ProblemStore)
			}
		},
		RejectRecorded: c.streams.RemoveRejected,
	}, c.log)
}

// consume binds the controller's durable consumer cfg on stream and hands
// its messages to handle (ingest.Consume); the watchers started by
// watchConsumers recreate it should it disappear.
func (c *Controller) consume(ctx context.Context, stream string, cfg jetstream.ConsumerConfig, handle jetstream.MessageHandler, what string) error {
	b, err := ingest.Consume(ctx, c.js, stream, cfg, handle, what, c.streams.Ensure, c.log, func(what string) {
		if h := c.testHookRebind.Load(); h != nil {
			(*h)(what)
		}
	})
	if err != nil {
		return err
	}
	c.consumers = append(c.consumers, b)
	return nil
}

// watchConsumers watches the durable consumers until ctx ends.
func (c *Controller) watchConsumers(ctx context.Context) {
	for _, b := range c.consumers {
		c.bg.Add(1)
		go func() { defer c.bg.Done(); b.Watch(ctx) }()
	}
}

// storeHello stores an agent's hello, which the events stream took at
// storedAt, and tells the live views.
//
// A hello of a second process claiming the agent's id while another holds
// it is refused (recorded under /api/rejected): the first's announcement
// stands. A stale one (claimStale) claims nothing and is stored as any
// hello is: the store keeps the newest start's announcement.
func (c *Controller) storeHello(h *protocol.AgentHello, storedAt time.Time) error {
	if holder, verdict := c.claimInstance(h.AgentID, helloClaim(h), time.Now().UTC()); verdict == claimRefused {
		refusal := duplicateRefusal(h.AgentID, holder, time.Now())
		c.refuse(h.AgentID, RefusalDuplicate, refusal)
		if v, err := c.agentView(h.AgentID); err == nil {
			c.emit(api.EventAgent, h.AgentID, v)
		}
		return store.Rejectf("agent hello from host %s (instance %s): %s", h.Hostname, h.Instance, refusal)
	}
	if err := c.store.PutAgentHello(*h, storedAt.UTC()); err != nil {
		return err
	}
	c.live.Seen(h.AgentID, storedAt, "", "")
	if v, err := c.agentView(h.AgentID); err == nil {
		c.emit(api.EventAgent, h.AgentID, v)
	}
	return nil
}

// applyState applies a job's state change and tells the live views.
func (c *Controller) applyState(s *protocol.JobStateChange, now time.Time) error {
	rec, changed, err := c.store.ApplyJobState(*s, now)
	if err != nil {
		return err
	}
	if changed {
		if rec.State.Terminal() {
			c.live.JobEnded(s.JobID)
		}
		c.emit(api.EventState, s.AgentID, *s)
	}
	if rec.CancelRequested && !s.State.Terminal() {
		// Its agent took the job as (or after) it was cancelled: ask
		// it again, now that it runs it.
		c.jobs.SendCancel(s.AgentID, s.JobID)
	}
	return nil
}

// emitResult tells the live views that m is stored.
func (c *Controller) emitResult(m *protocol.ResultMessage) {
	ev := api.ResultEvent{RunID: m.Run.ID, JobID: m.Run.JobID, SweepID: m.Run.SweepID, AgentID: m.AgentID, Final: m.Final, Status: m.Run.Status, Simulated: m.Run.Simulated}
	if m.Combination != nil {
		k := m.Combination.ComboKey
		ev.Combo = &k
	}
	c.emit(api.EventResult, m.AgentID, ev)
}
