package controller

import (
	"fmt"
	"strings"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// sweepPower is one setting of a sweep's power axis with the field that
// names it (power_modes[1]), for a refusal to point at.
type sweepPower struct {
	protocol.PowerSetting
	field string
}

// sweepPowerAxis lists s's power settings in the sweep's order, modes
// then limits; nil when s has no power axis.
func sweepPowerAxis(s *protocol.Sweep) []sweepPower {
	var out []sweepPower
	for i, m := range s.PowerModes {
		out = append(out, sweepPower{protocol.PowerSetting{Mode: m}, fmt.Sprintf("power_modes[%d]", i)})
	}
	for i, w := range s.PowerLimitsW {
		out = append(out, sweepPower{protocol.PowerSetting{LimitW: w}, fmt.Sprintf("power_limits_w[%d]", i)})
	}
	return out
}

// powerSettingsFor is the settings agent a is measured in: the one zero
// setting (as found) when the sweep has no power axis; else each mode
// when its hello lists modes and each limit when it has a GPU limit range,
// in the sweep's order. An axis with nothing that applies to a, and a
// setting a cannot take (a mode its device does not list, a limit outside
// its range, an agent that may not switch), refuse the sweep in the words
// of PowerControl.Check.
func powerSettingsFor(axis []sweepPower, a agentStatus) ([]protocol.PowerSetting, error) {
	if len(axis) == 0 {
		return []protocol.PowerSetting{{}}, nil
	}
	var out []protocol.PowerSetting
	for _, p := range axis {
		if !powerApplies(a.Power, p.PowerSetting) {
			continue
		}
		if err := a.Power.Check(p.PowerSetting); err != nil {
			return nil, powerRefusal(p.field, a.ID, err)
		}
		out = append(out, p.PowerSetting)
	}
	if len(out) == 0 {
		// Nothing applies: Check on the first setting says why (no modes
		// on a GPU host, no limit on a Jetson, no power control at all).
		return nil, powerRefusal(axis[0].field, a.ID, a.Power.Check(axis[0].PowerSetting))
	}
	return out, nil
}

// powerApplies says whether setting s is of the kind the device takes: a
// mode on a device that lists modes, a limit on one with a limit range.
func powerApplies(pc *protocol.PowerControl, s protocol.PowerSetting) bool {
	if pc == nil {
		return false
	}
	return s.Mode != "" && len(pc.Modes) > 0 || s.LimitW != 0 && pc.MaxLimitW > 0
}

// powerRefusal words Check's reason for the agent: `power_modes[1]: agent
// "orin-2" has no power mode "25W"; its modes: MAXN, 10W, 15W`.
func powerRefusal(field, agent string, why error) error {
	if rest, ok := strings.CutPrefix(why.Error(), "it "); ok {
		return api.BadSweepf("%s: agent %q %s", field, agent, rest)
	}
	return api.BadSweepf("%s: agent %q cannot take it: %s", field, agent, why)
}
