package controller

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/ingest"
	"github.com/vlmfleet/vlmfleet/controller/jobs"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Health problem components, as /api/health's problems name them.
const (
	ProblemNATS      = "nats"
	ProblemJetStream = "jetstream"
	ProblemIngest    = "ingest"
	ProblemStore     = "store"
	ProblemPublish   = "publish"
	// ProblemReplicas: a stream keeps fewer current copies than
	// StreamReplicas asks for. The lab still works, but one more node lost
	// may stop the stream's writes (it needs a majority of its copies).
	ProblemReplicas = "replicas"
	// ProblemStreams: a stream holds most of its byte limit, or so much
	// that it refuses new messages (see controller/streams/limits.go).
	// Nothing is lost (agents keep what is refused), but an operator
	// should look.
	ProblemStreams = "streams"
	// ProblemIdentities: the store holds agent identities that share a
	// public key, or hold the controller's own. Joins refuse both, so only
	// a store written by an older release (or by hand) has them; the
	// controller keeps its own rights and one holder per key until an
	// operator revokes the others (controller/identity/keys.go).
	ProblemIdentities = "identities"
)

// The fleet's matters, as /api/health's fleet list names them: what the
// agents need of an operator, shown on /fleet. They leave the
// controller's status as it is: a lab with an agent switched off, or one
// of an older release, still keeps every result it gets.
const (
	// ProblemAgents: agents past their heartbeat (agents_silent).
	ProblemAgents = "agents"
	// ProblemAgentDuplicate: a second process claims an agent's id
	// (agents_duplicate).
	ProblemAgentDuplicate = "agent_duplicate"
	// ProblemAgentUpgrade: an agent of a release this controller cannot
	// serve (agents_need_upgrade).
	ProblemAgentUpgrade = "agent_upgrade"
)

// failingComponents are the problems that stop results from being kept.
var failingComponents = []string{ProblemNATS, ProblemJetStream, ProblemStore}

// agentSilentWindow bounds how long a silent agent is reported: an agent
// taken out of the lab for good stops counting after it.
const agentSilentWindow = time.Hour

// problems are the faults the controller's parts report as they meet them
// and clear once past; /api/health adds what it checks at each request.
type problems struct {
	mu sync.Mutex
	m  map[string]api.HealthProblem
}

func newProblems() *problems { return &problems{m: map[string]api.HealthProblem{}} }

// set records err for component; the first time of an ongoing problem is kept.
func (p *problems) set(component string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	old, ok := p.m[component]
	since := time.Now().UTC()
	if ok {
		since = old.Since
	}
	p.m[component] = api.HealthProblem{Component: component, Error: err.Error(), Since: since}
}

func (p *problems) clear(component string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, component)
}

func (p *problems) get(component string) (api.HealthProblem, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.m[component]
	return v, ok
}

func (p *problems) list() []api.HealthProblem {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]api.HealthProblem, 0, len(p.m))
	for _, v := range p.m {
		out = append(out, v)
	}
	return out
}

// Health says what is broken now.
func (c *Controller) Health(ctx context.Context) api.Health {
	agents, err := c.agentStatuses(ctx)
	return c.healthOf(agents, err)
}

