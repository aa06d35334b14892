package agent

import "context"

// setDrained records the controller's Drain: a drained agent finishes the
// job it runs and fetches no more; the next heartbeat says so.
func (a *Agent) setDrained(drained bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.drained == drained {
		return
	}
	a.drained = drained
	if drained {
		a.log.Info().Msg("drained: finishing the running job, if any, and taking no more")
		if a.jobQueue != nil {
			a.jobQueue.stop() // its reader pulls again once undrained
		}
		return
	}
	a.log.Info().Msg("undrained: taking jobs again")
	if a.undrain != nil {
		close(a.undrain)
		a.undrain = nil
	}
}

// isDrained says whether the controller has drained the agent.
func (a *Agent) isDrained() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.drained
}

// setJobQueue records the open pull for jobs, which a drain stops.
func (a *Agent) setJobQueue(q *jobQueue) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.jobQueue = q
}

// waitWhileDrained returns at once when the agent takes jobs, else when it
// is undrained (nil) or ctx ends (its error). The job-fetch loop calls it
// before each fetch, so a drain takes effect after the running job.
func (a *Agent) waitWhileDrained(ctx context.Context) error {
	for {
		a.mu.Lock()
		if a.drained && a.undrain == nil {
			a.undrain = make(chan struct{})
		}
		drained, undrain := a.drained, a.undrain
		a.mu.Unlock()
		if !drained {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-undrain:
		}
	}
}
