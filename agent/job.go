package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/engine"
	"github.com/vlmfleet/vlmfleet/agent/imageset"
	"github.com/vlmfleet/vlmfleet/agent/measure"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// progressEvery bounds how often live progress is published per job.
const progressEvery = 250 * time.Millisecond

// jobRun is the state of one job while it runs.
type jobRun struct {
	a       *Agent
	job     *protocol.Job
	attempt int
	run     protocol.Run
	// agentCtx ends when the agent stops; the job's own context also ends
	// when the job is cancelled, and what follows a cancel is sent on this.
	agentCtx context.Context
	// runID is the run's id once it has one; progress reads it from
	// the measuring goroutines, so it is set once before they start.
	runID     string
	simulated bool
	// published counts the combinations the stream stored.
	published int

	lastProgress time.Time
	progressMu   sync.Mutex
}

// runJob measures one job. Failures of the job (an unknown deployment, an
// engine that does not start or crashes) are reported as job states and a
// failed run, and return nil: the sweep goes on. A job whose ctx the
// controller cancelled (see Agent.onControl) ends as cancelled, its run
// keeping what was measured, and also returns nil. An error is returned
// only when the agent itself (agentCtx) is stopping.
func (a *Agent) runJob(agentCtx, ctx context.Context, job *protocol.Job, attempt int) error {
	j := &jobRun{a: a, job: job, attempt: attempt, agentCtx: agentCtx}
	err := j.measure(ctx)
	var cancelled *cancelledError
	if err == nil || agentCtx.Err() != nil || !errors.As(context.Cause(ctx), &cancelled) {
		return err
	}
	return j.cancelled(agentCtx, cancelled)
}

// measure runs the job until it ends or ctx does.
func (j *jobRun) measure(ctx context.Context) error {
	a, job, attempt := j.a, j.job, j.attempt
	log := a.log.With().Str("job", job.ID).Int("attempt", attempt).Logger()
	if err := j.state(ctx, protocol.JobAccepted, ""); err != nil {
		return err
	}
	dep, ok := a.deployment(job.Deployment)
	if !ok {
		msg := fmt.Sprintf("deployment %q is not configured on agent %s; it offers %s",
			job.Deployment, a.cfg.ID, offered(a.deploymentIDs()))
		if b, isBroken := a.brokenDeployment(job.Deployment); isBroken {
			msg = fmt.Sprintf("deployment %q on agent %s cannot run, its configuration is wrong: %s", job.Deployment, a.cfg.ID, b.Reason)
		}
		log.Error().Msg(msg)
		return j.state(ctx, protocol.JobRejected, msg)
	}
	imgs, err := a.imageSet(job.Workload.ImageSet)
	if err != nil {
		log.Error().Err(err).Msg("rejecting job")
		return j.state(ctx, protocol.JobRejected, err.Error())
	}

	// A refused engine configuration fails the run below, once it has a
	// header to fail.
	eng, engErr := engine.New(dep.Engine, a.env)
	spec := measure.Spec{
		Run: protocol.Run{
			ID:      fmt.Sprintf("%s-a%d", job.ID, attempt),
			JobID:   job.ID,
			SweepID: job.SweepID,
			AgentID: a.cfg.ID,
			Source:  protocol.SourceLab,
			Config: protocol.Configuration{
				Model:        dep.Model,
				ParamsB:      dep.ParamsB,
				Quantization: dep.Quantization,
				// The engine's own display name once it exists; the
				// adapter kind until then.
				Engine: dep.Engine.Kind,
			},
			Workload: job.Workload,
		},
		Engine:    eng,
		Images:    imgs,
		Device:    a.device,
		Simulated: a.cfg.Simulate != "",
		Version:   a.opt.Version,
		Telemetry: measure.Telemetry{
			Source:   a.cfg.Telemetry.Source,
			Interval: time.Duration(a.cfg.Telemetry.Interval),
			SysRoot:  a.cfg.SysRoot,
			Path:     a.opt.Getenv("PATH"),
		},
		Log: log,
	}
	j.run = measure.Header(spec, time.Now().UTC())
	j.runID, j.simulated = j.run.ID, j.run.Simulated
	if attempt > 1 {
		if err := j.closePrevious(ctx); err != nil {
			return err
		}
	}
	if engErr != nil {
		return j.fail(ctx, fmt.Errorf("engine configuration: %w", engErr))
	}

	log.Info().Str("deployment", dep.ID).Str("engine", dep.Engine.Kind).Msg("measuring")
	var stateErr error
	run, err := measure.Run(ctx, spec, measure.Hooks{
		Starting: func(h protocol.Run) {
			j.run = h
			stateErr = j.state(ctx, protocol.JobStarting, "")
		},
		Running: func(h protocol.Run) {
			j.run = h
			if stateErr == nil {
				stateErr = j.state(ctx, protocol.JobRunning, "")
			}
		},
		Progress: func(p protocol.Progress) {
			ended := p.Done + p.Failed
			j.progress(p, p.Phase != protocol.PhaseMeasure || ended == 0 || ended == p.Total)
		},
		Sample: func(s protocol.TelemetrySample) {
			a.publishLive(protocol.KindTelemetry, protocol.TelemetryTick{
				Schema: protocol.SchemaVersion, AgentID: a.cfg.ID, JobID: job.ID, Sample: s,
			})
		},
		Combination: func(h protocol.Run, c *protocol.Combination) error {
			if stateErr != nil {
				return stateErr
			}
			// Sent on the agent's context: a cancel that arrives meanwhile
			// must not leave a stored combination uncounted.
			if err := j.publishCombination(j.agentCtx, h, c); err != nil {
				return err
			}
			j.published++
			return nil
		},
	})
	run.Combinations = nil
	j.run = run
	if stateErr != nil {
		return stateErr
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return j.fail(ctx, err)
	}
	if err := j.publishFinal(ctx, j.published); err != nil {
		return err
	}
	j.progress(protocol.Progress{Phase: protocol.PhaseDone, ComboIdx: len(job.Workload.Plan()), ComboN: len(job.Workload.Plan())}, true)
	log.Info().Int("combinations", j.published).Msg("job completed")
	return j.state(ctx, protocol.JobCompleted, "")
}

