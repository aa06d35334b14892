// Package measure is the one measurement path of vlmfleet: it turns an
// engine, a workload, the pictures and what is known of the device into a
// protocol.Run. The agent's job runner and `vlmfleet bench` are thin
// callers of Run, so what bench measures is by construction what a lab job
// measures: the same run header, the same simulated-time scaling, the same
// request timeout, the same cache_prompt rule and the same telemetry.
package measure

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts"
	"github.com/vlmfleet/vlmfleet/agent/engine"
	"github.com/vlmfleet/vlmfleet/agent/loadgen"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Spec is one measurement.
type Spec struct {
	// Run carries what the caller knows of the run: ID, JobID, SweepID,
	// AgentID, Source, the model's Config (Model, ParamsB, Quantization)
	// and the Workload. Run fills in the rest.
	Run protocol.Run
	// Engine serves the model; Run starts it and stops it. It is nil when
	// the engine's configuration was refused (Refused).
	Engine engine.Engine
	// Refused is why the engine's configuration was refused. Run still
	// opens the run, so that the caller can speak of it, and ends it failed
	// with this reason, starting nothing.
	Refused error
	// Images are the pictures the requests carry.
	Images loadgen.Images
	// Device is what is known of the hardware. A simulated engine's run is
	// filed under the device it simulates instead, unless DeviceName is set.
	Device protocol.DeviceFacts
	// DeviceName, when set, names the device whatever the engine is.
	DeviceName string
	// EngineName, when set, is the engine's display name in place of the
	// engine's own ("vLLM" for an endpoint that does not say what it is).
	EngineName string
	// Simulated labels the run simulated even if the engine does not say
	// so (an agent that simulates a whole device).
	Simulated bool
	// Version is vlmfleet's, recorded as the client's.
	Version   string
	Telemetry Telemetry
	Log       zerolog.Logger
}

// Hooks are how a caller hears of a run while Run owns it; every one is
// optional and called on the measuring goroutines. A header handed to a
// hook is the run as it stands, without combinations. An error from a hook
// ends the run: the caller can no longer speak of it (its context ended),
// so measuring on would be for nothing; Run returns that error.
type Hooks struct {
	// Opened is called first, with the header, before anything starts or
	// a refused engine configuration fails the run: from here on the run
	// exists and must be ended, whatever becomes of it.
	Opened func(header protocol.Run) error
	// Starting is called with the header before the engine starts.
	Starting func(header protocol.Run) error
	// Running is called with the header once the engine serves; it now
	// carries what the engine says of itself.
	Running func(header protocol.Run) error
	// Progress receives live progress, its times on the device's scale,
	// labelled with the run's id and whether it is simulated.
	Progress func(p protocol.Progress)
	// Sample receives each telemetry sample as it is taken.
	Sample func(s protocol.TelemetrySample)
	// Combination receives each measured combination, on the device's time
	// scale with its telemetry, before it is kept.
	Combination func(header protocol.Run, c *protocol.Combination) error
}

// Run opens the run, starts the engine, measures the workload's plan,
// stops the engine and ends the run. It returns the run with every
// combination measured, ended as completed or, with the error that it also
// returns, as failed, or as cancelled when ctx ended first. A cancelled
// run's error is the reason its canceller gave (context.Cause), where one
// was given. An engine that dies while it is measured (out of memory is
// common on a 16 GB Orin NX) fails the run with the engine's words.
func Run(ctx context.Context, spec Spec, h Hooks) (protocol.Run, error) {
	m := &measurement{spec: spec, hooks: h, run: newHeader(spec, time.Now().UTC())}
	err := m.measure(ctx)
	m.end(ctx, err)
	return m.run, err
}

