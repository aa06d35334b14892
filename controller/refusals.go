package controller

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/live"
	"github.com/vlmfleet/vlmfleet/controller/streams"
)

// What the controller refuses from an agent outside the durable stream's
// rejections (messages_rejected_total): the label values of
// vlmfleet_agent_refusals_total. The list is fixed so that a hostile agent
// cannot add label values.
const (
	// RefusalReplySubject: a request whose reply subject lies outside the
	// sender's own inbox; it is not answered.
	RefusalReplySubject = "reply_subject"
	// RefusalProgress and RefusalTelemetry: what the live feed refuses.
	RefusalProgress  = live.RefusalProgress
	RefusalTelemetry = live.RefusalTelemetry
	// RefusalHeartbeat: a heartbeat that is too large or malformed.
	RefusalHeartbeat = "heartbeat"
	// RefusalStream: a durable message refused by the events stream's
	// limits or removed from it after it was rejected.
	RefusalStream = streams.RefusalStream
	// RefusalDuplicate: a heartbeat or hello of a second process claiming
	// an agent's id while another holds it.
	RefusalDuplicate = "duplicate"
)

var refusalKinds = []string{RefusalReplySubject, RefusalProgress, RefusalTelemetry, RefusalHeartbeat, RefusalStream, RefusalDuplicate}

// refusals logs what is refused from an agent once per agent and kind (a
// hostile or broken agent repeats itself; the log must not grow with it)
// and counts every refusal by kind.
type refusals struct {
	log     zerolog.Logger
	counter *prometheus.CounterVec

	mu     sync.Mutex
	logged map[refusalKey]struct{}
}

type refusalKey struct{ agent, kind string }

// maxRefusalLogKeys bounds the memory of which agents were logged: past
// it, refusals are still counted, and the set starts again.
const maxRefusalLogKeys = 10_000

func newRefusals(log zerolog.Logger) *refusals {
	r := &refusals{
		log: log,
		counter: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "agent_refusals_total",
			Help: "Messages from agents the controller refused outside the events stream (a reply subject not the sender's, live data over its limits or not the sender's), by kind.",
		}, []string{"kind"}),
		logged: map[refusalKey]struct{}{},
	}
	for _, k := range refusalKinds {
		r.counter.WithLabelValues(k)
	}
	return r
}

// refuse counts one refusal of kind from agent and logs it with its reason
// if it is the first of that agent and kind.
func (r *refusals) refuse(agent, kind, reason string) {
	r.counter.WithLabelValues(kind).Inc()
	k := refusalKey{agent, kind}
	r.mu.Lock()
	_, seen := r.logged[k]
	if !seen {
		if len(r.logged) >= maxRefusalLogKeys {
			clear(r.logged)
		}
		r.logged[k] = struct{}{}
	}
	r.mu.Unlock()
	if !seen {
		r.log.Warn().Str("agent", agent).Str("kind", kind).Str("reason", reason).
			Msg("refused a message from an agent (logged once per agent and kind; vlmfleet_agent_refusals_total counts them all)")
	}
}

// refuse counts and logs (once per agent and kind) something refused from
// an agent; see refusals.
func (c *Controller) refuse(agent, kind, reason string) {
	c.metrics.refusals.refuse(agent, kind, reason)
}
