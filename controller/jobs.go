package controller

import (
	"context"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/jobs"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// newScheduler is the controller's room of jobs (package jobs), handed
// the fleet as the controller tracks it and the live data to tell.
func (c *Controller) newScheduler() *jobs.Scheduler {
	return jobs.New(jobs.Options{OrphanCheckInterval: c.opt.OrphanCheckInterval}, c.store, c.live, c.ingester, jobs.Hooks{
		Agents: c.agentStatuses,
		Agent:  c.agentView,
		Emit:   c.emit,
		PublishFailing: func(err error) {
			if err != nil {
				c.problems.set(ProblemPublish, err)
			} else {
				c.problems.clear(ProblemPublish)
			}
		},
	}, c.log)
}

// SubmitSweep checks the sweep, stores its jobs queued and publishes them
// (jobs.Scheduler.SubmitSweep).
func (c *Controller) SubmitSweep(ctx context.Context, s protocol.Sweep) (protocol.Sweep, error) {
	return c.jobs.SubmitSweep(ctx, s)
}

// CancelJob cancels a job that has not ended (jobs.Scheduler.CancelJob);
// one that has is answered with a *jobs.JobEndedError.
func (c *Controller) CancelJob(ctx context.Context, id string) (store.JobRecord, error) {
	return c.jobs.CancelJob(ctx, id)
}

// CancelSweep cancels every job of the sweep that has not ended.
func (c *Controller) CancelSweep(ctx context.Context, id string) (api.SweepCancel, error) {
	return c.jobs.CancelSweep(ctx, id)
}
