package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/devicefacts"
	"github.com/vlmfleet/vlmfleet/agent/power"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// newSwitcher picks the device's switcher from what was detected: the
// simulator's modes, a Jetson's nvpmodel, an NVIDIA host's power limit.
// None, with the reason when the device should have one: that reason is
// announced, so a sweep that sets the power says why it cannot.
func (a *Agent) newSwitcher() (power.Switcher, string) {
	p := a.cfg.Power
	if a.cfg.Simulate != "" {
		_, isGPU := devicefacts.SimGPULimitsFor(a.cfg.Simulate)
		if modes, _ := devicefacts.SimPowerModes(a.cfg.Simulate); len(modes) > 0 || isGPU {
			return power.NewSimulated(a.cfg.Simulate), ""
		}
		return nil, ""
	}
	path := a.opt.Getenv("PATH")
	switch a.device.Kind {
	case protocol.DeviceJetson:
		bin, err := devicefacts.LookPath(path, "nvpmodel")
		if err != nil {
			return nil, fmt.Sprintf("power modes unknown: %v", err)
		}
		name := p.Conf
		if name == "" {
			name = power.ConfPath
		}
		file := filepath.Join(a.cfg.SysRoot, name)
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Sprintf("power modes unknown: %v", err)
		}
		conf, err := power.ParseConf(file, data)
		if err != nil {
			return nil, fmt.Sprintf("power modes unknown: %v", err)
		}
		return power.NewJetson(power.JetsonOptions{
			NVPModel: bin, Conf: conf, SysRoot: a.cfg.SysRoot, GPUMaxFreqFile: p.GPUMaxFreqFile,
			Helper: p.helper(), Reason: p.switchReason(), Settle: time.Duration(p.SettleTimeout),
		}), ""
	case protocol.DeviceDGPU:
		bin, err := devicefacts.LookPath(path, "nvidia-smi")
		if err != nil {
			return nil, fmt.Sprintf("GPU power limit unknown: %v", err)
		}
		return power.NewGPU(power.GPUOptions{SMI: bin, GPUs: p.GPUs, Helper: p.helper(), Reason: p.switchReason()}), ""
	}
	return nil, ""
}

// startPower makes the agent's power hold and, before the agent announces
// itself, puts back what a previous run left switched (it was killed
// between a switch and the restore); then reads what the hello says.
func (a *Agent) startPower(ctx context.Context) {
	sw, reason := a.newSwitcher()
	a.power = &powerHold{log: a.log, after: time.Duration(a.cfg.Power.RestoreAfter)}
	if sw == nil {
		if reason != "" {
			a.log.Warn().Str("reason", reason).Msg("the device's power cannot be read or set")
			a.powerControl = &protocol.PowerControl{Reason: protocol.Clip(reason, protocol.MaxLineLen, "...")}
		}
		return
	}
	if s, ok := a.cfg.Power.helper().(power.Socket); ok {
		if _, err := os.Stat(s.Path); err != nil {
			a.log.Warn().Err(err).Msg("power.switch is on but the power helper's socket is missing: jobs that set the power will fail (deploy/install.sh agent --power-switch)")
		}
	}
	a.power.guard = power.NewGuard(a.cfg.SpoolDir, sw)
	if a.power.guard.Pending() {
		a.log.Warn().Str("guard", a.power.guard.Path()).Msg("a previous run switched the device's power and did not put it back; restoring before announcing")
		a.power.close(ctx)
	}
	pc, err := sw.Control(ctx)
	if err != nil {
		a.log.Warn().Err(err).Msg("reading the device's power")
		pc.Reason = protocol.Clip(err.Error(), protocol.MaxLineLen, "...")
		pc.Switchable = false
	}
	a.powerControl = &pc
	_, _ = a.power.read(ctx)
	if a.device.Jetson != nil && pc.Mode != "" {
		j := *a.device.Jetson
		j.PowerMode = pc.Mode
		a.device.Jetson = &j
	}
}
