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
	"sync/atomic"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts"
	"github.com/vlmfleet/vlmfleet/agent/engine"
	"github.com/vlmfleet/vlmfleet/agent/imageset"
	"github.com/vlmfleet/vlmfleet/agent/loadgen"
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
	// published counts the combinations the stream stored.
	published int

	lastProgress time.Time
	progressMu   sync.Mutex
	level        atomic.Int64
	comboIdx     atomic.Int64
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
			job.Deployment, a.cfg.ID, strings.Join(a.deploymentIDs(), ", "))
		log.Error().Msg(msg)
		return j.state(ctx, protocol.JobRejected, msg)
	}
	imgs, err := a.imageSet(job.Workload.ImageSet)
	if err != nil {
		log.Error().Err(err).Msg("rejecting job")
		return j.state(ctx, protocol.JobRejected, err.Error())
	}

	simulated := dep.Engine.Kind == "sim" || a.cfg.Simulate != ""
	device := a.device
	if dep.Engine.Kind == "sim" && !strings.EqualFold(device.Name, dep.Engine.SimDevice) {
		// A simulated deployment on a lab agent is filed under the device it
		// simulates, never under the real hardware it happens to run on.
		device = devicefacts.Simulated(dep.Engine.SimDevice)
	}
	speedup := 0.0
	if dep.Engine.Kind == "sim" && dep.Engine.SimSpeedup > 1 {
		speedup = dep.Engine.SimSpeedup
	}
	now := time.Now().UTC()
	j.run = protocol.Run{
		Schema:     protocol.SchemaVersion,
		ID:         fmt.Sprintf("%s-a%d", job.ID, attempt),
		JobID:      job.ID,
		SweepID:    job.SweepID,
		AgentID:    a.cfg.ID,
		Simulated:  simulated,
		SimSpeedup: speedup,
		Source:     protocol.SourceLab,
		Config: protocol.Configuration{
			Model:        dep.Model,
			ParamsB:      dep.ParamsB,
			Quantization: dep.Quantization,
			// The engine's own display name once it exists (below); the
			// adapter kind until then.
			Engine: dep.Engine.Kind,
			Device: device.Name,
		},
		Workload:  job.Workload,
		Status:    protocol.RunRunning,
		CreatedAt: now,
		StartedAt: now,
		Device:    device,
		Client:    loadgen.ClientInfo(imgs, a.opt.Version),
	}
	if attempt > 1 {
		// The previous attempt ended with its agent (it never sent a final
		// message): close its run so it does not stay "running" for ever.
		prev := j.header()
		prev.ID = fmt.Sprintf("%s-a%d", job.ID, attempt-1)
		prev.Status = protocol.RunFailed
		prev.Error = fmt.Sprintf("the agent stopped during this attempt; the job was delivered again as attempt %d", attempt)
		prev.FinishedAt = now
		m := protocol.ResultMessage{Schema: protocol.SchemaVersion, AgentID: a.cfg.ID, Run: prev, Final: true}
		if err := a.publishDurable(ctx, protocol.AgentSubject(a.cfg.ID, protocol.KindResult),
			protocol.ResultMsgID(prev.ID, "final"), m); err != nil {
			return err
		}
	}

	eng, err := engine.New(dep.Engine, a.env)
	if err != nil {
		return j.fail(ctx, fmt.Errorf("engine configuration: %w", err))
	}
	j.run.Engine = eng.Info()
	j.run.Config.Engine = j.run.Engine.Name
	if err := j.state(ctx, protocol.JobStarting, ""); err != nil {
		return err
	}
	j.progress(protocol.Progress{Phase: protocol.PhaseEngineStart, Message: "starting " + j.run.Config.Engine}, true)
	log.Info().Str("deployment", dep.ID).Str("engine", dep.Engine.Kind).Msg("starting engine")
	ep, err := eng.Start(ctx, engine.NeedsOf(job.Workload))
	if err != nil {
		j.run.Engine = eng.Info()
		stopEngine(eng)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return j.fail(ctx, fmt.Errorf("engine did not start: %w", err))
	}
	defer stopEngine(eng)
	j.run.Engine = eng.Info()
	if err := j.state(ctx, protocol.JobRunning, ""); err != nil {
		return err
	}

	target := loadgen.Target{BaseURL: ep.BaseURL, Model: ep.Model, APIKey: ep.APIKey, ExtraBody: ep.ExtraBody}
	// llama.cpp's own field, also for a simulated llama.cpp (whose engine
	// name is "llama.cpp" however its profile was spelled in the config).
	if job.Workload.CachePrompt != nil && j.run.Config.Engine == "llama.cpp" {
		target.ExtraBody = mergeBody(target.ExtraBody, "cache_prompt", *job.Workload.CachePrompt)
	}

	// The engine may die while it is measured (out of memory is common on a
	// 16 GB Orin NX): that ends the run as failed, with the engine's words.
	mctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case err := <-eng.Exited():
			if err == nil {
				err = errors.New("engine exited")
			}
			cancel(fmt.Errorf("engine exited while measuring: %w", err))
		case <-mctx.Done():
		}
	}()

	// The simulated device's load: a closed loop keeps every camera's
	// request in flight, so the device is busy whenever a combination runs,
	// and busier the more cameras share it.
	tel := newTelemetryRecorder(a, job.ID, simulated, speedup, func() float64 {
		lvl := j.level.Load()
		if lvl <= 0 {
			return 0
		}
		return 0.6 + 0.4*min(1, float64(lvl)/8)
	})
	tel.start(mctx)
	defer tel.stop()

	plan := job.Workload.Plan()
	hooks := loadgen.Hooks{
		ComboStart: func(idx, n int, pc protocol.PlannedCombo, warmup bool) {
			j.level.Store(int64(pc.Cameras))
			j.comboIdx.Store(int64(idx))
			phase := protocol.PhaseMeasure
			if warmup {
				phase = protocol.PhaseWarmup
			} else {
				tel.mark()
			}
			j.progress(protocol.Progress{Phase: phase, Combo: pc.ComboKey, ComboIdx: idx, ComboN: n, Total: pc.Requests}, true)
		},
		Request: func(k protocol.ComboKey, rec protocol.RequestRecord, p loadgen.Progress) {
			last := rec.TTFT
			mean := p.MeanTTFT
			if speedup > 1 {
				last *= speedup
				mean *= speedup
			}
			j.progress(protocol.Progress{
				Phase: protocol.PhaseMeasure, Combo: k, ComboIdx: int(j.comboIdx.Load()), ComboN: len(plan),
				Done: p.Done, Failed: p.Failed, Total: p.Total, InFlight: p.InFlight,
				LastTTFT: last, MeanTTFT: mean,
			}, p.Done+p.Failed == p.Total)
		},
		ComboDone: func(idx int, c *protocol.Combination) error {
			defer j.level.Store(0)
			// A combination cut short by the engine's death is not a
			// measurement: its requests failed in microseconds.
			if cause := context.Cause(mctx); cause != nil {
				return cause
			}
			c.TelemetrySeries, c.Telemetry = tel.window()
			c.ScaleTime(speedup)
			// Sent on the agent's context: a cancel that arrives meanwhile
			// must not leave a stored combination uncounted.
			if err := j.publishCombination(j.agentCtx, c); err != nil {
				return err
			}
			j.published++
			log.Info().Str("combo", c.ComboKey.String()).Int("completed", c.Completed).Int("failed", c.Failed).
				Float64("ttft_mean_s", c.TTFT.Mean).Float64("tps_mean", c.TPS.Mean).Msg("combination measured")
			return nil
		},
	}
	// The request timeout is in the device's time; a simulated device that
	// runs speedup times faster gets it on its own scale too.
	measured := job.Workload
	if speedup > 1 && measured.RequestTimeoutSec > 0 {
		measured.RequestTimeoutSec /= speedup
	}
	_, err = loadgen.Measure(mctx, target, measured, imgs, hooks)
	if cause := context.Cause(mctx); cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		j.run.Engine.LogTail = eng.LogTail(40)
		return j.fail(ctx, err)
	}
	j.run.Status = protocol.RunCompleted
	j.run.FinishedAt = time.Now().UTC()
	if err := j.publishFinal(ctx, j.published); err != nil {
		return err
	}
	j.progress(protocol.Progress{Phase: protocol.PhaseDone, ComboIdx: len(plan), ComboN: len(plan)}, true)
	log.Info().Int("combinations", j.published).Msg("job completed")
	return j.state(ctx, protocol.JobCompleted, "")
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

func (j *jobRun) publishCombination(ctx context.Context, c *protocol.Combination) error {
	m := protocol.ResultMessage{Schema: protocol.SchemaVersion, AgentID: j.a.cfg.ID, Run: j.header(), Combination: c}
	return j.a.publishDurable(ctx, protocol.AgentSubject(j.a.cfg.ID, protocol.KindResult),
		protocol.ResultMsgID(j.run.ID, c.ComboKey.String()), m)
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
	p.RunID = j.run.ID
	p.Time = now.UTC()
	p.Simulated = j.run.Simulated
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

func mergeBody(m map[string]any, k string, v any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for mk, mv := range m {
		out[mk] = mv
	}
	out[k] = v
	return out
}

func stopEngine(e engine.Engine) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = e.Stop(ctx)
}
