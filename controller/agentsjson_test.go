package controller

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/vlmfleet/vlmfleet/controller/api"
)

// GET /api/agents answers what writeJSON writes for the agents' views,
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

// encodedViews is the agents' views as writeJSON encodes them.
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
