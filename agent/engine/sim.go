package engine

import (
	"context"
	"fmt"
	"math"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts"
	"github.com/vlmfleet/vlmfleet/agent/simengine"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// KindSim is the simulated engine, served in the agent's process. Its
// name is the protocol's, as a run of it is marked simulated wherever it
// is read.
const KindSim = protocol.EngineSim

// simKind waits a minute for readiness by default: the simulated engine is
// ready as soon as it listens.
type simKind struct{}

func init() { register(simKind{}) }

func (simKind) name() string                  { return KindSim }
func (simKind) startupTimeout() time.Duration { return time.Minute }

func (simKind) newEngine(r *resolved, env Env) Engine { return newSim(r, env) }

// resolve looks the simulated device and model up among the simulator's
// profiles.
func (simKind) resolve(r *resolved, _ Env) error {
	c := r.Config
	if len(c.Command) > 0 || len(c.ExtraArgs) > 0 || c.URL != "" {
		return fmt.Errorf("command/extra_args/url: kind sim runs in-process and takes none of them")
	}
	if c.SimDevice == "" {
		return fmt.Errorf("sim_device: missing; want a simulated device such as \"Jetson AGX Orin\"")
	}
	if c.SimModel == "" {
		return fmt.Errorf("sim_model: missing; want a simulated model such as \"Qwen3-VL-4B-Instruct\"")
	}
	// The agent scales a simulated run's times back only for speedups above
	// one, so a slow-motion factor would be published unscaled as the device's.
	if c.SimSpeedup != 0 && !(c.SimSpeedup >= 1) || math.IsInf(c.SimSpeedup, 0) {
		return fmt.Errorf("sim_speedup: %g; want 0 (real time) or at least 1", c.SimSpeedup)
	}
	if c.TensorParallelSize < 0 {
		return fmt.Errorf("tensor_parallel_size: %d; want 0 (one GPU) or more", c.TensorParallelSize)
	}
	p, err := simengine.LookupTP(c.SimDevice, c.SimModel, c.SimQuantization, c.SimEngine, c.TensorParallelSize)
	if err != nil {
		return fmt.Errorf("sim_device/sim_model/sim_quantization/sim_engine/tensor_parallel_size: %w", err)
	}
	power, err := devicefacts.SimPowerFor(p.Device, protocol.PowerSetting{Mode: c.SimPowerMode, LimitW: c.SimPowerLimitW})
	if err != nil {
		return fmt.Errorf("sim_power_mode/sim_power_limit_w: %w", err)
	}
	r.profile, r.simPower = p, power
	r.model = c.SimModel
	r.served = c.ServedName
	if r.served == "" {
		r.served = c.SimModel
	}
	return nil
}

// simEngine serves the simulated engine in-process on a loopback port, so
// that the load generator measures it over real HTTP like any other.
type simEngine struct {
	r      *resolved
	env    Env
	exited chan error

	mu       sync.Mutex
	started  bool
	info     protocol.EngineInfo
	cancel   context.CancelFunc
	done     chan struct{}
	serveErr error
	stopping atomic.Bool
}

func newSim(r *resolved, env Env) *simEngine {
	name := r.profile.Engine
	if name == "" {
		name = r.SimEngine
	}
	speedup := r.SimSpeedup
	if speedup == 0 {
		speedup = 1
	}
	e := &simEngine{
		r: r, env: env,
		exited: make(chan error, 1),
		info: protocol.EngineInfo{
			Kind:    KindSim,
			Name:    name,
			Version: "simulated",
			Model:   r.SimModel,
			// The command that serves the same simulated engine on its own,
			// so that a simulated run can be reproduced outside the lab.
			Command: []string{"vlmfleet", "sim",
				"--device", r.profile.Device, "--model", r.profile.Model,
				"--quantization", r.profile.Quantization, "--engine", name,
				"--served-name", r.served,
				"--speedup", strconv.FormatFloat(speedup, 'g', -1, 64)},
			Props: map[string]string{
				"sim_model":        r.profile.Model,
				"sim_quantization": r.profile.Quantization,
				"params_b":         strconv.FormatFloat(r.profile.ParamsB, 'g', -1, 64),
				"served_name":      r.served,
			},
		},
	}
	if r.profile.DC != nil {
		// A data-center profile is a configuration of GPUs: the model is
		// split over TP of them, which are all that serve it.
		tp := strconv.Itoa(r.profile.TP())
		e.info.Props["tensor_parallel_size"] = tp
		e.info.Props["gpu"] = r.profile.Device
		e.info.Command = append(e.info.Command, "--tp", tp)
	}
	Simulation{Simulated: true, Speedup: speedup, Device: r.profile.Device, GPUCount: r.profile.TP()}.setProps(e.info.Props)
	setPowerProps(e.info.Props, r)
	if r.SimPowerMode != "" {
		e.info.Command = append(e.info.Command, "--power-mode", r.SimPowerMode)
	}
	if r.SimPowerLimitW != 0 {
		e.info.Command = append(e.info.Command, "--power-limit", strconv.FormatFloat(r.SimPowerLimitW, 'g', -1, 64))
	}
	return e
}

func (e *simEngine) Start(ctx context.Context, _ Needs) (Endpoint, error) {
	e.mu.Lock()
	if e.started {
		e.mu.Unlock()
		return Endpoint{}, fmt.Errorf("sim: Start called twice; make a new engine with New")
	}
	e.started = true
	e.mu.Unlock()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Endpoint{}, fmt.Errorf("sim: listen: %w", err)
	}
	root := "http://" + ln.Addr().String()
	srv := simengine.New(e.r.profile, simengine.Options{ServedName: e.r.served, Speedup: e.r.SimSpeedup, GPUSlowdown: e.r.simPower.Slowdown})
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	e.mu.Lock()
	e.cancel, e.done = cancel, done
	e.info.Endpoint = root + "/v1"
	e.mu.Unlock()
	go func() {
		err := srv.Serve(sctx, ln)
		e.mu.Lock()
		e.serveErr = err
		e.mu.Unlock()
		close(done)
	}()

	p := newProber("", e.env.probeTimeout)
	deadline := time.NewTimer(e.r.timeout)
	defer deadline.Stop()
	tick := time.NewTicker(e.env.pollEvery)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return Endpoint{}, fmt.Errorf("sim: simulated engine ended during startup: %v", e.err())
		default:
		}
		err := p.get200(ctx, root+"/health")
		if err == nil {
			_, err = p.listsModel(ctx, root+"/v1", e.r.served)
		}
		if err == nil {
			break
		}
		select {
		case <-done:
			return Endpoint{}, fmt.Errorf("sim: simulated engine ended during startup: %v", e.err())
		case <-ctx.Done():
			_ = e.Stop(context.Background())
			return Endpoint{}, fmt.Errorf("sim: start cancelled: %w", ctx.Err())
		case <-deadline.C:
			_ = e.Stop(context.Background())
			return Endpoint{}, fmt.Errorf("sim: not ready after %s (last check: %v)", e.r.timeout, err)
		case <-tick.C:
		}
	}
	go func() {
		<-done
		if !e.stopping.Load() {
			e.exited <- fmt.Errorf("sim: simulated engine stopped serving: %v", e.err())
		}
	}()
	return Endpoint{BaseURL: root + "/v1", Model: e.r.served}, nil
}