// newHeader is the run before anything is measured. now is its start, and
// its creation unless the caller set one.
func newHeader(spec Spec, now time.Time) protocol.Run {
	r := spec.Run
	r.Schema = protocol.SchemaVersion
	r.Status = protocol.RunRunning
	if r.CreatedAt.IsZero() {
		r.CreatedAt = now
	}
	r.StartedAt = now
	r.Client = loadgen.ClientInfo(spec.Images, spec.Version)
	r.Combinations = nil
	var info protocol.EngineInfo
	if spec.Engine != nil {
		info = spec.Engine.Info()
	}
	spec.describeEngine(&r, info)
	return r
}

// describeEngine sets the header's fields that follow from the engine.
// They are set again once the engine serves: only then does an engine say
// all of what it is (its version, that it is the simulator, of which
// device and how much faster).
func (spec Spec) describeEngine(r *protocol.Run, info protocol.EngineInfo) {
	sim := engine.SimulationOf(info)
	r.Simulated = spec.Simulated || sim.Simulated
	r.SimSpeedup = 0
	if sim.Speedup > 1 {
		r.SimSpeedup = sim.Speedup
	}
	r.Engine = info
	// A run whose engine could not be made keeps what the caller called it.
	r.Config.Engine = cmp.Or(spec.EngineName, info.Name, spec.Run.Config.Engine)
	r.Device = spec.Device
	if sim.Simulated && sim.Device != "" && spec.DeviceName == "" && !strings.EqualFold(r.Device.Name, sim.Device) {
		// A simulated engine is filed under the device it simulates,
		// never under the hardware it happens to run on.
		r.Device = devicefacts.Simulated(sim.Device)
	}
	if spec.DeviceName != "" {
		r.Device.Name = spec.DeviceName
	}
	if r.Device.Name == "" {
		r.Device.Name = "unknown device"
	}
	r.Config.Device = r.Device.Name
	if r.Workload.Profile != nil {
		profileIdentity(r)
	}
	if j := r.Device.Jetson; j != nil && r.Config.Power().IsZero() {
		// A Jetson is measured in some mode, set or found: a bench run
		// records it as a lab job does, so that both are one row.
		r.Config.PowerMode = j.PowerMode
	}
}

// refusedError fails a run whose engine configuration was refused, even
// when ctx ended meanwhile: the run could never have been measured.
type refusedError struct{ err error }

func (e *refusedError) Error() string { return "engine configuration: " + e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }

// end sets how the run ended, the only place that does.
func (m *measurement) end(ctx context.Context, err error) {
	if eng := m.spec.Engine; eng != nil {
		// measure has stopped the engine: the end of its log is how the
		// run ended (the requests it served, a crash, its shutdown), never
		// only its start-up, whether the run completed or failed.
		m.run.Engine.LogTail = eng.LogTail(40)
	}
	m.run.FinishedAt = time.Now().UTC()
	var refused *refusedError
	switch {
	case err == nil:
		m.run.Status = protocol.RunCompleted
	case ctx.Err() != nil && !errors.As(err, &refused):
		m.run.Status, m.run.Error = protocol.RunCancelled, cancelReason(ctx, err)
	default:
		m.run.Status, m.run.Error = protocol.RunFailed, err.Error()
	}
}

// cancelReason is why a cancelled run ended: the reason its canceller gave
// (a job cancelled by the controller), else what stopped the measuring.
func cancelReason(ctx context.Context, err error) string {
	if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
		return cause.Error()
	}
	return err.Error()
}

// measurement is one Run in progress.
type measurement struct {
	spec  Spec
	hooks Hooks
	run   protocol.Run
	clock clock
	// inFlight is the requests in flight: the simulated device's load.
	inFlight atomic.Int64
	comboIdx atomic.Int64
	// comboN is the combinations known when the current one started: the
	// plan's and a search's levels chosen so far.
	comboN atomic.Int64
}

// header is the run as it stands, without combinations.
func (m *measurement) header() protocol.Run {
	h := m.run
	h.Combinations = nil
	return h
}

// tell hands the header to a phase's hook, if there is one.
func (m *measurement) tell(hook func(protocol.Run) error) error {
	if hook == nil {
		return nil
	}
	return hook(m.header())
}

