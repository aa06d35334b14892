package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Agent states shown besides the heartbeat's idle and busy.
const agentOffline = "offline"

// AgentView is an agent as the API shows it.
type AgentView struct {
	ID          string                `json:"id"`
	Hostname    string                `json:"hostname"`
	Version     string                `json:"version"`
	Simulated   bool                  `json:"simulated"`
	Device      protocol.DeviceFacts  `json:"device"`
	Deployments []protocol.Deployment `json:"deployments"`
	// BrokenDeployments are the deployments the agent's configuration
	// names but the agent cannot serve, with the reason (its hello's).
	BrokenDeployments []protocol.BrokenDeployment `json:"broken_deployments"`
	Online            bool                        `json:"online"`
	LastSeen          time.Time                   `json:"last_seen"`
	// State is the last heartbeat's idle or busy, or offline.
	State     string    `json:"state"`
	JobID     string    `json:"job_id,omitempty"`
	StartedAt time.Time `json:"started_at"`
	FirstSeen time.Time `json:"first_seen"`

	// Labels are the agent's from its configuration (its hello's).
	Labels map[string]string `json:"labels"`
	// Drained is true once an operator drained the agent: it gets no new
	// jobs. DrainConfirmed says its heartbeats report the drain, so it
	// fetches no more jobs (it may still finish the one it runs).
	Drained        bool      `json:"drained"`
	DrainedAt      time.Time `json:"drained_at,omitzero"`
	DrainConfirmed bool      `json:"drain_confirmed"`

	// stateSince is when the heartbeats last changed State or JobID
	// (controller time; zero without heartbeats), for stalledSince.
	stateSince time.Time
}

func (c *Controller) viewOf(a store.Agent, now time.Time) AgentView {
	h := a.Hello
	v := AgentView{
		ID: h.AgentID, Hostname: h.Hostname, Version: h.Version, Simulated: h.Simulated,
		Device: h.Device, Deployments: h.Deployments, LastSeen: a.LastSeen,
		StartedAt: h.StartedAt, FirstSeen: a.FirstSeen,
	}
	if v.Deployments == nil {
		v.Deployments = []protocol.Deployment{}
	}
	v.BrokenDeployments = h.BrokenDeployments
	if v.BrokenDeployments == nil {
		v.BrokenDeployments = []protocol.BrokenDeployment{}
	}
	v.Labels = h.Labels
	if v.Labels == nil {
		v.Labels = map[string]string{}
	}
	v.Drained, v.DrainedAt = a.Drained, a.DrainedAt
	if l, ok := c.live.agent(h.AgentID); ok {
		if l.lastSeen.After(v.LastSeen) {
			v.LastSeen = l.lastSeen
		}
		v.State, v.JobID, v.stateSince = l.state, l.jobID, l.stateSince
		v.DrainConfirmed = a.Drained && l.drained
	}
	v.Online = !v.LastSeen.IsZero() && now.Sub(v.LastSeen) < c.opt.HeartbeatTimeout
	if !v.Online {
		v.State, v.JobID = agentOffline, ""
	} else if v.State == "" {
		v.State = protocol.AgentIdle
	}
	return v
}

func (c *Controller) agentView(id string) (AgentView, error) {
	a, err := c.store.Agent(id)
	if err != nil {
		return AgentView{}, err
	}
	return c.viewOf(a, time.Now()), nil
}

