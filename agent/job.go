package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/agent/engine"
	"github.com/vlmfleet/vlmfleet/agent/imageset"
	"github.com/vlmfleet/vlmfleet/agent/measure"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// progressEvery bounds how often live progress is published per job.
const progressEvery = 250 * time.Millisecond

// jobRun is one job while it runs. measure.Run owns the job's run from its
// header to its end; jobRun publishes what it is told of it, as job states,
// result messages and live progress.
type jobRun struct {
	a       *Agent
	job     *protocol.Job
	attempt int
	// ctx is the job's: it ends when the job is cancelled or the agent
	// stops. agentCtx ends only when the agent stops: what must outlive a
	// cancel (a measured combination, the end of a cancelled job) is
	// published on it.
	ctx, agentCtx context.Context
	// refusal, when set, is why the job is rejected unread beyond its
	// address (protocol.RefusedJobError): nothing of it is run or planned.
	refusal error

	lastProgress time.Time
	progressMu   sync.Mutex
}

// runJob measures one job. Failures of the job (an unknown deployment, an
// engine that does not start or crashes) are reported as job states and a
// failed run, and return nil: the sweep goes on. A job whose ctx the
// controller cancelled (see Agent.onControl) ends as cancelled, its run
// keeping what was measured, and also returns nil. An error is returned
// only when the agent itself (agentCtx) is stopping.
func (a *Agent) runJob(agentCtx, ctx context.Context, job *protocol.Job, attempt int, refusal error) error {
	j := &jobRun{a: a, job: job, attempt: attempt, ctx: ctx, agentCtx: agentCtx, refusal: refusal}
	run, err := j.measure()
	var cancelled *cancelledError
	if err == nil || agentCtx.Err() != nil || !errors.As(context.Cause(ctx), &cancelled) {
		return err
	}
	return j.cancelled(run, cancelled)
}

// measure runs the job until it ends or its context does. The run it
// returns is the zero Run when the job never got one (it was rejected, or
// cancelled before).
func (j *jobRun) measure() (protocol.Run, error) {
	ctx, a, job := j.ctx, j.a, j.job
	log := a.log.With().Str("job", job.ID).Int("attempt", j.attempt).Logger()
	if err := j.state(ctx, protocol.JobAccepted, "", ""); err != nil {
		return protocol.Run{}, err
	}
	if j.refusal != nil {
		log.Error().Err(j.refusal).Msg("rejecting job")
		return protocol.Run{}, j.state(ctx, protocol.JobRejected, "", j.refusal.Error())
	}
	dep, ok := a.deployment(job.Deployment)
	if !ok {
		msg := fmt.Sprintf("deployment %q is not configured on agent %s; it offers %s",
			job.Deployment, a.cfg.ID, offered(a.deploymentIDs()))
		if b, isBroken := a.brokenDeployment(job.Deployment); isBroken {
			msg = fmt.Sprintf("deployment %q on agent %s cannot run, its configuration is wrong: %s", job.Deployment, a.cfg.ID, b.Reason)
		}
		log.Error().Msg(msg)
		return protocol.Run{}, j.state(ctx, protocol.JobRejected, "", msg)
	}
	imgs, err := a.imageSet(job.Workload.ImageSet)
	if err != nil {
		log.Error().Err(err).Msg("rejecting job")
		return protocol.Run{}, j.state(ctx, protocol.JobRejected, "", err.Error())
	}
	if err := a.powerControl.Check(job.Power); err != nil {
		msg := fmt.Sprintf("power %q on agent %s: %v", job.Power, a.cfg.ID, err)
		log.Error().Msg(msg)
		return protocol.Run{}, j.state(ctx, protocol.JobRejected, "", msg)
	}
	now, err := a.power.begin(ctx, job.Power)
	if err != nil {
		if ctx.Err() != nil {
			return protocol.Run{}, err // cancelled, or the agent stops: the device is back
		}
		log.Error().Err(err).Msg("job failed: the device's power could not be set")
		return protocol.Run{}, j.state(ctx, protocol.JobFailed, "", err.Error())
	}
	log.Info().Str("deployment", dep.ID).Str("engine", dep.Engine.Kind).Str("power", now.String()).Msg("measuring")
	run, err := measure.Run(ctx, j.spec(dep, imgs, now, log), measure.Hooks{
		Opened:      j.opened,
		Starting:    j.starting,
		Running:     j.running,
		Progress:    j.measureProgress,
		Sample:      j.sample,
		Combination: j.combination,
	})
	switch run.Status {
	case protocol.RunCompleted:
		if err := j.publishFinal(ctx, run); err != nil {
			return run, err
		}
		// A search's levels are known only once measured: the run holds
		// every combination, planned or found.
		n := len(run.Combinations)
		j.progress(j.done(run, protocol.Progress{ComboIdx: n, ComboN: n}), true)
		log.Info().Int("combinations", len(run.Combinations)).Msg("job completed")
		return run, j.state(ctx, protocol.JobCompleted, run.ID, "")
	case protocol.RunFailed:
		return run, j.fail(run, err)
	}
	return run, err
}

