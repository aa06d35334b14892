package jobs

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

// powerPlan is the settings each agent of a sweep is measured in, by agent
// id, and the notes on the agents measured otherwise than the axis names.
type powerPlan struct {
	settings map[string][]protocol.PowerSetting
	notes    []protocol.AgentNote
}

// planPower applies the sweep's power axis to the agents that get jobs.
// A setting applies to the agents that have it (a mode to the Jetsons
// that list it, a limit to the GPU hosts whose range holds it); an agent
// that has none of the axis's settings is measured once at its current
// setting, and a note says so. Refused, in the words of
// PowerControl.Check: a setting no agent of the sweep has, and one an
// agent has but may not switch to.
func planPower(axis []sweepPower, agents []AgentStatus) (powerPlan, error) {
	plan := powerPlan{settings: map[string][]protocol.PowerSetting{}}
	if len(axis) == 0 {
		for _, a := range agents {
			plan.settings[a.ID] = []protocol.PowerSetting{{}}
		}
		return plan, nil
	}
	for _, p := range axis {
		if err := checkPowerSetting(p, agents, plan.settings); err != nil {
			return powerPlan{}, err
		}
	}
	for _, a := range agents {
		if note := powerNote(axis, a, plan.settings[a.ID]); note != "" {
			plan.notes = append(plan.notes, protocol.AgentNote{AgentID: a.ID, Note: note})
		}
		if len(plan.settings[a.ID]) == 0 {
			plan.settings[a.ID] = []protocol.PowerSetting{{}}
		}
	}
	return plan, nil
}

// checkPowerSetting adds setting p to the settings of every agent that
// can take it, and refuses it when an agent has it but may not switch, or
// when no agent takes it.
func checkPowerSetting(p sweepPower, agents []AgentStatus, settings map[string][]protocol.PowerSetting) error {
	var refusal error
	refusalOfKind := false
	taken := false
	for _, a := range agents {
		err := a.Power.Check(p.PowerSetting)
		if err == nil {
			settings[a.ID] = append(settings[a.ID], p.PowerSetting)
			taken = true
			continue
		}
		if a.Power != nil && !a.Power.Switchable && hasPowerSetting(a.Power, p.PowerSetting) {
			return powerRefusal(p.field, a.ID, err)
		}
		// Of the agents without it, one of the setting's kind says best
		// why: it lacks that mode, rather than it has no modes at all.
		ofKind := powerApplies(a.Power, p.PowerSetting)
		if refusal == nil || ofKind && !refusalOfKind {
			refusal, refusalOfKind = powerRefusal(p.field, a.ID, err), ofKind
		}
	}
	if taken || refusal == nil {
		return nil
	}
	if len(agents) > 1 {
		return api.BadSweepf("%v; no other agent of the sweep has it either", refusal)
	}
	return refusal
}

// hasPowerSetting says whether the device has s (lists the mode, or its
// range holds the limit), whether or not the agent may switch to it.
func hasPowerSetting(pc *protocol.PowerControl, s protocol.PowerSetting) bool {
	free := *pc
	free.Switchable = true
	return free.Check(s) == nil
}

// powerNote says how agent a is measured otherwise than the axis names,
// given the settings it takes: "" when it takes every setting of its
// kind.
func powerNote(axis []sweepPower, a AgentStatus, took []protocol.PowerSetting) string {
	if len(took) == 0 {
		current := protocol.PowerSetting{Mode: a.PowerMode, LimitW: a.PowerLimitW}.String()
		if current == "" {
			current = "as found"
		}
		why := strings.TrimPrefix(a.Power.Check(axis[0].PowerSetting).Error(), "it ")
		return fmt.Sprintf("measured at its current power setting (%s), none of the sweep's applying: it %s", current, why)
	}
	var lacks []string
	for _, p := range axis {
		if powerApplies(a.Power, p.PowerSetting) && a.Power.Check(p.PowerSetting) != nil {
			lacks = append(lacks, p.String())
		}
	}
	if len(lacks) == 0 {
		return ""
	}
	return fmt.Sprintf("not measured in %s, which its device does not have", strings.Join(lacks, ", "))
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
