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
		return
	}
	a.log.Info().Msg("undrained: taking jobs again")
	if a.undrain != nil {
		close(a.undrain)
		a.undrain = nil
	}
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