func (m *measurement) measure(ctx context.Context) error {
	if err := m.tell(m.hooks.Opened); err != nil {
		return err
	}
	if m.spec.Refused != nil {
		return &refusedError{m.spec.Refused}
	}
	eng := m.spec.Engine
	defer stopEngine(eng)
	if err := m.tell(m.hooks.Starting); err != nil {
		return err
	}
	m.progress(protocol.Progress{Phase: protocol.PhaseEngineStart, Message: "starting " + m.run.Config.Engine})
	ep, err := eng.Start(ctx, engine.NeedsOf(m.spec.Run.Workload))
	if err != nil {
		m.run.Engine = eng.Info()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("engine did not start: %w", err)
	}
	m.spec.describeEngine(&m.run, eng.Info())
	m.chooseUniqueImages()
	m.clock = clock{speedup: max(m.run.SimSpeedup, 1)}
	if msg := slotsWarning(m.run.Engine, m.run.Workload); msg != "" {
		m.warn(msg)
	}
	if err := m.tell(m.hooks.Running); err != nil {
		return err
	}

	mctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go watchEngine(mctx, eng, cancel)

	tel := m.startTelemetry(mctx)
	defer tel.stop()
	m.sampleIdle(mctx, tel)

	var combos []protocol.Combination
	if w := m.run.Workload; w.Profile != nil {
		combos, err = m.measureProfile(mctx, ep, tel)
	} else {
		combos, err = loadgen.Measure(mctx, m.target(ep), m.clock.workload(w), m.spec.Images, m.loadgenHooks(mctx, tel))
	}
	m.run.Combinations = combos
	if cause := context.Cause(mctx); cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("measuring: %w", ctx.Err())
		}
		return err
	}
	m.run.Engine = eng.Info()
	return nil
}

// watchEngine ends the measuring with the engine's words when the engine
// exits before ctx ends.
func watchEngine(ctx context.Context, eng engine.Engine, cancel context.CancelCauseFunc) {
	select {
	case err := <-eng.Exited():
		if err == nil {
			err = errors.New("engine exited")
		}
		cancel(fmt.Errorf("engine exited while measuring: %w", err))
	case <-ctx.Done():
	}
}

// target is the endpoint with what the workload adds to every request.
func (m *measurement) target(ep engine.Endpoint) loadgen.Target {
	t := loadgen.Target{BaseURL: ep.BaseURL, Model: ep.Model, APIKey: ep.APIKey, ExtraBody: ep.ExtraBody,
		Speedup: m.clock.speedup, Simulated: m.run.Simulated}
	if field, v, ok := cachePrompt(m.run.Workload, m.run.Engine, m.run.Config.Engine); ok {
		out := make(map[string]any, len(t.ExtraBody)+1)
		for k, x := range t.ExtraBody {
			out[k] = x
		}
		out[field] = v
		t.ExtraBody = out
	}
	return t
}

// cachePrompt decides whether requests carry the workload's cache_prompt,
// and in which field: the engine's own cache switch (llama.cpp's
// "cache_prompt"). Other servers may refuse fields they do not know, so it
// goes only to an engine that has one: started, simulated (by the name of
// the engine it stands for), or an endpoint that does not say what it is
// when the user named it such an engine.
func cachePrompt(w protocol.Workload, info protocol.EngineInfo, displayName string) (string, bool, bool) {
	if w.CachePrompt == nil {
		return "", false, false
	}
	field := engine.RequestSwitchesFor(info, displayName).CacheField
	if field == "" {
		return "", false, false
	}
	return field, *w.CachePrompt, true
}

// engineDeathGrace is how long a combination whose requests all failed
// waits for the engine's watcher to report a death before it counts as
// measured.
const engineDeathGrace = 2 * time.Second

