package ingest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/received"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// maxBatch bounds the messages stored in one transaction. The events
// consumer's MaxAckPending bounds how many can wait anyway. A batch costs
// a read of each run's header and job it touches and an fsync, so larger
// batches store a fleet's results, spread over many runs, for less: 1,024
// stored 10 % more a second than 256 (docs/benchmarks.md).
const maxBatch = 1024

// queueLen is how many messages may be on their way from the consumer to
// the store: decoded, being decoded, or waiting for a decoder; and
// queueBytes how many bytes, which bounds the memory they hold whatever
// their size (a message may have up to 8 MiB).
const (
	queueLen   = 2 * maxBatch
	queueBytes = 64 << 20
)

// runHeadersKept is how many run headers the controller remembers, by
// their bytes, not to decode them again (received.HeaderCache): more than
// the runs whose results arrive together, one per agent measuring.
const runHeadersKept = 2048

// Store is what ingestion writes results and rejections to.
type Store interface {
	ApplyResults(ms []*store.Result, receivedAt time.Time) (refused []error, err error)
	Reject(r store.Rejection, data []byte) error
}

// Hooks are what the controller does besides storing results. Each must
// be set.
type Hooks struct {
	// Hello stores an agent's hello, which the events stream took at
	// storedAt, and tells the live views.
	Hello func(h *protocol.AgentHello, storedAt time.Time) error
	// State applies a job's state change received now.
	State func(s *protocol.JobStateChange, now time.Time) error
	// Stored tells the live views that a result message is stored.
	Stored func(m *protocol.ResultMessage)
	// Ingested counts a message of kind stored; Rejected one refused, by
	// its subject.
	Ingested func(kind string)
	Rejected func(subject string)
	// StoreFailing reports that storing fails and is retried (err), or
	// works again (nil).
	StoreFailing func(err error)
	// RejectRecorded runs once a rejected message is recorded in the
	// store: the controller removes it from its stream.
	RejectRecorded func(msg jetstream.Msg, seq uint64, reason string)
}

// Ingester decodes, stores and settles the events consumer's messages.
type Ingester struct {
	store   Store
	hooks   Hooks
	log     zerolog.Logger
	headers *received.HeaderCache
}

// New is an Ingester storing into st.
func New(st Store, hooks Hooks, log zerolog.Logger) *Ingester {
	return &Ingester{store: st, hooks: hooks, log: log, headers: received.NewHeaderCache(runHeadersKept)}
}

// Start starts the goroutines that decode and store the events
// consumer's messages and returns the consumer's handler, which hands each
// message to them. Storing one message per transaction costs a write to
// disk and its fsync each, a few milliseconds: a fleet's results would
// queue up behind them. So the storing goroutine takes every message
// waiting, up to maxBatch, and stores them as one batch (Handle's), in
// the order they came, and settles each after it. Decoding a result
// message costs more than storing it (its JSON is most of the work of the
// ingest), so the messages are decoded before, by a decoder per core,
// while the last batch is stored. It runs until ctx ends, then stores what
// it was handed already: the caller drains the consumption first, so
// nothing is handed after; closing makes the handler return without
// taking a message. wg counts the goroutines.
func (in *Ingester) Start(ctx context.Context, wg *sync.WaitGroup, closing <-chan struct{}) jetstream.MessageHandler {
	queue := make(chan *queued, queueLen)
	work := make(chan *queued, queueLen)
	budget := newByteBudget(queueBytes)
	stored := make(chan struct{})
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var prep store.Preparer
			for {
				select {
				case q := <-work:
					q.ev = in.decode(q.msg, &prep)
					close(q.decoded)
				case <-stored:
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		// The decoders stop after the last store: the messages stored
		// then wait for them.
		defer close(stored)
		batch := make([]*queued, 0, maxBatch)
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
				in.storeBatch(batch)
				return
			}
		more:
			for len(batch) < maxBatch {
				select {
				case q := <-queue:
					batch = append(batch, q)
				default:
					break more
				}
			}
			in.storeBatch(batch)
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
		if !budget.take(len(msg.Data()), closing) {
			return // closing: unacknowledged, it is delivered again
		}
		q := &queued{msg: msg, decoded: make(chan struct{})}
		select {
		case queue <- q:
		case <-closing:
			return
		}
		// Queued, it will be stored, which waits for its decoding: the
		// decoders run until then, so this send does not wait for ever.
		work <- q
	}
}

