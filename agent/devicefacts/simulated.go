package devicefacts

import (
	"context"
	"fmt"
	"strings"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// SimulatedNote is the warning every simulated device carries, so a reader
// of a result never mistakes its facts for measured ones.
const SimulatedNote = "simulated device: the Jetson/GPU facts are plausible values, not read from hardware; host facts are this machine's"

// Simulated returns plausible facts for a simulated device named like a
// real one ("Jetson Orin NX", "Jetson AGX Orin", "RTX PRO 6000", "RTX PRO
// 6000 Max-Q", or a data-center GPU such as "H100-HBM3-80GB", a node of
// SimNodeGPUs of them: SimulatedGPUs sets the count). Kind is simulated
// and Name is deviceName unchanged.
func Simulated(deviceName string) protocol.DeviceFacts {
	h, hw := hostFacts(context.Background())
	f := protocol.DeviceFacts{Name: deviceName, Kind: protocol.DeviceSimulated, Host: h}
	f.Warnings = append([]string{SimulatedNote}, hw...)
	pinned := true
	switch SimProfileFor(deviceName) {
	case SimOrinNX:
		f.Jetson = &protocol.JetsonFacts{
			Model: "NVIDIA Jetson Orin NX Engineering Reference Developer Kit",
			L4T:   "36.4.3", JetPack: "6.2", PowerMode: "MAXN", ClocksPinned: &pinned, MemoryMB: 15656,
		}
	case SimAGXOrin:
		f.Jetson = &protocol.JetsonFacts{
			Model: "NVIDIA Jetson AGX Orin Developer Kit",
			L4T:   "36.4.3", JetPack: "6.2", PowerMode: "MAXN", ClocksPinned: &pinned, MemoryMB: 30536,
		}
	case SimOrinNano:
		f.Jetson = &protocol.JetsonFacts{
			Model: "NVIDIA Jetson Orin Nano Engineering Reference Developer Kit Super",
			L4T:   "36.4.3", JetPack: "6.2", PowerMode: "MAXN_SUPER", ClocksPinned: &pinned, MemoryMB: 7620,
		}
	case SimRTXPro6000:
		f.GPUs = []protocol.GPUFacts{simRTX("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", simGPULimits()[SimRTXPro6000])}
	case SimRTXPro6000MaxQ:
		f.GPUs = []protocol.GPUFacts{simRTX("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", simGPULimits()[SimRTXPro6000MaxQ])}
	default:
		if b, ok := SimDataCenterBoard(deviceName); ok {
			f.GPUs = simBoards(b, SimNodeGPUs)
			break
		}
		f.Warnings = append(f.Warnings, fmt.Sprintf("no simulated profile for %q: only host facts", deviceName))
	}
	return f
}

// simRTX is a simulated board as found: its power limit at the default
// (a job that sets another tells the simulator through the engine's
// configuration, not through these facts).
func simRTX(name string, l SimGPULimits) protocol.GPUFacts {
	return protocol.GPUFacts{
		Index: 0, Name: name, UUID: "GPU-00000000-0000-0000-0000-51m000000000",
		Driver: "580.65.06", CUDA: "13.0", MemoryMB: 97887,
		DefaultPowerLimitW: l.DefaultW, MaxPowerLimitW: l.MaxW, MinPowerLimitW: l.MinW, PowerLimitW: l.DefaultW,
		ComputeCap: "12.0",
	}
}

// SimProfile names a simulated device family; telemetry synthesises
// readings per profile.
type SimProfile string

// Simulated device profiles.
const (
	SimUnknown        SimProfile = ""
	SimOrinNX         SimProfile = "orin-nx"
	SimAGXOrin        SimProfile = "agx-orin"
	SimOrinNano       SimProfile = "orin-nano"
	SimRTXPro6000     SimProfile = "rtx-pro-6000"
	SimRTXPro6000MaxQ SimProfile = "rtx-pro-6000-max-q"
)

// SimProfileFor picks the profile a device name describes, ignoring case.
func SimProfileFor(deviceName string) SimProfile {
	low := strings.ToLower(deviceName)
	switch {
	case strings.Contains(low, "orin nx"):
		return SimOrinNX
	case strings.Contains(low, "agx orin"):
		return SimAGXOrin
	case strings.Contains(low, "orin nano"):
		return SimOrinNano
	case strings.Contains(low, "rtx pro 6000") && strings.Contains(low, "max-q"):
		return SimRTXPro6000MaxQ
	case strings.Contains(low, "rtx pro 6000"):
		return SimRTXPro6000
	}
	return SimUnknown
}
