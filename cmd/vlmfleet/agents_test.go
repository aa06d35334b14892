package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/harness/labtest"
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

// `vlmfleet agents` shows an agent of an older release as needing an
// upgrade, with the release it runs and the one it needs; `vlmfleet
// agents forget ID` removes an offline agent, and refuses an unknown one.
func TestAgentsUpgradeAndForget(t *testing.T) {
	l := labtest.Start(t, controller.Options{Version: "0.6.0", HeartbeatTimeout: 2 * time.Second})
	env := map[string]string{"VLMFLEET_CONTROLLER": l.Ctl.HTTPURL(), "VLMFLEET_TOKEN": l.Ctl.APIToken()}
	// As the release before agent levels announced itself: no level.
	old, _ := json.Marshal(protocol.AgentHello{Schema: 1, AgentID: "old1", Hostname: "h2", Version: "0.5.2", StartedAt: time.Now().UTC(),
		Deployments: []protocol.Deployment{{ID: "d1", Engine: "sim", Model: "m"}}})
	if _, err := l.AdminJS.Publish(l.Ctx, protocol.AgentSubject("old1", protocol.KindHello), old); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	listed := func() bool {
		agents, err := l.Ctl.Agents(l.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(agents, func(a api.AgentView) bool { return a.ID == "old1" })
	}
	for !listed() {
		if time.Now().After(deadline) {
			t.Fatal("old1 never listed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	code, out, errOut := cliRun(t, env, "agents")
	if code != 0 || !strings.Contains(out, "needs upgrade (runs 0.5.2, needs 0.6.0)") || !strings.Contains(out, "old1 NEEDS AN UPGRADE: it runs vlmfleet 0.5.2") {
		t.Errorf("agents: exit %d\n%s\n%s\nwant old1 shown as needing an upgrade from 0.5.2 to 0.6.0", code, out, errOut)
	}

	for {
		agents, err := l.Ctl.Agents(l.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(agents) == 2 && !agents[1].Online {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("old1 never went offline: %+v", agents)
		}
		time.Sleep(100 * time.Millisecond)
	}
	code, out, errOut = cliRun(t, env, "agents", "forget", "old1")
	if code != 0 || !strings.Contains(out, "agent old1 forgotten") {
		t.Errorf("agents forget old1: exit %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = cliRun(t, env, "agents", "forget", "old1")
	if code != 1 || !strings.Contains(errOut, "404") && !strings.Contains(errOut, "not found") {
		t.Errorf("agents forget old1 again: exit %d, %s; want 1, not found", code, errOut)
	}
	if code, _, errOut := cliRun(t, env, "agents", "forget"); code != 2 || !strings.Contains(errOut, "want one agent id") {
		t.Errorf("agents forget without an id: exit %d, %s", code, errOut)
	}
}
