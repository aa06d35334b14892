package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/jobs"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Agent states shown besides the heartbeat's idle and busy.
const agentOffline = "offline"

// agentViews are the API's views of agents.
func agentViews(as []jobs.AgentStatus) []api.AgentView {
	out := make([]api.AgentView, len(as))
	for i, a := range as {
		out[i] = a.AgentView
	}
	return out
}

func (c *Controller) statusOf(a store.Agent, now time.Time) jobs.AgentStatus {
	h := a.Hello
	v := jobs.AgentStatus{AgentView: api.AgentView{
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
		v.State, v.JobID, v.StateSince = l.State, l.JobID, l.StateSince
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
func (c *Controller) agentStatuses(ctx context.Context) ([]jobs.AgentStatus, error) {
	all, err := c.store.Agents(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	out := make([]jobs.AgentStatus, 0, len(all))
	for _, a := range all {
		out = append(out, c.statusOf(a, now))
	}
	return out, nil
}

// SweepStatus counts the sweep's jobs by state; Done when all are terminal.
func (c *Controller) SweepStatus(ctx context.Context, id string) (api.SweepStatus, error) {
	if _, err := c.store.Sweep(id); err != nil {
		return api.SweepStatus{}, err
	}
	recs, agents, err := c.jobsWithAgents(ctx, store.JobQuery{SweepID: id})
	if err != nil {
		return api.SweepStatus{}, fmt.Errorf("controller: sweep %s: %w", id, err)
	}
	return jobs.SweepStatus(id, recs, jobs.AgentsByID(agents)), nil
}

// jobsWithAgents lists the jobs q matches and every agent, for jobs.View and
// jobs.SweepStatus to tell which jobs are stalled.
func (c *Controller) jobsWithAgents(ctx context.Context, q store.JobQuery) ([]store.JobRecord, []jobs.AgentStatus, error) {
	recs, err := c.store.Jobs(ctx, q)
	if err != nil {
		return nil, nil, err
	}
	agents, err := c.agentStatuses(ctx)
	if err != nil {
		return nil, nil, err
	}
	return recs, agents, nil
}
