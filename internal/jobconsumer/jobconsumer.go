// Package jobconsumer is the durable JetStream consumer through which one
// agent receives its jobs, as the controller makes it and as an agent
// makes it for a controller from before, which leaves that to the agent:
// one definition, so that the two never make different consumers.
package jobconsumer

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// DefaultAckWait is how long JetStream waits by default for a sign of life
// of a job it delivered. A running job is kept alive by an InProgress
// every third of it, so it bounds only how long a job whose agent died (or
// restarted without handing it back) waits for its redelivery, not how
// long a job may run.
const DefaultAckWait = 30 * time.Second

// Config is agent agentID's job consumer: a pull consumer of the agent's
// own jobs, one at a time, each delivered at most
// protocol.MaxJobDeliveries times, redelivered after ackWait without a
// sign of life. It has no deliver subject: jobs go only where a pull of
// the agent's asks for them.
func Config(agentID string, ackWait time.Duration) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       protocol.JobConsumerName(agentID),
		FilterSubject: protocol.JobSubject(agentID),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       ackWait,
		MaxAckPending: 1,
		MaxDeliver:    protocol.MaxJobDeliveries,
	}
}