// spec is the measurement the job asks of the deployment. An engine
// configuration refused here (the deployment was checked when the agent
// started; its model may have gone since) fails the run in measure.Run.
func (j *jobRun) spec(dep DeploymentConfig, imgs *imageset.Set, now protocol.PowerSetting, log zerolog.Logger) measure.Spec {
	a, job := j.a, j.job
	device, cfg := j.powerFacts(now)
	if a.cfg.Simulate != "" {
		// The simulator scales its times by the mode's GPU clock cap, or
		// by the limit a job set.
		dep.Engine.SimPowerMode, dep.Engine.SimPowerLimitW = cfg.PowerMode, cfg.PowerLimitW
	}
	eng, refused := engine.New(dep.Engine, a.env)
	return measure.Spec{
		Run: protocol.Run{
			ID:      fmt.Sprintf("%s-a%d", job.ID, j.attempt),
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
				Engine:      dep.Engine.Kind,
				PowerMode:   cfg.PowerMode,
				PowerLimitW: cfg.PowerLimitW,
				TP:          dep.Engine.TensorParallelSize,
			},
			Workload: job.Workload,
		},
		Engine:    eng,
		Refused:   refused,
		Images:    imgs,
		Device:    device,
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
}

// powerFacts are the device's facts and the configuration's power as the
// job measures in now: a Jetson's mode always (set or found), since it
// is part of what the result is filed under; a GPU's limit only when the
// job set it, so that a run as found keeps the identity GPU hosts' rows
// always had.
func (j *jobRun) powerFacts(now protocol.PowerSetting) (protocol.DeviceFacts, protocol.Configuration) {
	device := j.a.device
	var cfg protocol.Configuration
	if j.job.Power.LimitW != 0 {
		cfg.PowerLimitW = now.LimitW
		device.GPUs = slices.Clone(device.GPUs)
		for i, g := range device.GPUs {
			if len(j.a.cfg.Power.GPUs) == 0 || slices.Contains(j.a.cfg.Power.GPUs, g.Index) {
				device.GPUs[i].PowerLimitW = now.LimitW
			}
		}
	}
	if device.Jetson == nil {
		cfg.PowerMode = now.Mode
		return device, cfg
	}
	jf := *device.Jetson
	if now.Mode != "" {
		jf.PowerMode = now.Mode
	}
	device.Jetson = &jf
	cfg.PowerMode = jf.PowerMode
	return device, cfg
}

// opened closes the previous attempt's run, if any, before this one goes
// further: that attempt ended with its agent (it never sent a final
// message), and must not stay "running" for ever. The agent cannot know
// whether that attempt reached an agent at all; the controller drops the
// message if no agent reported it (store.ErrUnreportedAttempt).
func (j *jobRun) opened(header protocol.Run) error {
	if j.attempt == 1 {
		return nil
	}
	prev := header
	prev.ID = fmt.Sprintf("%s-a%d", j.job.ID, j.attempt-1)
	prev.Status = protocol.RunFailed
	prev.Error = fmt.Sprintf("the agent stopped during this attempt; the job was delivered again as attempt %d", j.attempt)
	prev.FinishedAt = prev.StartedAt
	return j.publishFinal(j.ctx, prev)
}

func (j *jobRun) starting(header protocol.Run) error {
	return j.state(j.ctx, protocol.JobStarting, header.ID, "")
}

func (j *jobRun) running(header protocol.Run) error {
	return j.state(j.ctx, protocol.JobRunning, header.ID, "")
}