// Handle decodes msgs and stores them as one batch, as Start's goroutines
// do with the messages waiting together; a single message is a batch of
// one.
func (in *Ingester) Handle(msgs ...jetstream.Msg) {
	qs := make([]*queued, len(msgs))
	var prep store.Preparer
	for i, msg := range msgs {
		qs[i] = &queued{msg: msg, decoded: make(chan struct{}), ev: in.decode(msg, &prep)}
		close(qs[i].decoded)
	}
	in.storeBatch(qs)
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

// queued is a message on its way to the store; ev is what it decoded to,
// once decoded is closed.
type queued struct {
	msg     jetstream.Msg
	decoded chan struct{}
	ev      event
}

// event is a decoded agent event: one of hello, state and result, or err,
// a *store.RejectError, when it can never be stored.
type event struct {
	kind   string
	hello  *protocol.AgentHello
	state  *protocol.JobStateChange
	result *store.Result
	err    error
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

// decode decodes msg, a result prepared for storing by prep, the calling
// goroutine's.
func (in *Ingester) decode(msg jetstream.Msg, prep *store.Preparer) event {
	agent, kind, err := protocol.ParseAgentSubject(msg.Subject())
	if err != nil {
		return event{err: store.Rejectf("%v", err)}
	}
	ev := event{kind: kind}
	switch kind {
	case protocol.KindHello:
		ev.hello, ev.err = decodeEvent(msg.Data(), agent, protocol.DecodeAgentHello, func(h *protocol.AgentHello) string { return h.AgentID })
	case protocol.KindState:
		ev.state, ev.err = decodeEvent(msg.Data(), agent, protocol.DecodeJobStateChange, func(s *protocol.JobStateChange) string { return s.AgentID })
	case protocol.KindResult:
		var m *received.Result
		m, ev.err = decodeEvent(msg.Data(), agent, func(data []byte) (*received.Result, error) {
			return received.Decode(data, in.headers)
		}, func(m *received.Result) string { return m.AgentID })
		if ev.err == nil {
			ev.result, ev.err = prep.Prepare(m)
		}
	default:
		ev.err = store.Rejectf("subject %q: unknown event kind %q (want hello, state or result)", msg.Subject(), kind)
	}
	return ev
}

// storeBatch stores messages in their order and settles each.
// Consecutive result messages go into one transaction (storeResults);
// a hello or a state is stored alone between them, and a message that
// does not decode is refused where it stands. A redelivered message
// rewrites the same records, so nothing counts twice.
//
// States and results are stored only for what the controller made: a state
// for a job the store holds and the sender runs, a result for a run of an
// attempt that job has reported (store.ApplyJobState, store.ApplyResults).
// Refusing the rest loses no real message: the scheduler stores a job
// before it publishes it, and an agent's messages for the job follow, in
// publish order on the one events stream this consumer reads in order
// (an attempt's accepted state before its results). What is refused so
// comes from elsewhere (a database replaced or restored from an older
// copy, another controller on the same streams) or from a redelivery that
// overtook a state the store failed to take; it is recorded under
// /api/rejected with its message, for an operator.
func (in *Ingester) storeBatch(qs []*queued) {
	var results []*queued
	for _, q := range qs {
		<-q.decoded
		if q.ev.err == nil && q.ev.kind == protocol.KindResult {
			results = append(results, q)
			continue
		}
		in.storeResults(results)
		results = results[:0]
		in.settle(q.msg, q.ev.kind, in.storeOne(q.msg, q.ev))
	}
	in.storeResults(results)
}

// storeOne stores a hello or a state; an event that did not decode comes
// back as its error.
func (in *Ingester) storeOne(msg jetstream.Msg, ev event) error {
	switch {
	case ev.err != nil:
		return ev.err
	case ev.hello != nil:
		return in.hooks.Hello(ev.hello, storedAt(msg))
	default:
		return in.hooks.State(ev.state, time.Now().UTC())
	}
}

// storedAt is when the events stream took msg, or now.
func storedAt(msg jetstream.Msg) time.Time {
	if md, err := msg.Metadata(); err == nil && !md.Timestamp.IsZero() {
		return md.Timestamp
	}
	return time.Now()
}

// storeResults stores result messages in one transaction and settles each:
// the stored ones acked, the refused ones (store.Refused) recorded and
// terminated, in the same pass. When the transaction fails at a message
// whose failure would repeat (store.Permanent), that one is refused and
// the others are stored again without it; when it fails otherwise (a full
// disk, a closing database), each is retried later as Settle says.
func (in *Ingester) storeResults(rs []*queued) {
	for len(rs) > 0 {
		ms := make([]*store.Result, len(rs))
		for i, r := range rs {
			ms[i] = r.ev.result
		}
		refused, err := in.store.ApplyResults(ms, time.Now().UTC())
		var be *store.BatchError
		if errors.As(err, &be) && store.Permanent(be.Err) {
			in.settle(rs[be.Index].msg, protocol.KindResult, be.Err)
			rs = append(rs[:be.Index:be.Index], rs[be.Index+1:]...)
			continue
		}
		if err != nil {
			in.log.Debug().Err(err).Int("messages", len(rs)).Msg("storing a batch of results failed; each is retried")
			for _, r := range rs {
				in.settle(r.msg, protocol.KindResult, err)
			}
			return
		}
		in.hooks.StoreFailing(nil)
		for i, r := range rs {
			if err := refused[i]; errors.Is(err, store.ErrUnreportedAttempt) {
				in.log.Info().Str("run", r.ev.result.Run.ID).Str("agent", r.ev.result.AgentID).
					Msg("not closing a run: its attempt never reached an agent (the job's delivery was lost and made again)")
			} else if err != nil {
				in.settle(r.msg, protocol.KindResult, err)
				continue
			}
			in.hooks.Ingested(protocol.KindResult)
			if err := r.msg.Ack(); err != nil {
				in.log.Warn().Err(err).Str("subject", r.msg.Subject()).Msg("ack failed; the message will be redelivered and stored again idempotently")
			}
			if refused[i] == nil {
				in.hooks.Stored(&r.ev.result.ResultMessage)
			}
		}
		return
	}
}

// settle acks, refuses or retries msg, of kind, after storing it ended in
// err (Settle).
func (in *Ingester) settle(msg jetstream.Msg, kind string, err error) {
	var seq uint64
	var delivered uint64 = 1
	if err != nil {
		if md, merr := msg.Metadata(); merr == nil {
			seq, delivered = md.Sequence.Stream, md.NumDelivered
		}
	}
	d := Settle(err, delivered)
	if d.Action == Retry {
		in.hooks.StoreFailing(fmt.Errorf("storing what agents report fails (retried): %w", err))
	} else {
		in.hooks.StoreFailing(nil)
	}
	switch d.Action {
	case Ack:
		in.hooks.Ingested(kind)
		if aerr := msg.Ack(); aerr != nil {
			in.log.Warn().Err(aerr).Str("subject", msg.Subject()).Msg("ack failed; the message will be redelivered and stored again idempotently")
		}
	case Reject:
		in.hooks.Rejected(msg.Subject())
		in.Reject(msg, seq, d.Reason)
	default:
		in.log.Error().Err(err).Str("subject", msg.Subject()).Uint64("delivery", delivered).Dur("retry_in", d.Delay).Msg("storing an agent event failed")
		_ = msg.NakWithDelay(d.Delay)
	}
}

// Reject records msg, stream sequence seq, as rejected for reason,
// terminates it and, once it is recorded, has the controller remove it
// from its stream (Hooks.RejectRecorded).
func (in *Ingester) Reject(msg jetstream.Msg, seq uint64, reason string) {
	in.log.Warn().Str("subject", msg.Subject()).Uint64("stream_seq", seq).Str("reason", reason).Msg("rejected an agent event")
	// A compressed message is kept as its JSON, for an operator to read.
	data, err := protocol.Uncompress(msg.Data())
	if err != nil {
		data = msg.Data()
	}
	recorded := true
	if err := in.store.Reject(store.Rejection{Time: time.Now().UTC(), Subject: msg.Subject(), StreamSeq: seq, Reason: reason}, data); err != nil {
		in.log.Error().Err(err).Msg("recording a rejection failed; the message stays in the stream")
		recorded = false
	}
	if err := msg.TermWithReason(Truncate(reason, 200)); err != nil {
		in.log.Warn().Err(err).Msg("term failed")
	}
	if recorded {
		in.hooks.RejectRecorded(msg, seq, reason)
	}
}

// Truncate is s cut to n bytes at most.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