// Agents lists every known agent with its live status.
func (c *Controller) Agents(ctx context.Context) ([]AgentView, error) {
	all, err := c.store.Agents(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	out := make([]AgentView, 0, len(all))
	for _, a := range all {
		out = append(out, c.viewOf(a, now))
	}
	return out, nil
}

// JobView is a job as the API shows it.
type JobView struct {
	ID         string            `json:"id"`
	SweepID    string            `json:"sweep_id,omitempty"`
	AgentID    string            `json:"agent_id"`
	Deployment string            `json:"deployment"`
	State      protocol.JobState `json:"state"`
	Attempt    int               `json:"attempt"`
	Error      string            `json:"error,omitempty"`
	RunID      string            `json:"run_id,omitempty"`
	Published  bool              `json:"published"`
	// StreamSeq is the job's message in the jobs stream once published.
	StreamSeq uint64 `json:"stream_seq,omitempty"`
	// CancelRequested is true once a user asked to cancel the job.
	CancelRequested bool                    `json:"cancel_requested,omitempty"`
	CreatedAt       time.Time               `json:"created_at"`
	UpdatedAt       time.Time               `json:"updated_at,omitzero"`
	Workload        protocol.Workload       `json:"workload"`
	History         []store.JobHistoryEntry `json:"history"`
	// Stalled is true while the job is accepted, starting or running and its
	// agent is offline, or online without it (restarted since the job's
	// last state, or saying it is idle or busy with another job). The job
	// is not failed for it: JetStream delivers it again when the agent
	// returns, or within the ack wait to an agent that lost it.
	Stalled bool `json:"stalled"`
	// StalledSince is the last sign of life of the job or its agent.
	StalledSince time.Time `json:"stalled_since,omitzero"`
	// StallReason says why the job is stalled.
	StallReason string `json:"stall_reason,omitempty"`
}

// Why a job is stalled (JobView.StallReason).
const (
	stallAgentOffline   = "its agent is offline; JetStream delivers it again when the agent returns"
	stallAgentRestarted = "its agent restarted without it; JetStream delivers it again within the ack wait"
	stallAgentLostIt    = "its agent reports it is not running it; JetStream delivers it again within the ack wait"
)

// lostJobGrace is how long an online agent's heartbeats must have said
// something other than busy with a job before the job counts as lost: a
// heartbeat (core NATS) may overtake the job's final state (JetStream).
const lostJobGrace = 10 * time.Second

// needsAgent reports whether a job in state s is in its agent's hands; a
// queued job waits for an offline agent by design.
func needsAgent(s protocol.JobState) bool {
	return s == protocol.JobAccepted || s == protocol.JobStarting || s == protocol.JobRunning
}

// agentsByID indexes agents for jobView; an agent missing from it counts
// as offline.
func agentsByID(agents []AgentView) map[string]AgentView {
	m := make(map[string]AgentView, len(agents))
	for _, a := range agents {
		m[a.ID] = a
	}
	return m
}

// stalledSince says whether the job is stalled, since when, and why: a job
// in its agent's hands (needsAgent) whose agent is offline, or online but
// without it. The agent is without it when its latest announcement is from
// a start after the job's last state (both agent clock), or when its
// heartbeats have said, since after the job's last update and for
// lostJobGrace (both controller clock), that it is idle or busy with
// another job. The job's next state (its redelivery's accepted) ends it.
func stalledSince(r store.JobRecord, agents map[string]AgentView, now time.Time) (bool, time.Time, string) {
	if !needsAgent(r.State) {
		return false, time.Time{}, ""
	}
	a, known := agents[r.Job.AgentID]
	if !known || !a.Online {
		since := r.UpdatedAt
		if a.LastSeen.After(since) {
			since = a.LastSeen
		}
		return true, since, stallAgentOffline
	}
	if last, ok := lastStateTime(r); ok && a.StartedAt.After(last) {
		return true, r.UpdatedAt, stallAgentRestarted
	}
	if !a.stateSince.IsZero() && (a.State != protocol.AgentBusy || a.JobID != r.Job.ID) &&
		a.stateSince.After(r.UpdatedAt) && now.Sub(a.stateSince) >= lostJobGrace {
		return true, r.UpdatedAt, stallAgentLostIt
	}
	return false, time.Time{}, ""
}

// lastStateTime is when the agent reported the job's current state and
// attempt, by its own clock.
func lastStateTime(r store.JobRecord) (time.Time, bool) {
	for i := len(r.History) - 1; i >= 0; i-- {
		if e := r.History[i]; e.State == r.State && e.Attempt == r.Attempt {
			return e.Time, !e.Time.IsZero()
		}
	}
	return time.Time{}, false
}

// jobViews shows jobs as the API does.
func jobViews(jobs []store.JobRecord, agents map[string]AgentView) []JobView {
	out := make([]JobView, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, jobView(j, agents))
	}
	return out
}

func jobView(r store.JobRecord, agents map[string]AgentView) JobView {
	h := r.History
	if h == nil {
		h = []store.JobHistoryEntry{}
	}
	v := JobView{
		ID: r.Job.ID, SweepID: r.Job.SweepID, AgentID: r.Job.AgentID, Deployment: r.Job.Deployment,
		State: r.State, Attempt: r.Attempt, Error: r.Error, RunID: r.RunID, Published: r.Published,
		StreamSeq: r.StreamSeq, CancelRequested: r.CancelRequested,
		CreatedAt: r.Job.CreatedAt, UpdatedAt: r.UpdatedAt, Workload: r.Job.Workload, History: h,
	}
	v.Stalled, v.StalledSince, v.StallReason = stalledSince(r, agents, time.Now())
	return v
}

// SweepStatus counts a sweep's jobs by state.
type SweepStatus struct {
	ID     string                    `json:"id"`
	Jobs   int                       `json:"jobs"`
	States map[protocol.JobState]int `json:"states"`
	// Failed counts jobs that ended failed, cancelled or rejected.
	Failed int `json:"failed"`
	// Done is true when every job is in a terminal state.
	Done bool `json:"done"`
	// Stalled counts jobs whose agent went offline, or came back without
	// them, while it had them (see JobView.Stalled).
	Stalled int `json:"stalled"`
}

func sweepStatus(id string, jobs []store.JobRecord, agents map[string]AgentView) SweepStatus {
	st := SweepStatus{ID: id, Jobs: len(jobs), States: map[protocol.JobState]int{}, Done: true}
	now := time.Now()
	for _, j := range jobs {
		st.States[j.State]++
		if stalled, _, _ := stalledSince(j, agents, now); stalled {
			st.Stalled++
		}
		if !j.State.Terminal() {
			st.Done = false
		} else if j.State != protocol.JobCompleted {
			st.Failed++
		}
	}
	return st
}

// SweepStatus counts the sweep's jobs by state; Done when all are terminal.
func (c *Controller) SweepStatus(ctx context.Context, id string) (SweepStatus, error) {
	if _, err := c.store.Sweep(id); err != nil {
		return SweepStatus{}, err
	}
	jobs, agents, err := c.jobsWithAgents(ctx, store.JobQuery{SweepID: id})
	if err != nil {
		return SweepStatus{}, fmt.Errorf("controller: sweep %s: %w", id, err)
	}
	return sweepStatus(id, jobs, agentsByID(agents)), nil
}

// jobsWithAgents lists the jobs q matches and every agent, for jobView and
// sweepStatus to tell which jobs are stalled.
func (c *Controller) jobsWithAgents(ctx context.Context, q store.JobQuery) ([]store.JobRecord, []AgentView, error) {
	jobs, err := c.store.Jobs(ctx, q)
	if err != nil {
		return nil, nil, err
	}
	agents, err := c.Agents(ctx)
	if err != nil {
		return nil, nil, err
	}
	return jobs, agents, nil
}

// SweepView is a sweep with the state of its jobs.
type SweepView struct {
	protocol.Sweep
	Status  SweepStatus `json:"status"`
	JobList []JobView   `json:"job_states,omitempty"`
}
