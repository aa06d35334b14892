package controller

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// maxIngestBatch bounds the messages stored in one transaction. The events
// consumer's MaxAckPending bounds how many can wait anyway.
const maxIngestBatch = 256

// startIngest starts the goroutine that stores the events consumer's
// messages and returns the consumer's handler, which hands each message
// to it. Storing one message per transaction costs a write to disk and
// its fsync each, a few milliseconds: a fleet's results would queue up
// behind them. The goroutine takes every message waiting, up to
// maxIngestBatch, and stores the result messages among them in one
// transaction (storeBatch). Messages are stored and acknowledged in the
// order they came, as before. The handler decodes a result message before
// it hands it on, so that decoding the next messages (on the consumer's
// goroutine) overlaps storing the last ones. It runs until ctx ends, then stores what
// it was handed already: Close drains the consumption first, so nothing
// is handed after.
func (c *Controller) startIngest(ctx context.Context) jetstream.MessageHandler {
	q := make(chan queuedMsg, maxIngestBatch)
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		batch := make([]queuedMsg, 0, maxIngestBatch)
		for {
			select {
			case m := <-q:
				batch = append(batch, m)
			case <-ctx.Done():
				// The rest is stored before the store closes; what is
				// left unacknowledged is delivered again after a restart.
				for len(q) > 0 {
					batch = append(batch, <-q)
				}
				c.storeBatch(batch)
				return
			}
		more:
			for len(batch) < maxIngestBatch {
				select {
				case m := <-q:
					batch = append(batch, m)
				default:
					break more
				}
			}
			c.storeBatch(batch)
			clear(batch)
			batch = batch[:0]
		}
	}()
	return func(msg jetstream.Msg) {
		select {
		case q <- queuedMsg{msg, decodeResult(msg)}:
		case <-c.done: // closing: unacknowledged, it is delivered again
		}
	}
}

// queuedMsg is a message on its way to the store; m is its result
// message, decoded, or nil for anything else.
type queuedMsg struct {
	msg jetstream.Msg
	m   *protocol.ResultMessage
}

// storeBatch stores messages in their order. Consecutive result messages
// go into one transaction (store.ApplyResults); anything else, and a
// result that does not decode, is handled alone by handleDurable. When a
// batch fails as a whole (one message refused, a store error), nothing of
// it was stored and each of its messages is handled alone, so that one
// refused message is refused on its own and the others are stored, as
// one at a time. A redelivered message rewrites the same records, so
// nothing counts twice either way.
func (c *Controller) storeBatch(qs []queuedMsg) {
	var results []queuedMsg
	for _, q := range qs {
		if q.m != nil {
			results = append(results, q)
			continue
		}
		c.storeResults(results)
		results = results[:0]
		c.handleDurable(q.msg)
	}
	c.storeResults(results)
}

// decodeResult is msg's result message when msg is one that decodes and
// names the agent of its subject; nil otherwise.
func decodeResult(msg jetstream.Msg) *protocol.ResultMessage {
	agent, kind, err := parseAgentSubject(msg.Subject())
	if err != nil || kind != protocol.KindResult {
		return nil
	}
	m, err := decodeEvent(msg.Data(), agent, protocol.DecodeResultMessage, func(m *protocol.ResultMessage) string { return m.AgentID })
	if err != nil {
		return nil
	}
	return m
}

// storeResults stores result messages in one transaction and acks them,
// or, when it fails, hands each to handleDurable.
func (c *Controller) storeResults(rs []queuedMsg) {
	if len(rs) == 0 {
		return
	}
	// A lone result goes the same way: handing it to handleDurable would
	// decode it a second time.
	ms := make([]protocol.ResultMessage, len(rs))
	for i, r := range rs {
		ms[i] = *r.m
	}
	if err := c.store.ApplyResults(ms, time.Now().UTC()); err != nil {
		c.log.Debug().Err(err).Int("messages", len(rs)).Msg("a batch of results failed as a whole; storing them one at a time")
		for _, r := range rs {
			c.handleDurable(r.msg)
		}
		return
	}
	c.problems.clear(ProblemStore)
	for _, r := range rs {
		c.metrics.ingested.WithLabelValues(protocol.KindResult).Inc()
		if err := r.msg.Ack(); err != nil {
			c.log.Warn().Err(err).Str("subject", r.msg.Subject()).Msg("ack failed; the message will be redelivered and stored again idempotently")
		}
		c.emitResult(r.m)
	}
}
