package controller

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/protocol"
)

const missingModel = `deployments[1].engine: model: "gone.gguf": not found under the model roots [/models]`

// announceBroken has agent "mixed" offer "good" and announce "bad" as
// broken, and agent "none" announce only broken deployments, as agents
// with such configurations do.
func announceBroken(t *testing.T, c *Controller) {
	t.Helper()
	ev := watchEvents(t, c)
	for id, deps := range map[string][]string{"mixed": {"good"}, "none": nil} {
		a := newFakeAgent(t, c, id)
		h := protocol.AgentHello{
			Schema: protocol.SchemaVersion, Level: protocol.AgentLevel, AgentID: id, Hostname: "host-" + id, Version: "test", StartedAt: time.Now().UTC(),
			Device:            protocol.DeviceFacts{Name: "Jetson Orin NX", Kind: "jetson"},
			BrokenDeployments: []protocol.BrokenDeployment{{ID: "bad", Engine: "llamacpp", Model: "Tiny", Reason: missingModel}},
		}
		if id == "none" {
			h.BrokenDeployments = append(h.BrokenDeployments, protocol.BrokenDeployment{Reason: "deployments[0].id: empty; give each deployment a short unique id"})
		}
		for _, d := range deps {
			h.Deployments = append(h.Deployments, protocol.Deployment{ID: d, Engine: "llamacpp", Model: "Tiny"})
		}
		a.publish(t, protocol.KindHello, h, protocol.HelloMsgID(id, h.StartedAt.UnixNano()))
		ev.waitFor(t, 1, helloStored(h))
	}
}

// The API shows what each agent cannot serve and why, and a sweep that
// needs a broken deployment is refused with the agent's reason.
func TestBrokenDeploymentsInAPIAndSweeps(t *testing.T) {
	c := startController(t, t.TempDir())
	announceBroken(t, c)

	var agents []api.AgentView
	if code := getJSON(t, c.HTTPURL()+"/api/agents", &agents); code != http.StatusOK {
		t.Fatalf("GET /api/agents: %d", code)
	}
	byID := map[string]api.AgentView{}
	for _, a := range agents {
		byID[a.ID] = a
	}
	mixed, none := byID["mixed"], byID["none"]
	if len(mixed.Deployments) != 1 || len(mixed.BrokenDeployments) != 1 || mixed.BrokenDeployments[0].Reason != missingModel {
		t.Errorf("agent mixed: deployments %+v, broken %+v", mixed.Deployments, mixed.BrokenDeployments)
	}
	if !none.Online || len(none.Deployments) != 0 || len(none.BrokenDeployments) != 2 {
		t.Errorf("agent none: online %v, deployments %+v, broken %+v", none.Online, none.Deployments, none.BrokenDeployments)
	}
	// The lists are always there, so that a client need not tell absent from empty.
	_, body := request(t, http.MethodGet, c.HTTPURL()+"/api/agents", "")
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &raw); err != nil {
		t.Fatal(err)
	}
	for _, a := range raw {
		if string(a["broken_deployments"]) == "" || string(a["broken_deployments"]) == "null" {
			t.Errorf("agent %s: broken_deployments %q, want a list", a["id"], a["broken_deployments"])
		}
	}

	w, _ := json.Marshal(testWorkload())
	for name, tc := range map[string]struct{ sweep, want string }{
		"named broken deployment": {`{"agents":["mixed"],"deployments":["bad"],"workload":` + string(w) + `}`,
			`deployments[0]: \"bad\" cannot run: on agent mixed its configuration is wrong: ` + strings.ReplaceAll(missingModel, `"`, `\"`)},
		"agent with nothing to offer": {`{"agents":["none"],"workload":` + string(w) + `}`,
			`the selected agents (none) offer no deployment: on agent none its configuration is wrong: deployments[1].engine`},
	} {
		code, body := postJSON(t, c.HTTPURL()+"/api/sweeps", tc.sweep)
		if code != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Errorf("%s: HTTP %d %s, want 400 saying %s", name, code, body, tc.want)
		}
	}
	// What is valid still runs.
	sw := submit(t, c, protocol.Sweep{Agents: []string{"mixed"}, Workload: testWorkload()})
	if len(sw.Jobs) != 1 {
		t.Errorf("sweep of mixed: %d jobs, want 1 (deployment good)", len(sw.Jobs))
	}
}

// The live page lists the broken deployments with their reasons, and says
// when an agent offers nothing.
func TestLivePageShowsBrokenDeployments(t *testing.T) {
	path := chromium(t)
	c := startController(t, t.TempDir())
	announceBroken(t, c)

	poll, text := openLive(t, path, c.HTTPURL())
	poll(`document.getElementById("conn").textContent === "live"`)
	poll(`document.querySelectorAll("#agents tr").length === 2`)
	agentsText := text("#agents")
	for _, want := range []string{"good", "BROKEN bad", missingModel, "offers no deployment", "(no id)", "deployments[0].id: empty"} {
		if !contains(agentsText, want) {
			t.Errorf("agents table %q lacks %q", agentsText, want)
		}
	}
}
