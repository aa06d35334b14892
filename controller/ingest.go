package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/internal/backoff"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// MaxDeliveries is how often the controller's consumer receives one
// message before giving up on it; the last delivery is recorded as a
// rejection instead of being retried (see handleDurable).
const MaxDeliveries = 50

// EventsConsumerConfig is the controller's durable consumer on the events
// stream. A message is stored (Ack), refused for good (Term, recorded in the
// rejected bucket: malformed, not allowed, or a store error that would
// repeat identically), or retried after a transient store failure (Nak with
// a growing delay) until its last delivery, which is recorded and
// terminated: a message awaiting retry holds one of MaxAckPending slots, so
// retrying without end would let thousands of them stop ingestion.
// MaxAckPending is several times what one transaction stores
// (maxIngestBatch): with only one batch's worth, the server sent nothing
// while a batch was being written, and the decoders stood idle.
func EventsConsumerConfig() jetstream.ConsumerConfig {
	return durableConsumer("vlmfleet controller: stores agent events", 4096)
}

// durableConsumer is the configuration of a consumer of the controller's
// whose messages are settled as EventsConsumerConfig says.
func durableConsumer(description string, maxAckPending int) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       ConsumerName,
		Description:   description,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       30 * time.Second,
		MaxDeliver:    MaxDeliveries,
		MaxAckPending: maxAckPending,
	}
}

// consume binds the controller's durable consumer cfg on stream and hands
// its messages to handle; what names the consumer in the log and in
// /api/health. Should the consumer disappear later, its binding recreates
// it (see binding; watchConsumers runs the watchers).
func (c *Controller) consume(ctx context.Context, stream string, cfg jetstream.ConsumerConfig, handle jetstream.MessageHandler, what string) error {
	b := &binding{c: c, stream: stream, cfg: cfg, handle: handle, what: what, kick: make(chan struct{}, 1)}
	if err := b.bind(ctx); err != nil {
		return err
	}
	c.consumers = append(c.consumers, b)
	return nil
}

// watchConsumers watches the durable consumers until ctx ends.
func (c *Controller) watchConsumers(ctx context.Context) {
	for _, b := range c.consumers {
		c.bg.Add(1)
		go func() { defer c.bg.Done(); b.watch(ctx) }()
	}
}

// parseAgentSubject splits vlmfleet.agent.<id>.<kind>.
func parseAgentSubject(subject string) (agentID, kind string, err error) {
	t := strings.Split(subject, ".")
	if len(t) != 4 || t[0] != protocol.SubjectPrefix || t[1] != "agent" {
		return "", "", fmt.Errorf("subject %q is not %s.agent.<id>.<kind>", subject, protocol.SubjectPrefix)
	}
	if err := protocol.ValidateAgentID(t[2]); err != nil {
		return "", "", fmt.Errorf("subject %q: %w", subject, err)
	}
	return t[2], t[3], nil
}

func (c *Controller) handleDurable(msg jetstream.Msg) {
	var seq uint64
	var storedAt time.Time
	var delivered uint64 = 1
	if md, err := msg.Metadata(); err == nil {
		seq, storedAt, delivered = md.Sequence.Stream, md.Timestamp, md.NumDelivered
	}
	if storedAt.IsZero() {
		storedAt = time.Now()
	}
	err := c.ingest(msg.Subject(), msg.Data(), storedAt)
	d := settle(err, delivered)
	if d.action == actRetry {
		c.problems.set(ProblemStore, fmt.Errorf("storing what agents report fails (retried): %w", err))
	} else {
		c.problems.clear(ProblemStore)
	}
	switch d.action {
	case actAck:
		c.metrics.ingested.WithLabelValues(kindLabel(msg.Subject())).Inc()
		if aerr := msg.Ack(); aerr != nil {
			c.log.Warn().Err(aerr).Str("subject", msg.Subject()).Msg("ack failed; the message will be redelivered and stored again idempotently")
		}
	case actReject:
		c.metrics.rejected.WithLabelValues(kindLabel(msg.Subject())).Inc()
		c.reject(msg, seq, d.reason)
	default:
		c.log.Error().Err(err).Str("subject", msg.Subject()).Uint64("delivery", delivered).Dur("retry_in", d.delay).Msg("storing an agent event failed")
		_ = msg.NakWithDelay(d.delay)
	}
}

type action int

const (
	actAck action = iota
	actReject
	actRetry
)

// disposition is what to do with a message after trying to store it.
type disposition struct {
	action action
	reason string        // actReject: what is recorded
	delay  time.Duration // actRetry: when to try again
}

// settle decides a message's fate from the result of storing it on its
// delivered-th delivery. Only errors that may pass (a full disk, a closing
// database) are retried; retrying one that repeats identically would hold
// a slot of MaxAckPending for nothing.
func settle(err error, delivered uint64) disposition {
	var rej *store.RejectError
	switch {
	case err == nil:
		return disposition{action: actAck}
	case errors.As(err, &rej):
		return disposition{action: actReject, reason: rej.Reason}
	case store.Permanent(err):
		return disposition{action: actReject, reason: "the store refuses it: " + err.Error()}
	case delivered >= MaxDeliveries:
		return disposition{action: actReject, reason: fmt.Sprintf("storing failed on all %d deliveries, last: %v", delivered, err)}
	default:
		return disposition{action: actRetry, delay: nakDelay(delivered)}
	}
}

