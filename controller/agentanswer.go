package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/internal/jobconsumer"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// DefaultJobAckWait is Options.JobAckWait's default (see jobconsumer).
const DefaultJobAckWait = jobconsumer.DefaultAckWait

// ensureJobConsumer makes (or updates) the agent's job consumer. One that
// pushes to a deliver subject cannot be turned into a pull consumer; the
// controller never makes one, and only an agent could before agents lost
// the right to create consumers, to push its jobs onto a subject of its
// choosing. It is deleted and made again; the jobs stay in the stream.
func (c *Controller) ensureJobConsumer(ctx context.Context, agentID string) error {
	cfg := jobconsumer.Config(agentID, c.opt.JobAckWait)
	_, err := c.js.CreateOrUpdateConsumer(ctx, protocol.StreamJobs, cfg)
	if err == nil {
		return nil
	}
	push, perr := c.js.PushConsumer(ctx, protocol.StreamJobs, cfg.Durable)
	if perr != nil {
		return fmt.Errorf("controller: job consumer of %s: %w", agentID, err)
	}
	c.log.Warn().Str("agent", agentID).Str("deliver_subject", push.CachedInfo().Config.DeliverSubject).
		Msg("the agent's job consumer pushed its jobs to a subject; replacing it with the controller's pull consumer")
	if err := c.js.DeleteConsumer(ctx, protocol.StreamJobs, cfg.Durable); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("controller: replace the job consumer of %s: %w", agentID, err)
	}
	if _, err := c.js.CreateOrUpdateConsumer(ctx, protocol.StreamJobs, cfg); err != nil {
		return fmt.Errorf("controller: job consumer of %s: %w", agentID, err)
	}
	return nil
}

// agentReply returns the agent whose subject a request came on, when its
// reply subject lies in that agent's own inbox.
func agentReply(subject, reply string) (agentID string, err error) {
	agentID, _, err = protocol.ParseAgentSubject(subject)
	if err != nil {
		return "", err
	}
	if err := protocol.CheckAgentReply(agentID, reply); err != nil {
		return agentID, err
	}
	return agentID, nil
}

// replyTo is the one check before the controller answers a request of an
// agent: it returns the sender and the subject to answer on, m's reply
// subject, only when that lies in the sender's own inbox (the sender
// named by m's subject, which the server lets no one else publish on).
// The controller publishes with every permission; answering on a subject
// the agent merely named would publish there for it (another agent's
// events, jobs or control subject). A refused reply is counted and
// logged (once per agent) as RefusalReplySubject, and not answered.
func (c *Controller) replyTo(m *nats.Msg) (agentID, reply string, ok bool) {
	agentID, err := agentReply(m.Subject, m.Reply)
	if err != nil {
		if agentID != "" {
			c.refuse(agentID, RefusalReplySubject, err.Error())
		}
		return "", "", false
	}
	return agentID, m.Reply, true
}

// maxAnswering bounds the answers to agents' requests under way at once:
// one makes a consumer, a round trip to JetStream (through a cluster's
// meta leader), and a fleet that starts at once asks all together.
const maxAnswering = 16

// answerTimeout bounds one answer; the agent asks again.
const answerTimeout = 10 * time.Second

// answering runs the answers to agents' requests aside from the live
// subscription, whose heartbeats must not wait on JetStream. When
// maxAnswering run already, the subscription waits for one to end.
type answering struct {
	slots chan struct{}
	wg    sync.WaitGroup
}

func newAnswering() *answering { return &answering{slots: make(chan struct{}, maxAnswering)} }

// answerLater runs answer on a goroutine of its own with a context that
// ends after answerTimeout or when the controller closes.
func (c *Controller) answerLater(answer func(ctx context.Context)) {
	c.answering.slots <- struct{}{}
	c.answering.wg.Go(func() {
		defer func() { <-c.answering.slots }()
		ctx, cancel := context.WithTimeout(c.bgCtx, answerTimeout)
		defer cancel()
		answer(ctx)
	})
}
