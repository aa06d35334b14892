// Package streams keeps the controller's JetStream streams: what each is
// (jobs, events, the advisories of jobs JetStream gave up on), making them
// with the configured copies and byte limits, and watching both: a stream
// near its limit is freed of what is settled, one short of copies is said.
package streams

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/ingest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Options are what the room reads of the controller's options.
type Options struct {
	// StreamReplicas is how many copies of each stream a cluster keeps.
	StreamReplicas int
	// EventsStreamMaxBytes and JobsStreamMaxBytes bound the bytes the
	// events and jobs streams keep.
	EventsStreamMaxBytes int64
	JobsStreamMaxBytes   int64
}

// RefusalStream is the refusal counter's label of a durable message
// refused by the events stream's limits or removed from it after it was
// rejected.
const RefusalStream = "stream"

// CheckEvery is how often JetStream's health is looked at, and so how
// long one look at a stream may take.
const CheckEvery = 5 * time.Second

// Keeper keeps the controller's streams. Make it with New; it works once
// Connect has handed it the controller's JetStream.
type Keeper struct {
	opt Options
	log zerolog.Logger
	js  jetstream.JetStream
	// eventsStream is the events stream's handle, kept by Ensure so
	// that removing a rejected message costs no look-up of the stream.
	eventsStream atomic.Pointer[jetstream.Stream]
	// refuse counts and logs what an agent sent that is refused.
	refuse func(agent, kind, reason string)
}

// New keeps the streams as opt says; refuse counts the messages removed
// from the events stream after they were rejected.
func New(opt Options, refuse func(agent, kind, reason string), log zerolog.Logger) *Keeper {
	return &Keeper{opt: opt, refuse: refuse, log: log}
}

// Connect hands the keeper the controller's JetStream.
func (k *Keeper) Connect(js jetstream.JetStream) { k.js = js }

// Stream settings. Both keep message ids for an hour so that a publisher's
// retry (the same id) is stored once.
const (
	duplicateWindow = time.Hour
	eventsMaxAge    = 30 * 24 * time.Hour
	jobsMaxAge      = 30 * 24 * time.Hour
	// ConsumerName is the controller's durable consumer on the events stream.
	ConsumerName = ingest.ConsumerName
	// MaxStreamReplicas is the most copies of a stream NATS keeps.
	MaxStreamReplicas = 5
)

// JobsStreamConfig is the stream of jobs. Work-queue retention removes a
// job once its agent acknowledged it; each agent's consumer filters on its
// own subject, so the consumers never overlap.
func JobsStreamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        protocol.StreamJobs,
		Description: "vlmfleet jobs addressed to agents",
		Subjects:    []string{protocol.JobSubjectAll},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Duplicates:  duplicateWindow,
		MaxAge:      jobsMaxAge,
		MaxMsgSize:  protocol.MaxMessageBytes,
		MaxBytes:    DefaultJobsStreamMaxBytes,
		Discard:     jetstream.DiscardNew,
	}
}

// EventsStreamConfig is the stream of what agents report durably.
func EventsStreamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        protocol.StreamEvents,
		Description: "vlmfleet agent announcements, job states and results",
		Subjects: []string{
			protocol.AgentSubjectAll(protocol.KindHello),
			protocol.AgentSubjectAll(protocol.KindState),
			protocol.AgentSubjectAll(protocol.KindResult),
		},
		Retention:  jetstream.LimitsPolicy,
		Storage:    jetstream.FileStorage,
		Duplicates: duplicateWindow,
		MaxAge:     eventsMaxAge,
		// The largest message an agent sends: a result, at most
		// protocol.MaxMessageBytes of JSON, less once compressed.
		MaxMsgSize: protocol.MaxMessageBytes,
		MaxBytes:   DefaultEventsStreamMaxBytes,
		Discard:    jetstream.DiscardNew,
	}
}

// Ensure creates the controller's streams, or updates them to the
// configuration this build wants, with the configured replica count and
// byte limits. A cluster scales an existing stream's replicas up or down
// in place, and a stream of an earlier version gets its limits in place
// too; a server that refuses says why, and the error names both counts.
func (k *Keeper) Ensure(ctx context.Context) error {
	for _, cfg := range k.streamConfigs() {
		s, err := k.js.CreateOrUpdateStream(ctx, cfg)
		if err != nil {
			if s, ierr := k.js.Stream(ctx, cfg.Name); ierr == nil && s.CachedInfo().Config.Replicas != cfg.Replicas {
				return fmt.Errorf("controller: stream %s has %d replicas and --stream-replicas asks for %d; the server refused the change: %w",
					cfg.Name, s.CachedInfo().Config.Replicas, cfg.Replicas, err)
			}
			return fmt.Errorf("controller: create or update stream %s with %d replicas and a limit of %s (--events-stream-mib, --jobs-stream-mib): %w",
				cfg.Name, cfg.Replicas, mib(cfg.MaxBytes), err)
		}
		if cfg.Name == protocol.StreamEvents {
			k.eventsStream.Store(&s)
		}
	}
	return nil
}
