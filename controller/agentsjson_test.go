package controller

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// GET /api/agents answers what api.WriteJSON writes for the agents' views,
// byte for byte, and follows each change (a hello, a heartbeat, a drain)
// although it keeps each agent's encoding between requests.
func TestAgentsListAnswersTheViewsAsWriteJSONDoes(t *testing.T) {
	c := startController(t, t.TempDir())
	base := c.HTTPURL()
	if body := agentsBody(t, c); body != "[]\n" {
		t.Fatalf("no agent yet: %q, want []", body)
	}
	ev, a1 := announced(t, c, "a1", "d1")
	announced(t, c, "a2", "d1", "d2")
	first := agentsBody(t, c)
	want := encodedViews(t, c)
	if first != want {
		t.Fatalf("agents list:\n%s\nwant:\n%s", first, want)
	}
	if again := agentsBody(t, c); again != first {
		t.Fatalf("asked again with nothing changed:\n%s\nwant:\n%s", again, first)
	}

	a1.heartbeat(t, "job-1")
	ev.waitFor(t, 1, kindIs(api.EventHeartbeat))
	busy := agentsBody(t, c)
	if busy == first || busy != encodedViews(t, c) {
		t.Fatalf("after a1's heartbeat (busy with job-1):\n%s\nwant:\n%s", busy, encodedViews(t, c))
	}
	if code, body := postJSON(t, base+"/api/agents/a2/drain", ""); code != http.StatusOK {
		t.Fatalf("drain a2: %d %s", code, body)
	}
	drained := agentsBody(t, c)
	if drained == busy || drained != encodedViews(t, c) {
		t.Fatalf("after a2's drain:\n%s\nwant:\n%s", drained, encodedViews(t, c))
	}
}

// agentsBody GETs /api/agents and returns its body.
func agentsBody(t *testing.T, c *Controller) string {
	t.Helper()
	code, body := request(t, http.MethodGet, c.HTTPURL()+"/api/agents", "")
	if code != http.StatusOK {
		t.Fatalf("GET /api/agents: %d %s", code, body)
	}
	return body
}

// encodedViews is the agents' views as api.WriteJSON encodes them.
func encodedViews(t *testing.T, c *Controller) string {
	t.Helper()
	views, err := c.Agents(waitCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(views); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// sameValue says "same" only for views that encode the same: any field
// that differs, a slice or map not shared, -0 against 0, a time in
// another zone all count as a change.
func TestSameValueCountsEveryChange(t *testing.T) {
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	base := api.AgentView{ID: "a1", LastSeen: at, Labels: map[string]string{"rack": "1"},
		Deployments: []protocol.Deployment{{ID: "d1"}}, PowerLimitW: 0}
	same := func(a, b api.AgentView) bool {
		return sameValue(reflect.ValueOf(&a).Elem(), reflect.ValueOf(&b).Elem())
	}
	if !same(base, base) {
		t.Fatal("a view is not the same as itself")
	}
	for name, change := range map[string]func(v *api.AgentView){
		"state":            func(v *api.AgentView) { v.State = protocol.AgentBusy },
		"last seen":        func(v *api.AgentView) { v.LastSeen = at.Add(time.Millisecond) },
		"time zone":        func(v *api.AgentView) { v.LastSeen = at.In(time.FixedZone("X", 3600)) },
		"labels, copied":   func(v *api.AgentView) { v.Labels = map[string]string{"rack": "1"} },
		"deployments":      func(v *api.AgentView) { v.Deployments = slices.Clone(v.Deployments) },
		"negative zero":    func(v *api.AgentView) { v.PowerLimitW = math.Copysign(0, -1) },
		"power, added":     func(v *api.AgentView) { v.Power = &protocol.PowerControl{} },
		"drain confirmed":  func(v *api.AgentView) { v.DrainConfirmed = true },
		"device, its name": func(v *api.AgentView) { v.Device.Name = "Jetson Orin Nano" },
	} {
		v := base
		change(&v)
		if same(base, v) {
			t.Errorf("%s changed: counted the same", name)
		}
	}
}
