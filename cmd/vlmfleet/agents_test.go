package main

import (
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// `vlmfleet agents` shows what --json has and a sweep needs: each agent's
// power setting now, whether it may switch (and why not), and its labels.
func TestAgentsShowPowerAndLabels(t *testing.T) {
	now := time.Now()
	agents := []api.AgentView{
		{ID: "orin-nx-01", Device: protocol.DeviceFacts{Name: "Jetson Orin NX"}, State: "idle", LastSeen: now,
			Labels: map[string]string{"site": "lab", "rack": "3"}, PowerMode: "15W",
			Power: &protocol.PowerControl{Modes: []protocol.PowerMode{{Name: "15W"}, {Name: "MAXN"}}, Mode: "15W", Switchable: true}},
		{ID: "rtx-01", Device: protocol.DeviceFacts{Name: "RTX PRO 6000"}, State: "busy", JobID: "j1", LastSeen: now, PowerLimitW: 600,
			Power: &protocol.PowerControl{LimitW: 600, MinLimitW: 150, MaxLimitW: 600, Reason: "power.allow_switch is false in the agent's configuration"}},
	}
	var out strings.Builder
	writeAgents(&cli{stdout: &out}, agents, now)
	for _, want := range []string{"POWER", "15W, may switch", "600 W limit, fixed", "orin-nx-01 labels: rack=3, site=lab",
		"rtx-01 power is fixed: power.allow_switch is false in the agent's configuration"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("agents lack %q:\n%s", want, out.String())
		}
	}
}
