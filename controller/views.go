package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Agent states shown besides the heartbeat's idle and busy.
const agentOffline = "offline"

// agentStatus is an agent as the controller tracks it: what the API shows
// (api.AgentView) and what only the controller uses. The scheduler and the
// stall checks work on it.
type agentStatus struct {
	api.AgentView
	// stateSince is when the heartbeats last changed State or JobID
	// (controller time; zero without heartbeats), for stalledSince.
	stateSince time.Time
}

// agentViews are the API's views of agents.
func agentViews(as []agentStatus) []api.AgentView {
	out := make([]api.AgentView, len(as))
	for i, a := range as {
		out[i] = a.AgentView
	}
	return out
}

func (c *Controller) statusOf(a store.Agent, now time.Time) agentStatus {
	h := a.Hello
	v := agentStatus{AgentView: api.AgentView{
		ID: h.AgentID, Hostname: h.Hostname, Version: h.Version, Simulated: h.Simulated,
		Device: h.Device, Deployments: h.Deployments, LastSeen: a.LastSeen,
		StartedAt: h.StartedAt, FirstSeen: a.FirstSeen, Power: h.Power,
	}}
	if h.Power != nil {
		v.PowerMode, v.PowerLimitW = h.Power.Mode, h.Power.LimitW
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
	v.EnrolledAt, v.EnrolledByToken, v.RevokedAt = a.EnrolledAt, a.EnrolledByToken, a.RevokedAt
	v.Upgrade = c.upgradeOf(h)
	v.Duplicates = c.instances.duplicates(h.AgentID, now, c.opt.HeartbeatTimeout)
	if l, ok := c.live.Presence(h.AgentID); ok {
		if l.LastSeen.After(v.LastSeen) {
			v.LastSeen = l.LastSeen
		}
		v.State, v.JobID, v.stateSince = l.State, l.JobID, l.StateSince
		v.DrainConfirmed = a.Drained && l.Drained
		if l.PowerMode != "" || l.PowerLimitW != 0 {
			// A job may have switched the device since the hello.
			v.PowerMode, v.PowerLimitW = l.PowerMode, l.PowerLimitW
		}
	}
	v.Online = !v.LastSeen.IsZero() && now.Sub(v.LastSeen) < c.opt.HeartbeatTimeout
	if !v.Online {
		v.State, v.JobID = agentOffline, ""
	} else if v.State == "" {
		v.State = protocol.AgentIdle
	}
	return v
}

func (c *Controller) agentView(id string) (api.AgentView, error) {
	a, err := c.store.Agent(id)
	if err != nil {
		return api.AgentView{}, err
	}
	return c.statusOf(a, time.Now()).AgentView, nil
}

// Agents lists every known agent with its live status, made straight
// into views: the agents list asks for it at every request.
func (c *Controller) Agents(ctx context.Context) ([]api.AgentView, error) {
	all, err := c.store.Agents(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	out := make([]api.AgentView, len(all))
	for i := range all {
		out[i] = c.statusOf(all[i], now).AgentView
	}
	return out, nil
}

// agentStatuses lists every known agent as the controller tracks it.
func (c *Controller) agentStatuses(ctx context.Context) ([]agentStatus, error) {
	all, err := c.store.Agents(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	out := make([]agentStatus, 0, len(all))
	for _, a := range all {
		out = append(out, c.statusOf(a, now))
	}
	return out, nil
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
func agentsByID(agents []agentStatus) map[string]agentStatus {
	m := make(map[string]agentStatus, len(agents))
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
func stalledSince(r store.JobRecord, agents map[string]agentStatus, now time.Time) (bool, time.Time, string) {
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
func jobViews(jobs []store.JobRecord, agents map[string]agentStatus) []api.JobView {
	out := make([]api.JobView, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, jobView(j, agents))
	}
	return out
}

func jobView(r store.JobRecord, agents map[string]agentStatus) api.JobView {
	h := make([]api.JobHistoryEntry, len(r.History))
	for i, e := range r.History {
		h[i] = api.JobHistoryEntry(e)
	}
	v := api.JobView{
		ID: r.Job.ID, SweepID: r.Job.SweepID, AgentID: r.Job.AgentID, Deployment: r.Job.Deployment, Power: r.Job.Power,
		State: r.State, Attempt: r.Attempt, Error: r.Error, RunID: r.RunID, Published: r.Published,
		StreamSeq: r.StreamSeq, CancelRequested: r.CancelRequested,
		CreatedAt: r.Job.CreatedAt, UpdatedAt: r.UpdatedAt, Workload: r.Job.Workload, History: h,
	}
	v.Stalled, v.StalledSince, v.StallReason = stalledSince(r, agents, time.Now())
	return v
}

func sweepStatus(id string, jobs []store.JobRecord, agents map[string]agentStatus) api.SweepStatus {
	st := api.SweepStatus{ID: id, Jobs: len(jobs), States: map[protocol.JobState]int{}, Done: true}
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
func (c *Controller) SweepStatus(ctx context.Context, id string) (api.SweepStatus, error) {
	if _, err := c.store.Sweep(id); err != nil {
		return api.SweepStatus{}, err
	}
	jobs, agents, err := c.jobsWithAgents(ctx, store.JobQuery{SweepID: id})
	if err != nil {
		return api.SweepStatus{}, fmt.Errorf("controller: sweep %s: %w", id, err)
	}
	return sweepStatus(id, jobs, agentsByID(agents)), nil
}

// jobsWithAgents lists the jobs q matches and every agent, for jobView and
// sweepStatus to tell which jobs are stalled.
func (c *Controller) jobsWithAgents(ctx context.Context, q store.JobQuery) ([]store.JobRecord, []agentStatus, error) {
	jobs, err := c.store.Jobs(ctx, q)
	if err != nil {
		return nil, nil, err
	}
	agents, err := c.agentStatuses(ctx)
	if err != nil {
		return nil, nil, err
	}
	return jobs, agents, nil
}
