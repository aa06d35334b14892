package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// EndRevokedAgentsJobs ends the jobs still queued for agent id, now that
// the agent can no longer connect to take them: they would otherwise wait
// in the jobs stream for a month, holding their sweeps open. Each says
// why. A job the agent had taken stays as it is: enrolled again, the agent
// gets it back from JetStream and finishes it (or the job shows stalled
// until then), as after any crash.
func (sc *Scheduler) EndRevokedAgentsJobs(ctx context.Context, id string, at time.Time) (int, error) {
	jobs, err := sc.store.Jobs(ctx, store.JobQuery{AgentID: id, State: protocol.JobQueued})
	if err != nil {
		return 0, fmt.Errorf("controller: jobs of revoked agent %s: %w", id, err)
	}
	reason := fmt.Sprintf("cancelled: agent %s was revoked at %s before it took the job; enrol it again (vlmfleet agent-creds create %s) and submit the sweep again",
		id, at.UTC().Format(time.RFC3339), id)
	var errs []error
	n := 0
	for _, j := range jobs {
		rec, _, err := sc.store.RequestCancel(j.Job.ID, at)
		if err == nil && rec.State == protocol.JobQueued {
			_, err = sc.endCancelled(ctx, rec, reason, at)
			n++
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return n, errors.Join(errs...)
}