func (e *simEngine) err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.serveErr
}

func (e *simEngine) Exited() <-chan error { return e.exited }

func (e *simEngine) Info() protocol.EngineInfo { return snapshot(&e.mu, &e.info) }

func (e *simEngine) LogTail(int) string { return "" }

// Stop ends the server and waits for it to return.
func (e *simEngine) Stop(ctx context.Context) error {
	e.stopping.Store(true)
	e.mu.Lock()
	cancel, done := e.cancel, e.done
	e.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("sim: stop: %w", ctx.Err())
	}
}

// setPowerProps records the power the simulated device runs in, so that a
// run shows it: the mode or the limit, and by how much it slows the
// GPU-bound times (absent as published).
func setPowerProps(props map[string]string, r *resolved) {
	if r.SimPowerMode != "" {
		props["sim_power_mode"] = r.SimPowerMode
	}
	if r.SimPowerLimitW != 0 {
		props["sim_power_limit_w"] = strconv.FormatFloat(r.SimPowerLimitW, 'g', -1, 64)
	}
	if r.simPower.Slowdown != 1 {
		props["sim_gpu_slowdown"] = strconv.FormatFloat(r.simPower.Slowdown, 'g', 6, 64)
	}
	if r.simPower.CeilingW != 0 {
		props["sim_power_ceiling_w"] = strconv.FormatFloat(r.simPower.CeilingW, 'g', -1, 64)
	}
}
