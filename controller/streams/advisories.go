package streams

import (
	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/controller/ingest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// JetStream announces on this subject that an agent's job consumer gave up
// on a job after its MaxDeliver deliveries; the last token is the consumer.
const maxDeliveriesSubject = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + protocol.StreamJobs + ".*"

// AdvisoriesStream keeps the max-deliveries advisories of the jobs stream.
// The server publishes them on core NATS, once: a stream holds them until
// the controller has dealt with each, so one sent while the controller was
// down or restarting is not lost and no job stays unfinished forever.
const AdvisoriesStream = "VLMFLEET_JOB_ADVISORIES"

// AdvisoriesStreamConfig is the stream of max-deliveries advisories. Work
// queue retention drops an advisory once the controller acknowledged it.
func AdvisoriesStreamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        AdvisoriesStream,
		Description: "vlmfleet: JetStream gave up delivering a job to its agent",
		Subjects:    []string{maxDeliveriesSubject},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		MaxAge:      jobsMaxAge,
		MaxMsgSize:  64 << 10,
		MaxBytes:    AdvisoriesStreamMaxBytes,
	}
}

// AdvisoriesConsumerConfig is the controller's durable consumer on the
// advisories stream; its messages are settled like agent events (see
// EventsConsumerConfig).
func AdvisoriesConsumerConfig() jetstream.ConsumerConfig {
	return ingest.DurableConsumer("vlmfleet controller: fails jobs JetStream gave up delivering", 16)
}
