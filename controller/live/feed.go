package live

import (
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/ingest"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// What the feed refuses, as the controller's refusal counter labels it.
const (
	// RefusalProgress: a live progress message that is too large, names a
	// job the sender does not run, or would exceed the sender's share.
	RefusalProgress = "progress"
	// RefusalTelemetry: a live telemetry sample that is too large or
	// malformed.
	RefusalTelemetry = "telemetry"
)

// Feed is the room of live data: it takes in the agents' progress and
// telemetry from core NATS into State, and hands every live event to its
// subscribers, the event streams of /api/events among them.
type Feed struct {
	live   *State
	events *Fanout
	store  JobReader
	// refuse counts and logs (once per agent and kind) what an agent sent
	// that the feed refuses.
	refuse func(agent, kind, reason string)
	log    zerolog.Logger
	// done is closed when the controller closes, so that the event
	// streams return.
	done <-chan struct{}
}

// JobReader reads a stored job, whose agent and plan live progress is
// checked against.
type JobReader interface {
	Job(id string) (store.JobRecord, error)
}

// NewFeed is the feed of live into st, handing events to events.
func NewFeed(st *State, events *Fanout, jobs JobReader, refuse func(agent, kind, reason string), log zerolog.Logger, done <-chan struct{}) *Feed {
	return &Feed{live: st, events: events, store: jobs, refuse: refuse, log: log, done: done}
}

func (f *Feed) emit(kind, agentID string, data any) { f.events.Emit(kind, agentID, data) }

// ProgressHandler takes in progress messages (takeProgress).
func (f *Feed) ProgressHandler() nats.MsgHandler {
	return onLive(f, RefusalProgress, maxProgressBytes,
		func(p *protocol.Progress) (string, int) { return p.AgentID, p.Schema }, f.takeProgress)
}

// TelemetryHandler takes in telemetry samples (takeTelemetry).
func (f *Feed) TelemetryHandler() nats.MsgHandler {
	return onLive(f, RefusalTelemetry, maxTelemetryBytes,
		func(t *protocol.TelemetryTick) (string, int) { return t.AgentID, t.Schema }, f.takeTelemetry)
}

// onLive makes the handler of one kind of live message (see takeLive).
func onLive[T any](c *Feed, refusal string, limit int, head func(*T) (agentID string, schema int), use func(T) error) nats.MsgHandler {
	take := takeLive(c, refusal, limit, head, use)
	return func(m *nats.Msg) { take(m) }
}

// takeLive makes the taker of one kind of live message: it decodes a T of
// at most limit bytes (see Decode; head gives its agent id and schema)
// and passes it to use; what either refuses is counted and logged as a
// refusal of that kind. It says whether the message was taken, so that a
// refused request goes unanswered.
func takeLive[T any](c *Feed, refusal string, limit int, head func(*T) (agentID string, schema int), use func(T) error) func(*nats.Msg) bool {
	return func(m *nats.Msg) bool {
		var v T
		agent, err := Decode(m.Subject, m.Data, limit, &v, head)
		if err == nil {
			err = use(v)
		}
		if err != nil {
			c.refuse(agent, refusal, ingest.Truncate(err.Error(), 200))
			return false
		}
		return true
	}
}

// Decode parses a live message of at most limit bytes and checks that
// the agent id in it is the subject's, which it returns (or the subject
// when it names no valid agent). A bad live message is dropped, and
// counted and logged as a refusal (onLive): losing one is harmless by
// design, so it is not kept for an operator as a durable one is.
func Decode[T any](subject string, data []byte, limit int, v *T, head func(*T) (agentID string, schema int)) (string, error) {
	subjAgent, _, err := protocol.ParseAgentSubject(subject)
	if err != nil {
		return ingest.Truncate(subject, 100), err
	}
	if len(data) > limit {
		return subjAgent, fmt.Errorf("%d bytes, more than %d", len(data), limit)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return subjAgent, fmt.Errorf("decoding: %w", err)
	}
	id, schema := head(v)
	if schema < 1 || schema > protocol.SchemaVersion {
		return subjAgent, fmt.Errorf("schema %d, this build reads 1..%d", schema, protocol.SchemaVersion)
	}
	if id != subjAgent {
		return subjAgent, fmt.Errorf("subject names agent %q but the message says %.80q", subjAgent, id)
	}
	// A kind protocol validates (a heartbeat: its state) is checked too.
	if v, ok := any(v).(interface{ Validate() error }); ok {
		return subjAgent, v.Validate()
	}
	return subjAgent, nil
}
