package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

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

// binding is one of the controller's durable consumers and its
// consumption. When the consumer disappears (an operator or an external
// server's admin deleted it, or its stream), the binding notices (the
// consumption's error handler, or the periodic check), reports itself lost
// in /api/health and recreates the consumer with the same configuration:
// the stream keeps what was published meanwhile, and ingestion is
// idempotent, so nothing is lost and nothing is stored twice.
type binding struct {
	c      *Controller
	stream string
	cfg    jetstream.ConsumerConfig
	handle jetstream.MessageHandler
	what   string
	kick   chan struct{}

	mu      sync.Mutex
	cons    jetstream.Consumer
	cc      jetstream.ConsumeContext
	lost    error // non-nil while the consumer is being recreated
	stopped bool
	// restarted is why the next check rebinds even though the consumer
	// exists (JetStream restarted under it); nil otherwise.
	restarted error
}

// bind creates (or updates) the consumer and starts consuming it.
func (b *binding) bind(ctx context.Context) error {
	js := b.c.js
	cons, err := js.CreateOrUpdateConsumer(ctx, b.stream, b.cfg)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		// The stream went too: create it again as Start does, then the consumer.
		if serr := b.c.ensureStreams(ctx); serr != nil {
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
func (b *binding) consumeError(_ jetstream.ConsumeContext, err error) {
	switch {
	case errors.Is(err, jetstream.ErrConsumerDeleted), errors.Is(err, jetstream.ErrConsumerNotFound),
		errors.Is(err, jetstream.ErrStreamNotFound), errors.Is(err, jetstream.ErrBadRequest):
		b.c.log.Warn().Err(err).Str("consumer", b.what).Msg("durable consumer reports it is gone; checking it")
	case errors.Is(err, jetstream.ErrNoHeartbeat):
		b.c.log.Debug().Err(err).Str("consumer", b.what).Msg("missing heartbeats; checking the consumer")
	default:
		b.c.log.Debug().Err(err).Msg(b.what)
		return
	}
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// watch checks the consumer when its consumption reports trouble and every
// consumerCheckEvery, until ctx ends.
func (b *binding) watch(ctx context.Context) {
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
func (b *binding) check(ctx context.Context) {
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
func (b *binding) rebind(ctx context.Context, cause error) {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return
	}
	b.lost = cause
	old := b.cc
	b.mu.Unlock()
	old.Stop()
	b.c.log.Error().Err(cause).Str("consumer", b.what).Str("stream", b.stream).
		Msg("durable consumer lost: ingestion paused, recreating it")
	if h := b.c.testHookRebind.Load(); h != nil {
		(*h)(b.what)
	}
	err := rebindPolicy.Retry(ctx, func(attempt int) error {
		err := b.bind(ctx)
		if err != nil && !errors.Is(err, errConsumerStopped) {
			b.mu.Lock()
			b.lost = err
			b.mu.Unlock()
			b.c.log.Warn().Err(err).Str("consumer", b.what).Int("attempt", attempt).Msg("recreating the durable consumer failed; retrying")
		}
		return err
	})
	if err == nil {
		b.c.log.Warn().Str("consumer", b.what).Str("stream", b.stream).
			Msg("durable consumer recreated: ingestion resumed with what the stream kept meanwhile")
	}
}

// forceRebind has the watcher recreate the consumption: after JetStream
// restarted, the pull requests of the old one are gone.
func (b *binding) forceRebind(cause error) {
	b.mu.Lock()
	b.restarted = cause
	b.mu.Unlock()
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// stop ends the binding for Close: no rebind starts or finishes after it.
// It returns the consumption to drain, nil if there is none.
func (b *binding) stop() jetstream.ConsumeContext {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped = true
	return b.cc
}

// lostErr is why the consumer is being recreated, nil while it consumes.
func (b *binding) lostErr() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lost
}

// ingestHealth is /api/health's "ingest": "ok" while every durable
// consumer consumes, else "rebinding" with what is wrong.
func (c *Controller) ingestHealth() (state, problem string) {
	var problems []string
	for _, b := range c.consumers {
		if err := b.lostErr(); err != nil {
			problems = append(problems, b.what+": "+err.Error())
		}
	}
	if len(problems) == 0 {
		return "ok", ""
	}
	return "rebinding", strings.Join(problems, "; ")
}

// testHook is set by tests only.
type testHook = atomic.Pointer[func(what string)]
