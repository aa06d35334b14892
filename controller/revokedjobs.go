package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/store"
)

// endRevokedAgentsJobs ends every job of agent id that has not ended, now
// that the agent can no longer connect: a queued job would otherwise wait
// in the jobs stream for a month, and one the agent ran could never report
// its end, leaving its sweep open for ever. Each says why.
func (c *Controller) endRevokedAgentsJobs(ctx context.Context, id string, at time.Time) (int, error) {
	jobs, err := c.store.Jobs(ctx, store.JobQuery{AgentID: id, Active: true})
	if err != nil {
		return 0, fmt.Errorf("controller: jobs of revoked agent %s: %w", id, err)
	}
	reason := fmt.Sprintf("cancelled: agent %s was revoked at %s and can no longer take or report a job; enrol it again (vlmfleet agent-creds create %s) and submit the sweep again",
		id, at.UTC().Format(time.RFC3339), id)
	var errs []error
	n := 0
	for _, j := range jobs {
		rec, _, err := c.store.RequestCancel(j.Job.ID, at)
		if err == nil && !rec.State.Terminal() {
			_, err = c.endCancelled(ctx, rec, reason, at)
			n++
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return n, errors.Join(errs...)
}
