// Package ingest is the controller's one path for what agents publish on
// the events stream: the durable consumer's configuration, its binding and
// consumption (consumer.go), the decoding of each message and the storing
// of batches of them in one transaction each, every message settled inside
// its batch (ingest.go, settle.go), and the controller-only decoding of
// result messages (package decode).
package ingest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/internal/backoff"
	"github.com/vlmfleet/vlmfleet/internal/tick"
)

// consumerCheckEvery is how often a durable consumer's existence is checked
// even when its consumption reports nothing: a consumer deleted while no
// pull request waited on it is noticed at the latest then.
const consumerCheckEvery = 30 * time.Second

// consumePullHeartbeat is how often the server signals an idle pull of the
// controller's consumers; nats.go pulls again after two missed ones. A
// pull waits at the consumer's leader only: in a cluster that loses the
// node leading the consumer, the new leader never heard of it, and with
// nats.go's default (half the 30 s pull) ingestion stood still for 30 s
// (TestNATSClusterNodeKilledMidSweep). The agents' job pulls use 5 s too.
const consumePullHeartbeat = 5 * time.Second

// consumePullBytes bounds what a consumption of the controller's holds
// received and not yet handed on, in bytes rather than messages: results
// range from a few kilobytes to megabytes.
const consumePullBytes = 32 << 20

// rebindPolicy spaces the tries to recreate a lost consumer.
var rebindPolicy = backoff.Policy{First: 250 * time.Millisecond, Max: 15 * time.Second}

// errConsumerStopped ends a rebind once Close has begun.
var errConsumerStopped = errors.New("consumer stopped")

// Binding is one of the controller's durable consumers and its
// consumption. When the consumer disappears (an operator or an external
// server's admin deleted it, or its stream), the binding notices (the
// consumption's error handler, or the periodic check), reports itself lost
// in /api/health and recreates the consumer with the same configuration:
// the stream keeps what was published meanwhile, and ingestion is
// idempotent, so nothing is lost and nothing is stored twice.
type Binding struct {
	js     jetstream.JetStream
	stream string
	cfg    jetstream.ConsumerConfig
	handle jetstream.MessageHandler
	what   string
	kick   chan struct{}
	// ensureStreams makes the controller's streams again, should the
	// consumer's have gone too.
	ensureStreams func(context.Context) error
	log           zerolog.Logger
	// onRebind, when set, runs as the consumer starts being recreated.
	onRebind func(what string)

	mu      sync.Mutex
	cons    jetstream.Consumer
	cc      jetstream.ConsumeContext
	lost    error // non-nil while the consumer is being recreated
	stopped bool
	// restarted is why the next check rebinds even though the consumer
	// exists (JetStream restarted under it); nil otherwise.
	restarted error
}

// Consume binds the durable consumer cfg on stream and hands its messages
// to handle; what names the consumer in the log and in /api/health.
// Should the consumer disappear later, the binding recreates it (Watch).
// ensureStreams makes the controller's streams again when the stream went
// too; onRebind, when not nil, runs as a consumer starts being recreated.
func Consume(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.ConsumerConfig, handle jetstream.MessageHandler, what string,
	ensureStreams func(context.Context) error, log zerolog.Logger, onRebind func(what string)) (*Binding, error) {
	b := &Binding{js: js, stream: stream, cfg: cfg, handle: handle, what: what, kick: make(chan struct{}, 1),
		ensureStreams: ensureStreams, log: log, onRebind: onRebind}
	if err := b.bind(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// bind creates (or updates) the consumer and starts consuming it.
func (b *Binding) bind(ctx context.Context) error {
	js := b.js
	cons, err := js.CreateOrUpdateConsumer(ctx, b.stream, b.cfg)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		// The stream went too: create it again as Start does, then the consumer.
		if serr := b.ensureStreams(ctx); serr != nil {
			return serr
		}
		cons, err = js.CreateOrUpdateConsumer(ctx, b.stream, b.cfg)
	}
	if err != nil {
		return fmt.Errorf("controller: consumer %s on %s: %w", b.cfg.Durable, b.stream, err)
	}
	cc, err := cons.Consume(b.handle, jetstream.ConsumeErrHandler(b.consumeError), jetstream.PullHeartbeat(consumePullHeartbeat), jetstream.PullMaxBytes(consumePullBytes))
	if err != nil {
		return fmt.Errorf("controller: consume %s: %w", b.stream, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		cc.Stop()
		return backoff.Permanent(errConsumerStopped)
	}
	b.cons, b.cc, b.lost = cons, cc, nil
	return nil
}

// consumeError is the consumption's error handler. An error that says the
// consumer is gone, or missing heartbeats (what a consumer deleted without
// a pull request waiting on it looks like), has the watcher check it.
func (b *Binding) consumeError(_ jetstream.ConsumeContext, err error) {
	switch {
	case errors.Is(err, jetstream.ErrConsumerDeleted), errors.Is(err, jetstream.ErrConsumerNotFound),
		errors.Is(err, jetstream.ErrStreamNotFound), errors.Is(err, jetstream.ErrBadRequest):
		b.log.Warn().Err(err).Str("consumer", b.what).Msg("durable consumer reports it is gone; checking it")
	case errors.Is(err, jetstream.ErrNoHeartbeat):
		b.log.Debug().Err(err).Str("consumer", b.what).Msg("missing heartbeats; checking the consumer")
	default:
		b.log.Debug().Err(err).Msg(b.what)
		return
	}
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// Watch checks the consumer when its consumption reports trouble and every
// consumerCheckEvery, recreating it when it is gone, until ctx ends.
func (b *Binding) Watch(ctx context.Context) {
	go tick.Every(ctx, consumerCheckEvery, func() {
		select {
		case b.kick <- struct{}{}:
		default:
		}
	})
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.kick:
			b.check(ctx)
		}
	}
}

// check recreates the consumer when its consumption ended or the server no
// longer knows it. Other failures (a lost connection) are left to the
// client's reconnection and show in /api/health as nats "disconnected".
func (b *Binding) check(ctx context.Context) {
	b.mu.Lock()
	cons, cc, stopped, cause := b.cons, b.cc, b.stopped, b.restarted
	b.restarted = nil
	b.mu.Unlock()
	if stopped || cc == nil {
		return
	}
	select {
	case <-cc.Closed():
		cause = errors.New("its consumption ended")
	default:
		if cause != nil {
			break
		}
		ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := cons.Info(ictx)
		cancel()
		if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
			cause = err
		}
	}
	if cause != nil {
		b.rebind(ctx, cause)
	}
}