// closePrevious closes the run of the previous attempt, which ended with
// its agent (it never sent a final message), so that it does not stay
// "running" for ever. The agent cannot know whether that attempt reached
// an agent at all; the controller drops the message if no agent reported it
// (store.ErrUnreportedAttempt).
func (j *jobRun) closePrevious(ctx context.Context) error {
	prev := j.header()
	prev.ID = fmt.Sprintf("%s-a%d", j.job.ID, j.attempt-1)
	prev.Status = protocol.RunFailed
	prev.Error = fmt.Sprintf("the agent stopped during this attempt; the job was delivered again as attempt %d", j.attempt)
	prev.FinishedAt = prev.StartedAt
	m := protocol.ResultMessage{Schema: protocol.SchemaVersion, AgentID: j.a.cfg.ID, Run: prev, Final: true}
	return j.a.publishDurable(ctx, protocol.AgentSubject(j.a.cfg.ID, protocol.KindResult),
		protocol.ResultMsgID(prev.ID, "final"), m)
}

// fail ends the run as failed with the reason, keeping what was measured.
func (j *jobRun) fail(ctx context.Context, cause error) error {
	j.a.log.Error().Err(cause).Str("job", j.job.ID).Msg("job failed")
	j.run.Status = protocol.RunFailed
	j.run.Error = cause.Error()
	j.run.FinishedAt = time.Now().UTC()
	if err := j.publishFinal(ctx, j.published); err != nil {
		return err
	}
	j.progress(protocol.Progress{Phase: protocol.PhaseDone, Message: cause.Error()}, true)
	return j.state(ctx, protocol.JobFailed, cause.Error())
}

// cancelled ends the job as cancelled once measure has returned (the
// engine is stopped by then), closing its run, if it began, with the
// combinations measured so far.
func (j *jobRun) cancelled(ctx context.Context, cause *cancelledError) error {
	j.a.log.Info().Str("job", j.job.ID).Int("combinations", j.published).Str("reason", cause.reason).Msg("job cancelled")
	if j.run.ID != "" {
		j.run.Status = protocol.RunCancelled
		j.run.Error = cause.Error()
		j.run.FinishedAt = time.Now().UTC()
		if err := j.publishFinal(ctx, j.published); err != nil {
			return err
		}
	}
	j.progress(protocol.Progress{Phase: protocol.PhaseDone, Message: "cancelled: " + cause.Error()}, true)
	return j.state(ctx, protocol.JobCancelled, cause.Error())
}

