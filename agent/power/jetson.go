package power

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts"
	"github.com/vlmfleet/vlmfleet/agent/devicefacts/nvsmi"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Defaults of JetsonOptions.
const (
	DefaultSettle = 30 * time.Second
	defaultPoll   = 100 * time.Millisecond
	queryTimeout  = 10 * time.Second
)

// JetsonOptions make a Jetson switcher.
type JetsonOptions struct {
	// NVPModel is the nvpmodel executable.
	NVPModel string
	Conf     Conf
	// SysRoot prefixes the devfreq file read (tests use fixture trees).
	SysRoot string
	// GPUMaxFreqFile is the GPU's devfreq max_freq file as the device
	// names it; "" takes the conf's, else /sys/class/devfreq/17000000.*.
	GPUMaxFreqFile string
	// Helper switches; nil: this agent may not, for Reason.
	Helper Privileged
	Reason string
	// Settle bounds the wait for a new mode's clocks (DefaultSettle).
	Settle time.Duration
}

// Jetson reads the mode with nvpmodel -q and switches it through the
// privileged helper.
type Jetson struct {
	opt     JetsonOptions
	maxFreq string // the devfreq max_freq file under SysRoot; "" none found
}

// NewJetson makes the switcher.
func NewJetson(opt JetsonOptions) *Jetson {
	if opt.Settle <= 0 {
		opt.Settle = DefaultSettle
	}
	return &Jetson{opt: opt, maxFreq: gpuMaxFreqFile(opt)}
}

// gpuMaxFreqFile finds the GPU's devfreq max_freq file: the one configured,
// the one nvpmodel.conf names (17000000.gpu on JetPack 6, 17000000.ga10b
// on JetPack 5), else the first 17000000.* devfreq node.
func gpuMaxFreqFile(opt JetsonOptions) string {
	for _, p := range []string{opt.GPUMaxFreqFile, opt.Conf.GPUMaxFreqFile} {
		if p != "" {
			return filepath.Join(opt.SysRoot, p)
		}
	}
	m, _ := filepath.Glob(filepath.Join(opt.SysRoot, "/sys/class/devfreq/17000000.*/max_freq"))
	if len(m) > 0 {
		return m[0]
	}
	return ""
}

// Control lists the conf's modes and the one in force.
func (j *Jetson) Control(ctx context.Context) (protocol.PowerControl, error) {
	pc := protocol.PowerControl{Modes: j.opt.Conf.Modes, Switchable: j.opt.Helper != nil, Reason: j.opt.Reason}
	mode, err := j.mode(ctx)
	pc.Mode = mode
	return pc, err
}

// Current is the mode in force.
func (j *Jetson) Current(ctx context.Context) (protocol.PowerSetting, error) {
	mode, err := j.mode(ctx)
	return protocol.PowerSetting{Mode: mode}, err
}

func (j *Jetson) mode(ctx context.Context) (string, error) {
	qctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	out, err := nvsmi.Command(qctx, j.opt.NVPModel, "-q")
	if err != nil {
		return "", fmt.Errorf("read the power mode: %w", err)
	}
	mode, _, ok := devicefacts.ParseNVPModel(string(out))
	if !ok {
		return "", fmt.Errorf("read the power mode: no \"NV Power Mode:\" line in %s -q's output %q", j.opt.NVPModel, clip(string(out)))
	}
	return mode, nil
}

// Set switches to s.Mode and waits until nvpmodel reports it and, where
// the mode caps the GPU clock, the devfreq max_freq holds the cap. A mode
// already in force is left alone.
func (j *Jetson) Set(ctx context.Context, s protocol.PowerSetting) error {
	if s.LimitW != 0 || s.Mode == "" {
		return fmt.Errorf("power %q: a Jetson takes a power mode (one of %s), not a power limit", s, strings.Join(j.names(), ", "))
	}
	m, ok := j.opt.Conf.Mode(s.Mode)
	if !ok {
		return fmt.Errorf("power mode %q: this device's modes are %s", s.Mode, strings.Join(j.names(), ", "))
	}
	if j.opt.Helper == nil {
		return fmt.Errorf("power mode %q: this agent may not switch: %s", s.Mode, j.opt.Reason)
	}
	before, err := j.mode(ctx)
	if err != nil {
		return err
	}
	if before == m.Name {
		return nil
	}
	if err := j.opt.Helper.Do(ctx, "mode", m.Name); err != nil {
		now, qerr := j.mode(context.WithoutCancel(ctx))
		if qerr == nil && now == before {
			return fmt.Errorf("switch to power mode %s: %w; the device stays in %s", m.Name, err, before)
		}
		return fmt.Errorf("switch to power mode %s: %w; the device now reports mode %q (%v)", m.Name, err, now, qerr)
	}
	return j.settle(ctx, m)
}

// settle waits for the switch to show, polling: nvpmodel applies a mode's
// clocks after it returns, and a measurement started before they hold
// would measure the old mode.
func (j *Jetson) settle(ctx context.Context, m protocol.PowerMode) error {
	deadline := time.Now().Add(j.opt.Settle)
	t := time.NewTicker(defaultPoll)
	defer t.Stop()
	for {
		why := j.notYet(ctx, m)
		if why == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("switched to power mode %s, but after %s %s", m.Name, j.opt.Settle, why)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for power mode %s to hold: %w (%s)", m.Name, ctx.Err(), why)
		case <-t.C:
		}
	}
}

// notYet says what does not yet show mode m; "" when all does.
func (j *Jetson) notYet(ctx context.Context, m protocol.PowerMode) string {
	mode, err := j.mode(ctx)
	if err != nil {
		return err.Error()
	}
	if mode != m.Name {
		return fmt.Sprintf("nvpmodel -q still reports %s", mode)
	}
	if m.GPUMaxFreqHz == 0 || j.maxFreq == "" {
		return ""
	}
	b, err := os.ReadFile(j.maxFreq)
	if errors.Is(err, os.ErrNotExist) {
		return "" // no devfreq node to watch (another board layout)
	}
	if err != nil {
		return err.Error()
	}
	hz, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return fmt.Sprintf("%s holds %q, not a frequency", j.maxFreq, clip(string(b)))
	}
	// nvpmodel writes the highest available frequency at or below the cap.
	if hz <= 0 || hz > m.GPUMaxFreqHz {
		return fmt.Sprintf("%s reads %d Hz, not yet the mode's GPU cap %d Hz", j.maxFreq, hz, m.GPUMaxFreqHz)
	}
	return ""
}

func (j *Jetson) names() []string {
	pc := protocol.PowerControl{Modes: j.opt.Conf.Modes}
	return pc.ModeNames()
}
