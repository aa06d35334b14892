package agent

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/vlmfleet/vlmfleet/agent/engine"
	"github.com/vlmfleet/vlmfleet/agent/power"
)

// DefaultPowerSocket is where vlmfleet-power.socket listens.
const DefaultPowerSocket = "/run/vlmfleet/power.sock"

// PowerConfig says whether and how the agent may switch its device's power
// mode (a Jetson's nvpmodel) or GPU power limit for a job that asks. The
// agent stays unprivileged: it asks a root helper that checks the request
// against the device's own list (docs/operations.md).
type PowerConfig struct {
	// Switch lets jobs set the power; off, a job that asks is refused with
	// the reason, and the device is measured as found.
	Switch bool `yaml:"switch"`
	// Socket is the helper's socket (default DefaultPowerSocket).
	Socket string `yaml:"socket"`
	// Command runs the helper as a process instead (hosts without systemd,
	// tests): its argv, an absolute path first, to which the agent appends
	// the request ("mode", "15W"); never a shell.
	Command []string `yaml:"command"`
	// Conf is the nvpmodel configuration listing the modes (default
	// /etc/nvpmodel.conf), read under sysroot.
	Conf string `yaml:"nvpmodel_conf"`
	// GPUMaxFreqFile is the GPU's devfreq max_freq file the agent watches
	// until a mode's GPU clock cap holds (default: the one nvpmodel.conf
	// names, else /sys/class/devfreq/17000000.*/max_freq).
	GPUMaxFreqFile string `yaml:"gpu_max_freq_file"`
	// GPUs are the indices of the GPUs whose power limit a job sets: those
	// the engines use (default: all).
	GPUs []int `yaml:"gpus"`
	// SettleTimeout bounds the wait for a new mode's clocks (default 30s).
	SettleTimeout engine.Duration `yaml:"settle_timeout"`
	// RestoreAfter bounds how long the agent keeps a job's power while
	// another job is queued for it (default 1m); with none queued it
	// restores at once.
	RestoreAfter engine.Duration `yaml:"restore_after"`
}

// defaultRestoreAfter is PowerConfig.RestoreAfter's default: far more than
// the controller takes to deliver the next queued job.
const defaultRestoreAfter = engine.Duration(time.Minute)

// switchReason is why a Jetson or a GPU host may not switch, for the hello.
func (p PowerConfig) switchReason() string {
	if p.Switch {
		return ""
	}
	return "power.switch is off in the agent's configuration; set power: {switch: true} and install the helper (deploy/install.sh agent --power-switch; docs/operations.md)"
}

// helper is the privileged path the configuration names; nil when off.
func (p PowerConfig) helper() power.Privileged {
	switch {
	case !p.Switch:
		return nil
	case len(p.Command) > 0:
		return power.Command{Argv: p.Command}
	case p.Socket != "":
		return power.Socket{Path: p.Socket}
	}
	return power.Socket{Path: DefaultPowerSocket}
}

// validate checks the block; errors name the field.
func (p PowerConfig) validate() error {
	if len(p.Command) > 0 && p.Socket != "" {
		return fmt.Errorf("power: socket and command at once; name one privileged path (socket: %s with vlmfleet-power.socket, or command: for hosts without systemd)", DefaultPowerSocket)
	}
	if p.Socket != "" && !filepath.IsAbs(p.Socket) {
		return fmt.Errorf("power.socket: %q, want an absolute path such as %s", p.Socket, DefaultPowerSocket)
	}
	if len(p.Command) > 0 && !filepath.IsAbs(p.Command[0]) {
		return fmt.Errorf("power.command[0]: %q, want the helper's absolute path (no PATH lookup, no shell)", p.Command[0])
	}
	for _, f := range []struct {
		name, path string
	}{{"power.nvpmodel_conf", p.Conf}, {"power.gpu_max_freq_file", p.GPUMaxFreqFile}} {
		if f.path != "" && !filepath.IsAbs(f.path) {
			return fmt.Errorf("%s: %q, want an absolute path", f.name, f.path)
		}
	}
	for i, g := range p.GPUs {
		if g < 0 {
			return fmt.Errorf("power.gpus[%d]: %d, want a GPU index as nvidia-smi lists it (0 or more)", i, g)
		}
		if slices.Index(p.GPUs, g) != i {
			return fmt.Errorf("power.gpus[%d]: GPU %d twice", i, g)
		}
	}
	if p.SettleTimeout < 0 {
		return fmt.Errorf("power.settle_timeout: %s is negative", p.SettleTimeout)
	}
	if p.RestoreAfter < 0 {
		return fmt.Errorf("power.restore_after: %s is negative", p.RestoreAfter)
	}
	return nil
}
