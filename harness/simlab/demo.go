package simlab

import (
	"fmt"

	"github.com/vlmfleet/vlmfleet/agent"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// DemoDevice is one simulated lab device of the demo, with the camera levels
// the seed measured on that kind of device.
type DemoDevice struct {
	Device
	Cameras []int
	// Requests per camera level, as the seed measured: 8 on a Jetson, 24
	// on RTX PRO 6000.
	Requests int
	// LowPower, when set, is a second nvpmodel mode the demo measures the
	// device's first model in, besides the mode the device starts in: the
	// lower mode's Max Cameras, power and cost per camera beside the
	// published mode's.
	LowPower string
}

// Demo is the lab of `vlmfleet demo`: the seed's three devices. Speed-ups
// compress each device's time; a fast device runs at a lower one: its
// response times are a few hundred milliseconds, and a millisecond of real
// overhead would be multiplied by the speed-up.
func Demo() []DemoDevice {
	dev := func(id, device string, speedup float64, models ...string) Device {
		return Device{ID: id, Device: device, Models: models, Speedup: speedup}
	}
	return []DemoDevice{
		{dev("sim-orin-nx", "Jetson Orin NX", 40, "Cosmos-Reason2-2B", "Gemma-4-E2B-it"), []int{1, 2, 4}, 8, ""},
		{dev("sim-agx-orin", "Jetson AGX Orin", 40, "Cosmos3-Edge", "Qwen3-VL-4B-Instruct"), []int{1, 2, 4, 8}, 8, "MODE_30W"},
		{dev("sim-rtx-pro-6000", "RTX PRO 6000", 10, "Qwen3-VL-4B-Instruct"), []int{1, 2, 4, 8, 16}, 24, ""},
	}
}

// Sweeps are the demo's sweeps of the device over workload w: every model
// in the mode the device starts in, then, with LowPower, its first model
// in that mode too, over w's camera ladder alone (the multi-image family
// says nothing of power per camera, and would only lengthen the demo).
func (d DemoDevice) Sweeps(w protocol.Workload) ([]protocol.Sweep, error) {
	out := []protocol.Sweep{{Name: "demo " + d.Device.Device, Agents: []string{d.ID}, Workload: w}}
	if d.LowPower == "" {
		return out, nil
	}
	ladder := w
	ladder.MultiImageSizes, ladder.ImagesPerRequest, ladder.MultiImageRequests = nil, nil, 0
	deps, err := agent.SimulatedDeployments(d.Device.Device, d.Speedup, d.Models[0])
	if err != nil {
		return nil, fmt.Errorf("simlab: demo %s in %s: %w", d.ID, d.LowPower, err)
	}
	return append(out, protocol.Sweep{
		Name: "demo " + d.Device.Device + " in " + d.LowPower, Agents: []string{d.ID},
		Deployments: []string{deps[0].ID}, PowerModes: []string{d.LowPower}, Workload: ladder,
	}), nil
}