func (m *measurement) loadgenHooks(mctx context.Context, tel *telemetryRecorder) loadgen.Hooks {
	return loadgen.Hooks{
		ComboStart: func(idx, n int, pc protocol.PlannedCombo, warmup bool) {
			m.comboIdx.Store(int64(idx))
			m.comboN.Store(int64(n))
			phase := protocol.PhaseMeasure
			if warmup {
				phase = protocol.PhaseWarmup
			} else {
				tel.mark()
			}
			m.progress(protocol.Progress{Phase: phase, Combo: pc.ComboKey, ComboIdx: idx, ComboN: n, Total: pc.Requests})
		},
		Request: func(k protocol.ComboKey, rec protocol.RequestRecord, p loadgen.Progress) {
			m.progress(protocol.Progress{
				Phase: protocol.PhaseMeasure, Combo: k, ComboIdx: int(m.comboIdx.Load()), ComboN: int(m.comboN.Load()),
				Done: p.Done, Failed: p.Failed, Total: p.Total, InFlight: p.InFlight,
				LastTTFT: m.clock.seconds(rec.TTFT), MeanTTFT: m.clock.seconds(p.MeanTTFT),
			})
		},
		InFlight: func(d int) { m.inFlight.Add(int64(d)) },
		ComboDone: func(_ int, c *protocol.Combination) error {
			if err := m.measured(mctx, tel, c); err != nil {
				return err
			}
			return m.keep(c)
		},
	}
}

// measured completes a measured combination: its telemetry and energy,
// on the device's time scale, with what it gives to warn of. An engine
// that died while it was measured fails it.
func (m *measurement) measured(mctx context.Context, tel *telemetryRecorder, c *protocol.Combination) error {
	if c.Completed == 0 && c.Failed > 0 {
		// Every request failed: most likely the engine died, and
		// its requests were refused faster than the engine's
		// watcher could say so (a busy host schedules it late).
		// Give the watcher a moment before taking the failures
		// for a measurement.
		t := time.NewTimer(engineDeathGrace)
		select {
		case <-mctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	// A combination cut short by the engine's death is not a
	// measurement: its requests failed in microseconds.
	if cause := context.Cause(mctx); cause != nil {
		return cause
	}
	c.TelemetrySeries, c.Telemetry = tel.window()
	c.Energy = energyOf(c.TelemetrySeries, tel.source(), c.WallSec, c.Completed, m.run.IdlePower)
	c.ScaleTime(m.clock.speedup)
	if msg := cacheWarning(m.run.Workload, c); msg != "" {
		m.warn(msg)
	}
	if msg := searchSlotsWarning(m.run.Engine, m.run.Workload, c); msg != "" && !slices.Contains(m.run.Warnings, msg) {
		m.warn(msg)
	}
	return nil
}

// keep hands a measured combination to the caller.
func (m *measurement) keep(c *protocol.Combination) error {
	if m.hooks.Combination != nil {
		if err := m.hooks.Combination(m.header(), c); err != nil {
			return err
		}
	}
	m.spec.Log.Info().Str("combo", c.ComboKey.String()).Int("completed", c.Completed).Int("failed", c.Failed).
		Float64("ttft_mean_s", c.TTFT.Mean).Float64("tps_mean", c.TPS.Mean).Msg("combination measured")
	return nil
}

func (m *measurement) progress(p protocol.Progress) {
	if m.hooks.Progress == nil {
		return
	}
	p.RunID, p.Simulated = m.run.ID, m.run.Simulated
	m.hooks.Progress(p)
}

// load is the simulated device's load: busy while it holds requests, and
// busier the more share it. A closed loop keeps one per camera in flight
// from start to end; cameras on a frame clock leave it idle between
// answers.
func (m *measurement) load() float64 {
	n := m.inFlight.Load()
	if n <= 0 {
		return 0
	}
	return 0.6 + 0.4*min(1, float64(n)/8)
}

func stopEngine(e engine.Engine) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = e.Stop(ctx)
}
