package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/internal/backoff"
)

// startRetryFor bounds how long a starting controller keeps asking
// JetStream to set up its streams and consumers.
const startRetryFor = 2 * time.Minute

// startRequestTimeout is how long one such request may go unanswered:
// JetStream's own default.
const startRequestTimeout = 5 * time.Second

// untilJetStreamAnswers runs setUp, what the controller asks of JetStream
// as it starts, again while the answer is one a cluster gives in passing:
// none in time or "not available" (no meta leader yet, or a stream's
// leader being elected), or no responders (JetStream still starting). A
// controller started together with its cluster, as when a lab's machines
// come back from a power cut one by one, would otherwise exit at the
// first. Any other error ends it at once.
func (c *Controller) untilJetStreamAnswers(parent context.Context, what string, setUp func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(parent, startRetryFor)
	defer cancel()
	err := backoff.Default.Retry(ctx, func(attempt int) error {
		actx, cancel := context.WithTimeout(ctx, startRequestTimeout)
		defer cancel()
		err := setUp(actx)
		switch {
		case err == nil:
			return nil
		case !jetStreamInPassing(err):
			return backoff.Permanent(err)
		}
		c.log.Warn().Err(err).Int("attempt", attempt).Str("setting_up", what).
			Msg("JetStream is not answering yet (a cluster electing a leader, or no JetStream there); trying again")
		return err
	})
	var stopped *backoff.StoppedError
	if errors.As(err, &stopped) && parent.Err() == nil {
		return fmt.Errorf("controller: %s: JetStream did not answer for %v: %w", what, startRetryFor, stopped.Last)
	}
	return err
}

// jetStreamInPassing reports whether err is an answer that JetStream gives
// while it starts or elects a leader.
func jetStreamInPassing(err error) bool {
	var api *jetstream.APIError
	if errors.As(err, &api) {
		// 10008: JetStream system temporarily unavailable; 10009: the
		// cluster cannot handle the request (no leader for it now).
		return api.ErrorCode == 10008 || api.ErrorCode == 10009
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders)
}