// healthOf is Health from the agents as read (err: why they could not be),
// for a caller that needs them too: a scrape reads them once.
func (c *Controller) healthOf(agents []jobs.AgentStatus, agentsErr error) api.Health {
	h := api.Health{
		NATS: "connected", NATSURL: protocol.RedactURL(c.natsURL), NATSAuth: c.NATSAuth(), JetStream: "ok",
		TLS: c.tlsHealth(), Version: c.opt.Version, EventsDropped: c.events.Dropped(),
		Time: time.Now().UTC(), AgentsSilent: []string{}, AgentsDuplicate: []string{}, AgentsNeedUpgrade: []string{},
		Fleet: []api.HealthProblem{},
	}
	probs := c.problems.list()
	if c.nc == nil || !c.nc.IsConnected() {
		h.NATS = "disconnected"
		probs = append(probs, api.HealthProblem{Component: ProblemNATS, Error: "the controller is not connected to NATS", Since: h.Time})
	}
	if p, ok := c.problems.get(ProblemJetStream); ok {
		h.JetStream = "unavailable"
		if strings.Contains(p.Error, "write error") {
			h.JetStream = "write error"
		}
	}
	h.Ingest, h.IngestError = ingest.Health(c.consumers)
	if h.Ingest != "ok" {
		probs = append(probs, api.HealthProblem{Component: ProblemIngest, Error: h.IngestError, Since: h.Time})
	}
	if agentsErr != nil {
		probs = append(probs, api.HealthProblem{Component: ProblemStore, Error: fmt.Sprintf("reading agents: %v", agentsErr), Since: h.Time})
	} else {
		c.fleetHealth(&h, agents)
	}
	sort.Slice(probs, func(i, j int) bool { return probs[i].Component < probs[j].Component })
	h.Problems = probs
	h.Status = api.HealthOK
	for _, p := range probs {
		h.Status = api.HealthDegraded
		if slices.Contains(failingComponents, p.Component) {
			h.Status = api.HealthFailing
			break
		}
	}
	return h
}

// fleetHealth fills h's fleet matters from the agents: the silent ones,
// those whose id a second process claims, and those that need an upgrade.
func (c *Controller) fleetHealth(h *api.Health, agents []jobs.AgentStatus) {
	if silent, p := c.silentAgents(agents, h.Time); p != nil {
		h.AgentsSilent = silent
		h.Fleet = append(h.Fleet, *p)
	}
	for _, a := range agents {
		if len(a.Duplicates) > 0 {
			d := a.Duplicates[0]
			h.AgentsDuplicate = append(h.AgentsDuplicate, a.ID)
			h.Fleet = append(h.Fleet, api.HealthProblem{Component: ProblemAgentDuplicate, Since: d.LastSeen,
				Error: fmt.Sprintf("%s: %s", a.ID, duplicateText(a.AgentView, d))})
		}
		if a.Upgrade != nil {
			h.AgentsNeedUpgrade = append(h.AgentsNeedUpgrade, a.ID)
			h.Fleet = append(h.Fleet, api.HealthProblem{Component: ProblemAgentUpgrade, Since: a.StartedAt.UTC(),
				Error: fmt.Sprintf("%s: %s", a.ID, a.Upgrade.Reason)})
		}
	}
}

// silentAgents lists the agents past their heartbeat that were heard
// within agentSilentWindow, and the problem they make (nil when none).
// A revoked agent cannot connect, so its silence is no news.
func (c *Controller) silentAgents(agents []jobs.AgentStatus, now time.Time) ([]string, *api.HealthProblem) {
	var ids, parts []string
	var since time.Time
	for _, a := range agents {
		if a.Online || a.LastSeen.IsZero() || now.Sub(a.LastSeen) > agentSilentWindow || !a.RevokedAt.IsZero() {
			continue
		}
		ids = append(ids, a.ID)
		parts = append(parts, fmt.Sprintf("%s silent for %s", a.ID, now.Sub(a.LastSeen).Round(time.Second)))
		if gone := a.LastSeen.Add(c.opt.HeartbeatTimeout); since.IsZero() || gone.Before(since) {
			since = gone
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return ids, &api.HealthProblem{Component: ProblemAgents, Since: since.UTC(),
		Error: fmt.Sprintf("past their heartbeat (%s): %s; forget one taken out of the lab with vlmfleet agents forget ID", c.opt.HeartbeatTimeout, strings.Join(parts, ", "))}
}

func (c *Controller) handleHealth(w http.ResponseWriter, r *http.Request) {
	h := c.Health(r.Context())
	status := http.StatusOK
	if h.Status != api.HealthOK {
		status = http.StatusServiceUnavailable
	}
	api.WriteJSON(w, status, h)
}
