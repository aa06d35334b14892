// Package jobs is the controller's room of jobs: it checks a sweep against
// the fleet and turns it into jobs (selection, power axis), publishes them
// on the jobs stream, cancels them, and ends the ones nothing will deliver
// (gone from the stream, given up on by JetStream, queued for a revoked
// agent). It knows the fleet only as the controller hands it, AgentStatus.
package jobs

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/ingest"
	"github.com/vlmfleet/vlmfleet/controller/store"
)

// Options are what the room reads of the controller's options.
type Options struct {
	// OrphanCheckInterval is how often queued jobs are checked for a
	// message gone from the jobs stream (the controller defaults it to DefaultOrphanCheck).
	OrphanCheckInterval time.Duration
}

// Hooks are what the room asks of the controller that wires it.
type Hooks struct {
	// Agents lists every known agent as the controller tracks it.
	Agents func(ctx context.Context) ([]AgentStatus, error)
	// Agent is one agent as the API shows it.
	Agent func(id string) (api.AgentView, error)
	// Emit hands a live event to the subscribers.
	Emit func(kind, agentID string, data any)
	// PublishFailing says that stored jobs wait to be published, and
	// why; nil says they no longer do.
	PublishFailing func(err error)
}

// JobEnder is told of each job the room ends, so that live data drops it.
type JobEnder interface {
	JobEnded(jobID string)
}

// Scheduler is the room of jobs. Make it with New; it publishes once
// Connect has handed it the controller's NATS connection.
type Scheduler struct {
	opt      Options
	store    *store.Store
	log      zerolog.Logger
	hooks    Hooks
	live     JobEnder
	ingester *ingest.Ingester

	nc *nats.Conn
	js jetstream.JetStream

	publishKick chan struct{}
}

// New is the room of jobs over st; ended jobs are told to live, and
// advisories refused are recorded by ingester.
func New(opt Options, st *store.Store, live JobEnder, ingester *ingest.Ingester, hooks Hooks, log zerolog.Logger) *Scheduler {
	return &Scheduler{opt: opt, store: st, live: live, ingester: ingester, hooks: hooks, log: log, publishKick: make(chan struct{}, 1)}
}

// Connect hands the room the controller's connection and its JetStream,
// before anything is published or cancelled.
func (sc *Scheduler) Connect(nc *nats.Conn, js jetstream.JetStream) {
	sc.nc, sc.js = nc, js
}

func (sc *Scheduler) agentStatuses(ctx context.Context) ([]AgentStatus, error) {
	return sc.hooks.Agents(ctx)
}

func (sc *Scheduler) agentView(id string) (api.AgentView, error) { return sc.hooks.Agent(id) }

func (sc *Scheduler) emit(kind, agentID string, data any) { sc.hooks.Emit(kind, agentID, data) }