// nakDelay spaces the redeliveries of a message the store failed to take.
// JetStream does the waiting (NakWithDelay), so the delay follows from the
// delivery count instead of a loop's state. It grows to half a minute, not
// the agents' few seconds: a store failing for that long (a full disk) waits
// for an operator, and retrying faster would only fill the log.
func nakDelay(delivered uint64) time.Duration {
	return backoff.Policy{First: 500 * time.Millisecond, Max: 30 * time.Second}.Delay(int(min(delivered, MaxDeliveries)))
}

func (c *Controller) reject(msg jetstream.Msg, seq uint64, reason string) {
	c.log.Warn().Str("subject", msg.Subject()).Uint64("stream_seq", seq).Str("reason", reason).Msg("rejected an agent event")
	// A compressed message is kept as its JSON, for an operator to read.
	data, err := protocol.Uncompress(msg.Data())
	if err != nil {
		data = msg.Data()
	}
	recorded := true
	if err := c.store.Reject(store.Rejection{Time: time.Now().UTC(), Subject: msg.Subject(), StreamSeq: seq, Reason: reason}, data); err != nil {
		c.log.Error().Err(err).Msg("recording a rejection failed; the message stays in the stream")
		recorded = false
	}
	if err := msg.TermWithReason(truncate(reason, 200)); err != nil {
		c.log.Warn().Err(err).Msg("term failed")
	}
	if recorded {
		c.removeRejected(msg, seq, reason)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// decodeEvent decodes a durable agent event. One that does not decode, or
// says it is from another agent than its subject names, can never be
// stored: a *store.RejectError.
func decodeEvent[T any](data []byte, subjAgent string, decode func([]byte) (*T, error), agentOf func(*T) string) (*T, error) {
	v, err := decode(data)
	if err != nil {
		return nil, store.Rejectf("%v", err)
	}
	if id := agentOf(v); id != subjAgent {
		return nil, store.Rejectf("subject names agent %q but the message says agent_id %q", subjAgent, id)
	}
	return v, nil
}

// ingest decodes one durable agent event and stores it. A message that can
// never be stored comes back as a *store.RejectError.
//
// States and results are stored only for what the controller made: a state
// for a job the store holds and the sender runs, a result for a run of an
// attempt that job has reported (store.ApplyJobState, store.ApplyResult).
// Refusing the rest loses no real message: the scheduler stores a job
// before it publishes it, and an agent's messages for the job follow, in
// publish order on the one events stream this consumer reads in order
// (an attempt's accepted state before its results). What is refused so
// comes from elsewhere (a database replaced or restored from an older
// copy, another controller on the same streams) or from a redelivery that
// overtook a state the store failed to take; it is recorded under
// /api/rejected with its message, for an operator.
func (c *Controller) ingest(subject string, data []byte, storedAt time.Time) error {
	subjAgent, kind, err := parseAgentSubject(subject)
	if err != nil {
		return store.Rejectf("%v", err)
	}
	now := time.Now().UTC()
	switch kind {
	case protocol.KindHello:
		h, err := decodeEvent(data, subjAgent, protocol.DecodeAgentHello, func(h *protocol.AgentHello) string { return h.AgentID })
		if err != nil {
			return err
		}
		if err := c.store.PutAgentHello(*h, storedAt.UTC()); err != nil {
			return err
		}
		c.live.seen(h.AgentID, storedAt, "", "")
		if v, err := c.agentView(h.AgentID); err == nil {
			c.emit(EventAgent, h.AgentID, v)
		}
	case protocol.KindState:
		s, err := decodeEvent(data, subjAgent, protocol.DecodeJobStateChange, func(s *protocol.JobStateChange) string { return s.AgentID })
		if err != nil {
			return err
		}
		rec, changed, err := c.store.ApplyJobState(*s, now)
		if err != nil {
			return err
		}
		if changed {
			if rec.State.Terminal() {
				c.live.jobEnded(s.JobID)
			}
			c.emit(EventState, s.AgentID, *s)
		}
		if rec.CancelRequested && !s.State.Terminal() {
			// Its agent took the job as (or after) it was cancelled: ask
			// it again, now that it runs it.
			c.sendCancel(s.AgentID, s.JobID)
		}
	case protocol.KindResult:
		rm, err := decodeEvent(data, subjAgent, func(data []byte) (*protocol.ReceivedResult, error) {
			return protocol.DecodeReceivedResult(data, c.headers)
		}, func(m *protocol.ReceivedResult) string { return m.AgentID })
		if err != nil {
			return err
		}
		m, err := store.PrepareResult(rm)
		if err != nil {
			return err
		}
		if err := c.store.ApplyPrepared(m, now); errors.Is(err, store.ErrUnreportedAttempt) {
			c.log.Info().Str("run", m.Run.ID).Str("agent", m.AgentID).
				Msg("not closing a run: its attempt never reached an agent (the job's delivery was lost and made again)")
			return nil
		} else if err != nil {
			return err
		}
		c.emitResult(&m.ResultMessage)
	default:
		return store.Rejectf("subject %q: unknown event kind %q (want hello, state or result)", subject, kind)
	}
	return nil
}

// emitResult tells the live views that m is stored.
func (c *Controller) emitResult(m *protocol.ResultMessage) {
	ev := ResultEvent{RunID: m.Run.ID, JobID: m.Run.JobID, SweepID: m.Run.SweepID, AgentID: m.AgentID, Final: m.Final, Status: m.Run.Status, Simulated: m.Run.Simulated}
	if m.Combination != nil {
		k := m.Combination.ComboKey
		ev.Combo = &k
	}
	c.emit(EventResult, m.AgentID, ev)
}
