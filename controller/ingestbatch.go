package controller

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// maxIngestBatch bounds the messages stored in one transaction. The events
// consumer's MaxAckPending bounds how many can wait anyway. A batch costs
// a read of each run's header and job it touches and an fsync, so larger
// batches store a fleet's results, spread over many runs, for less: 1,024
// stored 10 % more a second than 256 (docs/benchmarks.md).
const maxIngestBatch = 1024

// ingestQueue is how many messages may be on their way from the consumer
// to the store: decoded, being decoded, or waiting for a decoder; and
// ingestQueueBytes how many bytes, which bounds the memory they hold
// whatever their size (a message may have up to 8 MiB).
const (
	ingestQueue      = 2 * maxIngestBatch
	ingestQueueBytes = 64 << 20
)

// startIngest starts the goroutines that decode and store the events
// consumer's messages and returns the consumer's handler, which hands each
// message to them. Storing one message per transaction costs a write to
// disk and its fsync each, a few milliseconds: a fleet's results would
// queue up behind them. So the storing goroutine takes every message
// waiting, up to maxIngestBatch, and stores the result messages among them
// in one transaction (storeBatch), in the order they came, and acks them
// after it. Decoding a result message costs more than storing it (its
// JSON is most of the work of the ingest), so the messages are decoded
// before, by a decoder per core, while the last batch is stored. It runs
// until ctx ends, then stores what it was handed already: Close drains the
// consumption first, so nothing is handed after.
func (c *Controller) startIngest(ctx context.Context) jetstream.MessageHandler {
	queue := make(chan *queuedMsg, ingestQueue)
	work := make(chan *queuedMsg, ingestQueue)
	budget := newByteBudget(ingestQueueBytes)
	stored := make(chan struct{})
	for range runtime.GOMAXPROCS(0) {
		c.bg.Add(1)
		go func() {
			defer c.bg.Done()
			var prep store.Preparer
			for {
				select {
				case q := <-work:
					q.r = decodeResult(q.msg, c.headers, &prep)
					close(q.decoded)
				case <-stored:
					return
				}
			}
		}()
	}
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		// The decoders stop after the last store: the messages stored
		// then wait for them.
		defer close(stored)
		batch := make([]*queuedMsg, 0, maxIngestBatch)
		for {
			select {
			case q := <-queue:
				batch = append(batch, q)
			case <-ctx.Done():
				// The rest is stored before the store closes; what is
				// left unacknowledged is delivered again after a restart.
				for len(queue) > 0 {
					batch = append(batch, <-queue)
				}
				c.storeBatch(batch)
				return
			}
		more:
			for len(batch) < maxIngestBatch {
				select {
				case q := <-queue:
					batch = append(batch, q)
				default:
					break more
				}
			}
			c.storeBatch(batch)
			n := 0
			for _, q := range batch {
				n += len(q.msg.Data())
			}
			budget.release(n)
			clear(batch)
			batch = batch[:0]
		}
	}()
	return func(msg jetstream.Msg) {
		if !budget.take(len(msg.Data()), c.done) {
			return // closing: unacknowledged, it is delivered again
		}
		q := &queuedMsg{msg: msg, decoded: make(chan struct{})}
		select {
		case queue <- q:
		case <-c.done:
			return
		}
		// Queued, it will be stored, which waits for its decoding: the
		// decoders run until then, so this send does not wait for ever.
		work <- q
	}
}

// byteBudget bounds the bytes of the messages on their way to the store.
type byteBudget struct {
	mu    sync.Mutex
	most  int
	used  int
	freed chan struct{} // closed at the next release
}

func newByteBudget(most int) *byteBudget {
	return &byteBudget{most: most, freed: make(chan struct{})}
}

// take waits until the messages on their way hold less than the budget,
// then counts n bytes more; one message is taken whatever its size. It
// returns false, taking nothing, once stop is closed.
func (b *byteBudget) take(n int, stop <-chan struct{}) bool {
	for {
		b.mu.Lock()
		if b.used < b.most {
			b.used += n
			b.mu.Unlock()
			return true
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-stop:
			return false
		}
	}
}

// release counts n bytes stored.
func (b *byteBudget) release(n int) {
	b.mu.Lock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

// queuedMsg is a message on its way to the store. r is its result
// message, decoded and prepared for storing, or nil for anything else,
// once decoded is closed.
type queuedMsg struct {
	msg     jetstream.Msg
	decoded chan struct{}
	r       *store.Result
}

// storeBatch stores messages in their order. Consecutive result messages
// go into one transaction (store.ApplyResults); anything else, and a
// result that does not decode, is handled alone by handleDurable. When a
// batch fails as a whole (one message refused, a store error), nothing of
// it was stored and each of its messages is handled alone, so that one
// refused message is refused on its own and the others are stored, as
// one at a time. A redelivered message rewrites the same records, so
// nothing counts twice either way.
func (c *Controller) storeBatch(qs []*queuedMsg) {
	var results []*queuedMsg
	for _, q := range qs {
		<-q.decoded
		if q.r != nil {
			results = append(results, q)
			continue
		}
		c.storeResults(results)
		results = results[:0]
		c.handleDurable(q.msg)
	}
	c.storeResults(results)
}

// runHeadersKept is how many run headers the controller remembers, by
// their bytes, not to decode them again (protocol.HeaderCache): more than
// the runs whose results arrive together, one per agent measuring.
const runHeadersKept = 2048

// decodeResult is msg's result message, prepared for storing, when msg is
// one that decodes and names the agent of its subject; nil otherwise,
// for handleDurable to settle. headers remembers the run headers; prep is
// the calling goroutine's.
func decodeResult(msg jetstream.Msg, headers *protocol.HeaderCache, prep *store.Preparer) *store.Result {
	agent, kind, err := parseAgentSubject(msg.Subject())
	if err != nil || kind != protocol.KindResult {
		return nil
	}
	m, err := decodeEvent(msg.Data(), agent, func(data []byte) (*protocol.ReceivedResult, error) {
		return protocol.DecodeReceivedResult(data, headers)
	}, func(m *protocol.ReceivedResult) string { return m.AgentID })
	if err != nil {
		return nil
	}
	r, err := prep.Prepare(m)
	if err != nil {
		return nil
	}
	return r
}

// storeResults stores result messages in one transaction and acks them,
// or, when it fails, hands each to handleDurable.
func (c *Controller) storeResults(rs []*queuedMsg) {
	if len(rs) == 0 {
		return
	}
	// A lone result goes the same way: handing it to handleDurable would
	// decode it a second time.
	ms := make([]*store.Result, len(rs))
	for i, r := range rs {
		ms[i] = r.r
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
		c.emitResult(&r.r.ResultMessage)
	}
}
