package devicefacts

import (
	"fmt"
	"math"
	"strings"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// SimPowerModes are a simulated Jetson's nvpmodel modes, as its
// /etc/nvpmodel.conf would list them, and the mode it starts in; none for
// a simulated GPU host.
func SimPowerModes(deviceName string) (modes []protocol.PowerMode, current string) {
	t, ok := simModeTables()[SimProfileFor(deviceName)]
	if !ok {
		return nil, ""
	}
	for _, m := range t.Modes {
		modes = append(modes, protocol.PowerMode{ID: m.ID, Name: m.Name, GPUMaxFreqHz: m.GPUMaxFreqHz})
	}
	return modes, t.Reference
}

// SimModes is a simulated Jetson's table with the figures the simulator
// uses, and the mode its profile was published in; nil for a GPU host.
func SimModes(deviceName string) (modes []SimMode, reference string) {
	t := simModeTables()[SimProfileFor(deviceName)]
	return t.Modes, t.Reference
}

// SimGPULimitsFor are a simulated GPU host's power limits; false for a
// Jetson or an unknown device.
func SimGPULimitsFor(deviceName string) (SimGPULimits, bool) {
	l, ok := simGPULimits()[SimProfileFor(deviceName)]
	return l, ok
}

// SimPower is how a power setting changes a simulated device.
type SimPower struct {
	// Slowdown multiplies the GPU-bound times (prefill, each decoded
	// token): 1 as the profile was published, above 1 in a lower mode or
	// under a lower limit.
	Slowdown float64
	// CeilingW is the most the device draws in the setting: the mode's
	// budget or the GPU's limit; 0 when the setting leaves the profile's
	// own ceiling.
	CeilingW float64
}

// limitExponent is how a GPU's clock follows a power limit below its
// default: dynamic power goes as f·V² and V follows f in the DVFS range,
// so power ∝ f³ and the sustained clock ∝ limit^(1/3).
const limitExponent = 1.0 / 3

// SimPowerFor resolves a power setting on a simulated device. The zero
// setting, and a Jetson's published mode, are the profile as published
// (Slowdown exactly 1). A mode the device does not list, a limit outside
// its range, or the wrong kind of setting for the device is an error that
// says what the device takes.
func SimPowerFor(deviceName string, s protocol.PowerSetting) (SimPower, error) {
	none := SimPower{Slowdown: 1}
	if s.IsZero() {
		return none, nil
	}
	if err := s.Validate("power"); err != nil {
		return none, err
	}
	if modes, ref := SimModes(deviceName); len(modes) > 0 {
		if s.LimitW != 0 {
			return none, fmt.Errorf("simulated %s takes an nvpmodel mode, not a power limit (%g W); its modes: %s", deviceName, s.LimitW, modeNames(modes))
		}
		return simModePower(deviceName, modes, ref, s.Mode)
	}
	if l, ok := SimGPULimitsFor(deviceName); ok {
		if s.Mode != "" {
			return none, fmt.Errorf("simulated %s has no nvpmodel modes (asked for %q); it takes a power limit of %g-%g W", deviceName, s.Mode, l.MinW, l.MaxW)
		}
		if s.LimitW < l.MinW || s.LimitW > l.MaxW {
			return none, fmt.Errorf("simulated %s: power limit %g W is outside its range %g-%g W", deviceName, s.LimitW, l.MinW, l.MaxW)
		}
		slow := 1.0
		if s.LimitW < l.DefaultW {
			slow = math.Pow(l.DefaultW/s.LimitW, limitExponent)
		}
		return SimPower{Slowdown: slow, CeilingW: s.LimitW}, nil
	}
	return none, fmt.Errorf("simulated device %q has no power model (power setting %q)", deviceName, s)
}

// simModePower is a mode's slowdown against the reference mode: the GPU's
// throughput is its clock times its powered TPCs, and GPU-bound time goes
// inversely with it.
func simModePower(deviceName string, modes []SimMode, ref, name string) (SimPower, error) {
	var m, r *SimMode
	for i := range modes {
		if modes[i].Name == name {
			m = &modes[i]
		}
		if modes[i].Name == ref {
			r = &modes[i]
		}
	}
	if m == nil {
		return SimPower{Slowdown: 1}, fmt.Errorf("simulated %s has no power mode %q; its modes: %s", deviceName, name, modeNames(modes))
	}
	if m == r {
		return SimPower{Slowdown: 1}, nil
	}
	slow := float64(r.GPUMaxFreqHz) * float64(r.GPUTPCs) / (float64(m.GPUMaxFreqHz) * float64(m.GPUTPCs))
	return SimPower{Slowdown: slow, CeilingW: m.BudgetW}, nil
}

func modeNames(modes []SimMode) string {
	names := make([]string, len(modes))
	for i, m := range modes {
		names[i] = m.Name
	}
	return strings.Join(names, ", ")
}
