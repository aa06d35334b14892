package agent

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

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

// askDrain sends a heartbeat as a request before the agent fetches its
// first job, and whenever it finds no job consumer; the controller makes
// the agent's job consumer and answers with the agent's drain, so an agent
// drained while it was stopped takes no job before it learns so. No answer
// leaves it taking jobs; later drains come on the control subject. The
// answer also says whether the controller takes compressed results
// (protocol.EncodingS2): only then does the agent send them so; and
// whether it makes the job consumer (protocol.Drain.JobConsumer).
func (a *Agent) askDrain(ctx context.Context) {
	a.mu.Lock()
	a.seq++
	hb := protocol.Heartbeat{Schema: protocol.SchemaVersion, AgentID: a.cfg.ID, Time: time.Now(), State: a.state, Seq: a.seq}
	a.mu.Unlock()
	data, err := json.Marshal(hb)
	if err != nil {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	reply, err := a.nc.RequestWithContext(rctx, protocol.AgentSubject(a.cfg.ID, protocol.KindHeartbeat), data)
	if err != nil {
		a.log.Debug().Err(err).Msg("no drain in answer to the first heartbeat; taking jobs")
		return
	}
	_, d, err := protocol.DecodeControl(reply.Data)
	if err != nil || d == nil {
		a.log.Warn().Err(err).Msg("ignoring a malformed answer to the first heartbeat")
		return
	}
	a.answered(d)
}

// answered takes the controller's answer to the first heartbeat.
func (a *Agent) answered(d *protocol.Drain) {
	a.setDrained(d.Drained)
	a.compressResults.Store(slices.Contains(d.Encodings, protocol.EncodingS2))
	a.makesOwnConsumer.Store(!d.JobConsumer)
}