func (j *jobRun) state(ctx context.Context, s protocol.JobState, msg string) error {
	ch := protocol.JobStateChange{
		Schema: protocol.SchemaVersion, JobID: j.job.ID, SweepID: j.job.SweepID, RunID: j.run.ID,
		AgentID: j.a.cfg.ID, State: s, Error: msg, Time: time.Now().UTC(), Attempt: j.attempt,
	}
	return j.a.publishDurable(ctx, protocol.AgentSubject(j.a.cfg.ID, protocol.KindState),
		protocol.StateMsgID(j.job.ID, s, j.attempt), ch)
}

// header is the run without combinations, carried by every result message.
func (j *jobRun) header() protocol.Run {
	h := j.run
	h.Combinations = nil
	return h
}

func (j *jobRun) publishCombination(ctx context.Context, header protocol.Run, c *protocol.Combination) error {
	m := protocol.ResultMessage{Schema: protocol.SchemaVersion, AgentID: j.a.cfg.ID, Run: header, Combination: c}
	return j.a.publishDurable(ctx, protocol.AgentSubject(j.a.cfg.ID, protocol.KindResult),
		protocol.ResultMsgID(header.ID, c.ComboKey.String()), m)
}

func (j *jobRun) publishFinal(ctx context.Context, expected int) error {
	m := protocol.ResultMessage{Schema: protocol.SchemaVersion, AgentID: j.a.cfg.ID, Run: j.header(), Final: true, Expected: expected}
	return j.a.publishDurable(ctx, protocol.AgentSubject(j.a.cfg.ID, protocol.KindResult),
		protocol.ResultMsgID(j.run.ID, "final"), m)
}

// progress publishes live progress, at most every progressEvery unless force.
func (j *jobRun) progress(p protocol.Progress, force bool) {
	j.progressMu.Lock()
	now := time.Now()
	if !force && now.Sub(j.lastProgress) < progressEvery {
		j.progressMu.Unlock()
		return
	}
	j.lastProgress = now
	j.progressMu.Unlock()
	p.Schema = protocol.SchemaVersion
	p.AgentID = j.a.cfg.ID
	p.JobID = j.job.ID
	p.RunID = j.runID
	p.Time = now.UTC()
	p.Simulated = p.Simulated || j.simulated
	j.a.publishLive(protocol.KindProgress, p)
}

func (a *Agent) deployment(id string) (DeploymentConfig, bool) {
	for _, d := range a.cfg.Deployments {
		if d.ID == id {
			return d, true
		}
	}
	return DeploymentConfig{}, false
}

// brokenDeployment finds a configured deployment the agent does not offer.
func (a *Agent) brokenDeployment(id string) (protocol.BrokenDeployment, bool) {
	for _, b := range a.broken {
		if b.ID == id {
			return b, true
		}
	}
	return protocol.BrokenDeployment{}, false
}

// offered lists deployment ids for a message, saying so when there are none.
func offered(ids []string) string {
	if len(ids) == 0 {
		return "no deployment"
	}
	return strings.Join(ids, ", ")
}

func (a *Agent) deploymentIDs() []string {
	ids := make([]string, 0, len(a.cfg.Deployments))
	for _, d := range a.cfg.Deployments {
		ids = append(ids, d.ID)
	}
	sort.Strings(ids)
	return ids
}

// imageSet resolves a workload's image set: the built-in pictures, or a
// directory by name under one of the agent's image roots. A job cannot name
// an arbitrary path.
func (a *Agent) imageSet(name string) (*imageset.Set, error) {
	if name == "" || name == imageset.BuiltinName {
		// Kept for the agent's life: the pictures are drawn and encoded
		// once per size, not once per job.
		a.imagesMu.Lock()
		defer a.imagesMu.Unlock()
		if a.images == nil {
			set, err := imageset.Builtin()
			if err != nil {
				return nil, err
			}
			a.images = set
		}
		return a.images, nil
	}
	if filepath.IsAbs(name) || strings.Contains(name, "..") || strings.ContainsAny(name, `/\`) {
		return nil, fmt.Errorf("image_set %q: want \"builtin\" or the name of a directory under the agent's image roots", name)
	}
	var errs []error
	for _, root := range a.cfg.ImageRoots {
		dir := filepath.Join(root, name)
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		set, err := imageset.FromDir(dir)
		if err == nil {
			return set, nil
		}
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("image_set %q: %w", name, errors.Join(errs...))
	}
	return nil, fmt.Errorf("image_set %q: not found under the agent's image roots %v", name, a.cfg.ImageRoots)
}
