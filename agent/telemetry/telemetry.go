// Package telemetry samples the hardware while an agent measures: tegrastats
// on a Jetson, nvidia-smi on a dGPU host, gopsutil on a bare host, or
// synthesised readings for a simulated device. Each sample also carries the
// host CPU/memory and the agent's own CPU and RSS.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/rs/zerolog"
	"github.com/vlmfleet/vlmfleet/agent/devicefacts"
	"github.com/vlmfleet/vlmfleet/internal/tick"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Sources. The tool sources are named after the tool they run.
const (
	SourceAuto       = "auto"
	SourceTegrastats = "tegrastats"
	SourceNvidiaSMI  = "nvidia-smi"
	SourceHost       = "host"
	SourceSimulated  = "simulated"
	// SourceOff is a configuration's way to say "no telemetry": there is
	// no Sampler for it, so New refuses it and callers check for it first.
	SourceOff = "off"
)

// Sources lists every source a configuration may name, SourceOff included.
func Sources() []string {
	return []string{SourceAuto, SourceTegrastats, SourceNvidiaSMI, SourceHost, SourceSimulated, SourceOff}
}

// Options configure a Sampler.
type Options struct {
	// Source is auto (tegrastats on a Jetson, else nvidia-smi when present,
	// else host), tegrastats, nvidia-smi, host or simulated.
	Source string
	// Interval between samples (default 500ms).
	Interval time.Duration
	// SysRoot prefixes every file read ("" means devicefacts.DefaultSysRoot).
	SysRoot string
	// Path is the PATH-style list searched for tegrastats and nvidia-smi;
	// "" searches nowhere (auto then samples the host). Like SysRoot it
	// comes from the caller alone, never from this process's environment.
	Path string
	// SimLoad is the simulated device's current load, 0..1 (nil: idle).
	SimLoad func() float64
	// SimDevice names the simulated device ("Jetson AGX Orin", "RTX PRO 6000 Max-Q").
	SimDevice string
	// SimPower is the power setting the simulated device runs in (the
	// run's mode or limit): its budget caps the draw, and a slower GPU
	// draws less. The zero setting: the device as published.
	SimPower protocol.PowerSetting
	Log      zerolog.Logger
	// RestartDelay is the first wait before restarting a tool that exited
	// (default 1s); it doubles up to 30s while the tool keeps failing.
	RestartDelay time.Duration
	// ProbeTimeout bounds nvidia-smi field probing (default 15s).
	ProbeTimeout time.Duration
}

// Sampler takes telemetry samples from one source. It holds no state that
// changes, so Run may be called again after it returns.
type Sampler struct {
	opt    Options
	source string
	bin    string // the tool's absolute path, for tegrastats and nvidia-smi
	// simPower is Options.SimPower resolved on the simulated device.
	simPower devicefacts.SimPower
}

// New picks the source. An explicitly requested tool that is not on the
// path is an error; auto falls back to host.
func New(opt Options) (*Sampler, error) {
	if opt.Interval <= 0 {
		opt.Interval = 500 * time.Millisecond
	}
	opt.SysRoot = devicefacts.SysRootOr(opt.SysRoot)
	if opt.RestartDelay <= 0 {
		opt.RestartDelay = time.Second
	}
	if opt.ProbeTimeout <= 0 {
		opt.ProbeTimeout = 15 * time.Second
	}
	if opt.Source == "" {
		opt.Source = SourceAuto
	}
	s := &Sampler{opt: opt}
	switch opt.Source {
	case SourceAuto:
		if bin, err := devicefacts.LookPath(opt.Path, SourceTegrastats); err == nil {
			s.source, s.bin = SourceTegrastats, bin
		} else if _, jetson := devicefacts.JetsonModel(opt.SysRoot); jetson {
			opt.Log.Warn().Msg("telemetry: this is a Jetson but tegrastats is not on PATH; sampling the host only")
			s.source = SourceHost
		} else if bin, err := devicefacts.LookPath(opt.Path, SourceNvidiaSMI); err == nil {
			s.source, s.bin = SourceNvidiaSMI, bin
		} else {
			s.source = SourceHost
		}
	case SourceTegrastats, SourceNvidiaSMI:
		bin, err := devicefacts.LookPath(opt.Path, opt.Source)
		if err != nil {
			return nil, fmt.Errorf("telemetry source %s: %w", opt.Source, err)
		}
		s.source, s.bin = opt.Source, bin
	case SourceHost:
		s.source = opt.Source
	case SourceSimulated:
		p, err := devicefacts.SimPowerFor(opt.SimDevice, opt.SimPower)
		if err != nil {
			return nil, fmt.Errorf("telemetry source %s: %w", opt.Source, err)
		}
		s.source, s.simPower = opt.Source, p
	case SourceOff:
		return nil, fmt.Errorf("telemetry source %s: nothing to sample", SourceOff)
	default:
		return nil, fmt.Errorf("unknown telemetry source %q (want auto, tegrastats, nvidia-smi, host or simulated)", opt.Source)
	}
	return s, nil
}

// Source is the source in use: tegrastats, nvidia-smi, host or simulated.
func (s *Sampler) Source() string { return s.source }

// Run samples until ctx ends, calling sink from this goroutine for each
// sample, and returns nil then. A tool that exits is restarted with
// backoff. It returns an error only when sampling cannot start (nvidia-smi
// answers none of the fields).
func (s *Sampler) Run(ctx context.Context, sink func(protocol.TelemetrySample)) error {
	r := newRunState(ctx, s)
	emit := func(smp protocol.TelemetrySample) {
		r.augment(ctx, &smp)
		sink(smp)
	}
	var err error
	switch s.source {
	case SourceTegrastats:
		r.runTool(ctx, s.bin, []string{"--interval", strconv.FormatInt(s.opt.Interval.Milliseconds(), 10)}, r.tegrastatsLine(emit))
	case SourceNvidiaSMI:
		err = r.runNvidiaSMI(ctx, emit)
	case SourceHost:
		tick.Every(ctx, s.opt.Interval, func() { emit(protocol.TelemetrySample{}) })
	case SourceSimulated:
		sim := newSimulator(s.opt.SimDevice, s.simPower, s.opt.SimLoad)
		tick.Every(ctx, s.opt.Interval, func() { emit(sim.sample(s.opt.Interval)) })
	}
	if err != nil && !errors.Is(err, context.Canceled) && ctx.Err() == nil {
		return err
	}
	return nil
}

func (r *runState) tegrastatsLine(emit func(protocol.TelemetrySample)) func(string) {
	bad := 0
	p := newTegrastatsParser()
	return func(line string) {
		smp, err := p.parse(line)
		if err != nil {
			bad++
			if bad == 1 || bad%100 == 0 {
				r.s.opt.Log.Warn().Err(err).Int("bad_lines", bad).Msg("telemetry: skipping a tegrastats line")
			}
			return
		}
		emit(smp)
	}
}
