package engine

import (
	"math"
	"strconv"

	"github.com/vlmfleet/vlmfleet/agent/simengine"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// Simulation is what a measurement must know of a simulated engine: that
// it is one, how many times faster than its device it runs, and which
// device it stands for.
type Simulation struct {
	Simulated bool
	// Speedup is at least 1; 1 is real time.
	Speedup float64
	// Device is the simulated device's name ("" when not said).
	Device string
	// GPUCount is how many of the device's GPUs serve the model (the
	// tensor-parallel size of a data-center profile); 0 when not said.
	GPUCount int
}

// The EngineInfo.Props keys that carry a Simulation, written by the sim
// adapter and by adapters that find the simulator behind an endpoint.
const (
	propSimulated = "simulated"
	propSpeedup   = "sim_speedup"
	propDevice    = "sim_device"
	propGPUCount  = "sim_gpu_count"
)

// SimulationOf reads the simulation an engine recorded in its props. An
// engine of the sim kind is simulated whatever its props say.
func SimulationOf(info protocol.EngineInfo) Simulation {
	s := Simulation{
		Simulated: info.Kind == KindSim || info.Props[propSimulated] == "true",
		Speedup:   1,
		Device:    info.Props[propDevice],
	}
	if n, err := strconv.Atoi(info.Props[propGPUCount]); err == nil && n > 0 {
		s.GPUCount = n
	}
	if v, err := strconv.ParseFloat(info.Props[propSpeedup], 64); err == nil {
		s.Speedup = v
	}
	if !s.Simulated {
		return Simulation{Speedup: 1}
	}
	// A speed-up that is missing or not a finite number of at least 1
	// counts as real time: times are never shrunk.
	if !(s.Speedup >= 1) || math.IsInf(s.Speedup, 0) {
		s.Speedup = 1
	}
	return s
}

// simulationOfEntry reads the simulator's fields of a /models entry.
func simulationOfEntry(e simengine.ModelEntry) Simulation {
	props := map[string]string{}
	Simulation{Simulated: e.Simulated, Speedup: e.SimSpeedup, Device: e.SimDevice, GPUCount: e.SimGPUCount}.setProps(props)
	return SimulationOf(protocol.EngineInfo{Props: props})
}

// setProps records s in props (nothing for a real engine).
func (s Simulation) setProps(props map[string]string) {
	if !s.Simulated {
		return
	}
	props[propSimulated] = "true"
	props[propSpeedup] = strconv.FormatFloat(s.Speedup, 'g', -1, 64)
	if s.Device != "" {
		props[propDevice] = s.Device
	}
	if s.GPUCount > 0 {
		props[propGPUCount] = strconv.Itoa(s.GPUCount)
	}
}