// measureProgress publishes the measurement's progress, each phase's
// first and last word at once and the requests between at most every
// progressEvery.
func (j *jobRun) measureProgress(p protocol.Progress) {
	ended := p.Done + p.Failed
	j.progress(p, p.Phase != protocol.PhaseMeasure || ended == 0 || ended == p.Total)
}

func (j *jobRun) sample(s protocol.TelemetrySample) {
	j.a.publishLive(protocol.KindTelemetry, protocol.TelemetryTick{
		Schema: protocol.SchemaVersion, AgentID: j.a.cfg.ID, JobID: j.job.ID, Sample: s,
	})
}

// combination publishes a measured combination on the agent's context: a
// cancel that arrives meanwhile must not leave a stored combination
// uncounted in the final message's Expected.
func (j *jobRun) combination(header protocol.Run, c *protocol.Combination) error {
	m := protocol.ResultMessage{Schema: protocol.SchemaVersion, AgentID: j.a.cfg.ID, Run: header, Combination: c}
	return j.spool(j.agentCtx, protocol.KindResult, protocol.ResultMsgID(header.ID, c.ComboKey.String()), m)
}

// fail publishes the end of a failed run.
func (j *jobRun) fail(run protocol.Run, cause error) error {
	j.a.log.Error().Err(cause).Str("job", j.job.ID).Msg("job failed")
	if err := j.publishFinal(j.ctx, run); err != nil {
		return err
	}
	j.progress(j.done(run, protocol.Progress{Message: cause.Error()}), true)
	return j.state(j.ctx, protocol.JobFailed, run.ID, cause.Error())
}

// cancelled ends the job as cancelled once measure has returned (the
// engine is stopped by then), publishing the end of its run, if it began,
// with the combinations measured so far. It speaks on the agent's context:
// the job's has ended.
func (j *jobRun) cancelled(run protocol.Run, cause *cancelledError) error {
	ctx := j.agentCtx
	j.a.log.Info().Str("job", j.job.ID).Int("combinations", len(run.Combinations)).Str("reason", cause.reason).Msg("job cancelled")
	if run.ID != "" {
		if err := j.publishFinal(ctx, run); err != nil {
			return err
		}
	}
	j.progress(j.done(run, protocol.Progress{Message: "cancelled: " + cause.Error()}), true)
	return j.state(ctx, protocol.JobCancelled, run.ID, cause.Error())
}

func (j *jobRun) state(ctx context.Context, s protocol.JobState, runID, msg string) error {
	ch := protocol.JobStateChange{
		Schema: protocol.SchemaVersion, JobID: j.job.ID, SweepID: j.job.SweepID, RunID: runID,
		AgentID: j.a.cfg.ID, State: s, Error: msg, Time: time.Now().UTC(), Attempt: j.attempt,
	}
	ending := "" // a last state lists the job as ended first (spoolEnding)
	if s.Terminal() {
		ending = j.job.ID
	}
	_, err := j.a.spoolEnding(ctx, ending, protocol.AgentSubject(j.a.cfg.ID, protocol.KindState), protocol.StateMsgID(j.job.ID, s, j.attempt), ch)
	return err
}

// publishFinal publishes a run's last result message: its header, and how
// many combinations of it the stream should hold.
func (j *jobRun) publishFinal(ctx context.Context, run protocol.Run) error {
	expected := len(run.Combinations)
	run.Combinations = nil
	m := protocol.ResultMessage{Schema: protocol.SchemaVersion, AgentID: j.a.cfg.ID, Run: run, Final: true, Expected: expected}
	return j.spool(ctx, protocol.KindResult, protocol.ResultMsgID(run.ID, "final"), m)
}

// spool hands one of the job's messages to the spool, to be sent on the
// agent's subject of its kind.
func (j *jobRun) spool(ctx context.Context, kind, msgID string, v any) error {
	_, err := j.a.spool(ctx, protocol.AgentSubject(j.a.cfg.ID, kind), msgID, v)
	return err
}

// done is the last progress of a job that had a run (run is zero if not).
func (j *jobRun) done(run protocol.Run, p protocol.Progress) protocol.Progress {
	p.Phase, p.RunID, p.Simulated = protocol.PhaseDone, run.ID, run.Simulated
	return p
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
	p.Time = now.UTC()
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