// rebind recreates the consumer, retrying until it succeeds or ctx ends.
func (b *Binding) rebind(ctx context.Context, cause error) {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return
	}
	b.lost = cause
	old := b.cc
	b.mu.Unlock()
	old.Stop()
	b.log.Error().Err(cause).Str("consumer", b.what).Str("stream", b.stream).
		Msg("durable consumer lost: ingestion paused, recreating it")
	if b.onRebind != nil {
		b.onRebind(b.what)
	}
	err := rebindPolicy.Retry(ctx, func(attempt int) error {
		err := b.bind(ctx)
		if err != nil && !errors.Is(err, errConsumerStopped) {
			b.mu.Lock()
			b.lost = err
			b.mu.Unlock()
			b.log.Warn().Err(err).Str("consumer", b.what).Int("attempt", attempt).Msg("recreating the durable consumer failed; retrying")
		}
		return err
	})
	if err == nil {
		b.log.Warn().Str("consumer", b.what).Str("stream", b.stream).
			Msg("durable consumer recreated: ingestion resumed with what the stream kept meanwhile")
	}
}

// ForceRebind has the watcher recreate the consumption: after JetStream
// restarted, the pull requests of the old one are gone.
func (b *Binding) ForceRebind(cause error) {
	b.mu.Lock()
	b.restarted = cause
	b.mu.Unlock()
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// Stop ends the binding for the controller's Close: no rebind starts or
// finishes after it. It returns the consumption to drain, nil if none.
func (b *Binding) Stop() jetstream.ConsumeContext {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped = true
	return b.cc
}

// lostErr is why the consumer is being recreated, nil while it consumes.
func (b *Binding) lostErr() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lost
}

// Health is /api/health's "ingest": "ok" while every durable consumer
// consumes, else "rebinding" with what is wrong.
func Health(bs []*Binding) (state, problem string) {
	var problems []string
	for _, b := range bs {
		if err := b.lostErr(); err != nil {
			problems = append(problems, b.what+": "+err.Error())
		}
	}
	if len(problems) == 0 {
		return "ok", ""
	}
	return "rebinding", strings.Join(problems, "; ")
}

// ConsumerName is the controller's durable consumer on the events stream.
const ConsumerName = "controller"

// MaxDeliveries is how often the controller's consumer receives one
// message before giving up on it; the last delivery is recorded as a
// rejection instead of being retried (see Settle).
const MaxDeliveries = 50

// EventsConsumerConfig is the controller's durable consumer on the events
// stream. A message is stored (Ack), refused for good (Term, recorded in the
// rejected bucket: malformed, not allowed, or a store error that would
// repeat identically), or retried after a transient store failure (Nak with
// a growing delay) until its last delivery, which is recorded and
// terminated: a message awaiting retry holds one of MaxAckPending slots, so
// retrying without end would let thousands of them stop ingestion.
// MaxAckPending is several times what one transaction stores
// (maxBatch): with only one batch's worth, the server sent nothing while a
// batch was being written, and the decoders stood idle.
func EventsConsumerConfig() jetstream.ConsumerConfig {
	return DurableConsumer("vlmfleet controller: stores agent events", 4096)
}

// DurableConsumer is the configuration of a consumer of the controller's
// whose messages are settled as EventsConsumerConfig says.
func DurableConsumer(description string, maxAckPending int) jetstream.ConsumerConfig {
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

// Stream is the stream the consumer reads.
func (b *Binding) Stream() string { return b.stream }

// Resume undoes Stop: it binds the consumer again.
func (b *Binding) Resume(ctx context.Context) error {
	b.mu.Lock()
	b.stopped = false
	b.mu.Unlock()
	return b.bind(ctx)
}
