package controller

import (
	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/controller/streams"
)

// The streams' names and limits, as the commands and tests name them
// (package streams).
const (
	// ConsumerName is the controller's durable consumer on the events stream.
	ConsumerName = streams.ConsumerName
	// MaxStreamReplicas is the most copies of a stream NATS keeps.
	MaxStreamReplicas = streams.MaxStreamReplicas
	// AdvisoriesStream keeps the max-deliveries advisories of the jobs stream.
	AdvisoriesStream = streams.AdvisoriesStream
	// DefaultEventsStreamMaxBytes and DefaultJobsStreamMaxBytes are the
	// streams' byte limits unless the options say otherwise; neither may
	// be under MinStreamMaxBytes.
	DefaultEventsStreamMaxBytes = streams.DefaultEventsStreamMaxBytes
	DefaultJobsStreamMaxBytes   = streams.DefaultJobsStreamMaxBytes
	MinStreamMaxBytes           = streams.MinStreamMaxBytes
)

// JobsStreamConfig is the stream of jobs (streams.JobsStreamConfig).
func JobsStreamConfig() jetstream.StreamConfig { return streams.JobsStreamConfig() }

// EventsStreamConfig is the stream of what agents report durably
// (streams.EventsStreamConfig).
func EventsStreamConfig() jetstream.StreamConfig { return streams.EventsStreamConfig() }

// streamOptions are what the streams room reads of opt.
func streamOptions(opt Options) streams.Options {
	return streams.Options{StreamReplicas: opt.StreamReplicas,
		EventsStreamMaxBytes: opt.EventsStreamMaxBytes, JobsStreamMaxBytes: opt.JobsStreamMaxBytes}
}
