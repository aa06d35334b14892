package devicefacts

import (
	"fmt"
	"strings"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// SimBoard is a simulated data-center GPU as nvidia-smi reports it.
type SimBoard struct {
	SMIName    string
	MemoryMB   int
	MaxW, MinW float64
	ComputeCap string
}

// SimDataCenterBoard is the board of a simulated data-center GPU, named
// as NVIDIA's published vision NIM tables spell it ("H100-HBM3-80GB",
// "A100-SXM4-80GB", "L40S", ...); false for any other device.
func SimDataCenterBoard(deviceName string) (SimBoard, bool) {
	switch strings.ToUpper(deviceName) {
	case "H100-HBM3-80GB", "H100-SXM-80GB":
		return SimBoard{SMIName: "NVIDIA H100 80GB HBM3", MemoryMB: 81559, MaxW: 700, MinW: 200, ComputeCap: "9.0"}, true
	case "A100-SXM4-80GB", "A100-SXM-80GB":
		return SimBoard{SMIName: "NVIDIA A100-SXM4-80GB", MemoryMB: 81920, MaxW: 400, MinW: 100, ComputeCap: "8.0"}, true
	case "L40S":
		return SimBoard{SMIName: "NVIDIA L40S", MemoryMB: 46068, MaxW: 350, MinW: 100, ComputeCap: "8.9"}, true
	case "A10G":
		return SimBoard{SMIName: "NVIDIA A10G", MemoryMB: 23028, MaxW: 300, MinW: 100, ComputeCap: "8.6"}, true
	}
	return SimBoard{}, false
}

// SimNodeGPUs is how many GPUs a simulated data-center host has when no
// deployment says how many serve the model: an HGX-style node of eight,
// enough for the largest published tensor-parallel size.
const SimNodeGPUs = 8

// SimulatedGPUs is Simulated with the GPU count of a data-center GPU set
// to count (a deployment's tensor-parallel size; below 1 means 1). Other
// devices' facts are as Simulated gives them.
func SimulatedGPUs(deviceName string, count int) protocol.DeviceFacts {
	f := Simulated(deviceName)
	if b, ok := SimDataCenterBoard(deviceName); ok {
		f.GPUs = simBoards(b, max(1, count))
	}
	return f
}

func simBoards(b SimBoard, count int) []protocol.GPUFacts {
	out := make([]protocol.GPUFacts, count)
	for i := range out {
		out[i] = protocol.GPUFacts{
			Index: i, Name: b.SMIName, UUID: fmt.Sprintf("GPU-00000000-0000-0000-0000-51m0000000%02d", i),
			Driver: "580.65.06", CUDA: "13.0", MemoryMB: b.MemoryMB,
			DefaultPowerLimitW: b.MaxW, MaxPowerLimitW: b.MaxW, MinPowerLimitW: b.MinW, PowerLimitW: b.MaxW,
			ComputeCap: b.ComputeCap,
		}
	}
	return out
}
