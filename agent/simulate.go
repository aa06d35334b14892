package agent

import (
	"fmt"
	"sort"
	"strings"

	"github.com/vlmfleet/vlmfleet/agent/engine"
	"github.com/vlmfleet/vlmfleet/agent/simengine"
)

// SimulatedDevices lists the device names the simulator has profiles for.
func SimulatedDevices() []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range simengine.Profiles() {
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
	for _, p := range simengine.Profiles() {
		if !strings.EqualFold(p.Device, device) {
			continue
		}
		if len(models) > 0 && !containsFold(models, p.Model) {
			continue
		}
		out = append(out, DeploymentConfig{
			ID:           DeploymentID(p.Model, p.Quantization, p.Engine),
			Model:        p.Model,
			ParamsB:      p.ParamsB,
			Quantization: p.Quantization,
			Engine: engine.Config{
				Kind:            engine.KindSim,
				SimDevice:       p.Device,
				SimModel:        p.Model,
				SimQuantization: p.Quantization,
				SimEngine:       p.Engine,
				SimSpeedup:      speedup,
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
