package agent

import (
	"fmt"
	"sort"
	"strings"

	"github.com/vlmfleet/vlmfleet/agent/engine"
	"github.com/vlmfleet/vlmfleet/agent/simengine"
)

// simulatedProfiles are the simulator's profiles: the edge devices' and
// the data-center GPUs' (one per published tensor-parallel size).
func simulatedProfiles() []simengine.Profile {
	ps := simengine.Profiles()
	if dc, err := simengine.DataCenterProfiles(); err == nil {
		ps = append(ps, dc...)
	}
	return ps
}

// SimulatedDevices lists the device names the simulator has profiles for.
func SimulatedDevices() []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range simulatedProfiles() {
		if !seen[p.Device] {
			seen[p.Device] = true
			out = append(out, p.Device)
		}
	}
	sort.Strings(out)
	return out
}

// SimulatedDeployments returns one deployment per calibrated profile of the
// device; models narrows them to the given model names when not empty.
func SimulatedDeployments(device string, speedup float64, models ...string) ([]DeploymentConfig, error) {
	var out []DeploymentConfig
	for _, p := range simulatedProfiles() {
		if !strings.EqualFold(p.Device, device) {
			continue
		}
		if len(models) > 0 && !containsFold(models, p.Model) {
			continue
		}
		quant, tp := p.Quantization, 0
		if p.DC != nil {
			// A model is published at several sizes on one GPU: each is a
			// deployment of its own.
			tp = p.TP()
			quant += fmt.Sprintf("-tp%d", tp)
		}
		out = append(out, DeploymentConfig{
			ID:           DeploymentID(p.Model, quant, p.Engine),
			Model:        p.Model,
			ParamsB:      p.ParamsB,
			Quantization: p.Quantization,
			Engine: engine.Config{
				Kind:               engine.KindSim,
				SimDevice:          p.Device,
				SimModel:           p.Model,
				SimQuantization:    p.Quantization,
				SimEngine:          p.Engine,
				SimSpeedup:         speedup,
				TensorParallelSize: tp,
			},
		})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no simulated profile for device %q (models %v); simulated devices: %s",
			device, models, strings.Join(SimulatedDevices(), ", "))
	}
	return out, nil
}

// DeploymentID makes a short id from a model, quantization and engine:
// "qwen3-vl-4b-instruct-q8_0-llama-cpp".
func DeploymentID(model, quant, eng string) string {
	id := strings.ToLower(model + "-" + quant + "-" + eng)
	id = sanitizeID(strings.NewReplacer(".", "-", " ", "-").Replace(id))
	if len(id) > 64 {
		id = id[:64]
	}
	return id
}

func containsFold(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}

// simulatedDevice is the device an agent simulates when its deployments
// are of kind sim: their one sim_device, as the simulator names it ("" when
// none is sim, or the device has no profile: its deployments are then
// refused, each with the reason). An agent announces one device, so a
// configuration that mixes sim with other kinds, or sim devices, is
// refused, naming the entries.
func (c Config) simulatedDevice() (string, error) {
	first := -1
	for i, d := range c.Deployments {
		if d.Engine.Kind != engine.KindSim {
			continue
		}
		if first < 0 {
			first = i
			continue
		}
		if want := c.Deployments[first].Engine.SimDevice; !strings.EqualFold(d.Engine.SimDevice, want) {
			return "", fmt.Errorf("deployments[%d].engine.sim_device: %q, but deployments[%d] simulates %q; an agent is one device: give each simulated device an agent (and config) of its own",
				i, d.Engine.SimDevice, first, want)
		}
	}
	if first < 0 {
		return "", nil
	}
	for i, d := range c.Deployments {
		if d.Engine.Kind != engine.KindSim {
			return "", fmt.Errorf("deployments[%d].engine.kind: %q beside deployments[%d].engine.kind: sim; an agent is one device, real or simulated: run the simulated deployments in an agent of their own",
				i, d.Engine.Kind, first)
		}
	}
	want := c.Deployments[first].Engine.SimDevice
	for _, dev := range SimulatedDevices() {
		if strings.EqualFold(dev, want) {
			return dev, nil
		}
	}
	return "", nil
}

// withSimulatedDevice makes an agent whose deployments are of kind sim
// announce the device they simulate, as --simulate does: its facts, its
// power modes or limits, simulated telemetry, runs labelled simulated.
// With sysroot set the facts are read from that tree instead (a fixture of
// a real device, whose power path is then the one used). A caller that
// names the device itself (--simulate, the demo) chose its deployments.
func (c Config) withSimulatedDevice() (Config, error) {
	if c.Simulate != "" {
		return c, nil
	}
	dev, err := c.simulatedDevice()
	if err != nil {
		return c, err
	}
	if c.SysRoot == "" {
		c.Simulate = dev
	}
	return c, nil
}
