package controller

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// An agent of the release before agent levels (its hello has none, as
// that release's did) is one this controller cannot serve: the agents
// list and /api/health say it needs an upgrade, with the release it runs
// and the one it needs, and a sweep that names it is refused with that
// reason rather than queued for an agent that never takes a job; a sweep
// over every online agent passes it over, saying why.
func TestAgentOfAnOlderReleaseNeedsAnUpgrade(t *testing.T) {
	c := startControllerWith(t, Options{DataDir: t.TempDir(), Version: "0.6.0", HeartbeatTimeout: 10 * time.Minute})
	helloWith(t, c, "old1", func(h *protocol.AgentHello) { h.Level, h.Version = 0, "0.5.2" }, "d1")
	helloLabelled(t, c, "new1", nil, "d1")

	v := agentByID(t, c, "old1")
	if u := v.Upgrade; u == nil || u.Version != "0.5.2" || u.Level != 1 || u.NeedsLevel != protocol.MinAgentLevel || u.NeedsVersion != "0.6.0" ||
		!strings.Contains(u.Reason, "upgrade the agent to vlmfleet 0.6.0") {
		t.Errorf("old1's upgrade: %+v, want runs 0.5.2 at level 1, needs level %d and 0.6.0", u, protocol.MinAgentLevel)
	}
	if u := agentByID(t, c, "new1").Upgrade; u != nil {
		t.Errorf("new1 (this release) needs an upgrade: %+v", u)
	}

	code, h := getHealth(t, c)
	if code != http.StatusOK || h["status"] != api.HealthOK || !slices.Equal(toStrings(h["agents_need_upgrade"]), []string{"old1"}) ||
		!problemsNameIn(h["fleet"], ProblemAgentUpgrade) {
		t.Errorf("health: %d %v, want 200 ok naming old1 under agents_need_upgrade and fleet", code, h)
	}

	_, err := c.SubmitSweep(waitCtx(t), protocol.Sweep{Agents: []string{"new1", "old1"}, Workload: testWorkload()})
	var bad *api.BadSweepError
	if !errors.As(err, &bad) || !strings.HasPrefix(err.Error(), `agents[1]: agent "old1" needs an upgrade: it runs vlmfleet 0.5.2 (agent level 1)`) {
		t.Errorf("a sweep naming old1: %v, want it refused, naming the upgrade", err)
	}
	sw := submit(t, c, protocol.Sweep{Workload: testWorkload()})
	if len(sw.Jobs) != 1 || len(sw.Skipped) != 1 || sw.Skipped[0].AgentID != "old1" || !strings.HasPrefix(sw.Skipped[0].Reason, "needs an upgrade") {
		t.Errorf("a sweep over every online agent: jobs %v, skipped %+v; want new1's job, old1 skipped for its upgrade", sw.Jobs, sw.Skipped)
	}
}

func toStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// problemsNameIn says whether a health list (problems or fleet) has a
// problem of component.
func problemsNameIn(list any, component string) bool {
	return problemsName(map[string]any{"problems": list}, component)
}
