package controller

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// The sweeps list and /metrics count a sweep's jobs from the store's
// tallies; they say what the sweep itself says from its job records, also
// once a job is stalled.
func TestSweepsListAndMetricsCountAsTheSweepDoes(t *testing.T) {
	c := startControllerWith(t, Options{DataDir: t.TempDir(), HeartbeatTimeout: 1500 * time.Millisecond})
	ev, a := announced(t, c, "a1", "d1", "d2", "d3")
	sw := submit(t, c, protocol.Sweep{Agents: []string{"a1"}, Workload: testWorkload()})
	jobs, sweepID := sw.Jobs, sw.ID
	a.state(t, jobs[0], protocol.JobRunning, 1, true)
	a.state(t, jobs[1], protocol.JobCompleted, 1, true)
	a.state(t, jobs[2], protocol.JobFailed, 1, true)
	ev.waitFor(t, 3, kindIs(api.EventState))
	compare(t, c, sweepID, api.SweepStatus{ID: sweepID, Jobs: 3, Failed: 1,
		States: map[protocol.JobState]int{protocol.JobRunning: 1, protocol.JobCompleted: 1, protocol.JobFailed: 1}})
	scrapeHas(t, c, `vlmfleet_jobs{state="running"} 1`, `vlmfleet_jobs{state="stalled"} 0`,
		fmt.Sprintf(`vlmfleet_sweep_jobs{of="total",sweep=%q} 3`, sweepID), fmt.Sprintf(`vlmfleet_sweep_jobs{of="ended",sweep=%q} 2`, sweepID))

	// The agent falls silent: its running job is stalled.
	ev.waitFor(t, 1, func(e api.Event) bool {
		v, ok := e.Data.(api.AgentView)
		return e.Kind == api.EventAgent && ok && v.ID == "a1" && !v.Online
	})
	compare(t, c, sweepID, api.SweepStatus{ID: sweepID, Jobs: 3, Failed: 1, Stalled: 1,
		States: map[protocol.JobState]int{protocol.JobRunning: 1, protocol.JobCompleted: 1, protocol.JobFailed: 1}})
	scrapeHas(t, c, `vlmfleet_jobs{state="running"} 0`, `vlmfleet_jobs{state="stalled"} 1`, `vlmfleet_jobs{state="completed"} 1`)

	// Its last job ends: the sweep is done and leaves /metrics.
	a.state(t, jobs[0], protocol.JobCompleted, 1, true)
	ev.waitFor(t, 1, stateIs(jobs[0], protocol.JobCompleted))
	compare(t, c, sweepID, api.SweepStatus{ID: sweepID, Jobs: 3, Failed: 1, Done: true,
		States: map[protocol.JobState]int{protocol.JobCompleted: 2, protocol.JobFailed: 1}})
	if body := scrape(t, c); strings.Contains(body, "vlmfleet_sweep_jobs{") {
		t.Errorf("a finished sweep still in /metrics:\n%s", body)
	}
}

// compare checks the sweep's status in the sweeps list against the
// sweep's own (GET /api/sweeps/{id}), and both against want.
func compare(t *testing.T, c *Controller, id string, want api.SweepStatus) {
	t.Helper()
	var list []api.SweepView
	getJSON(t, c.HTTPURL()+"/api/sweeps", &list)
	var one api.SweepView
	getJSON(t, c.HTTPURL()+"/api/sweeps/"+id, &one)
	if len(list) != 1 || !reflect.DeepEqual(list[0].Status, one.Status) {
		t.Fatalf("sweeps list %+v, the sweep's own status %+v", list, one.Status)
	}
	if !reflect.DeepEqual(one.Status, want) {
		t.Fatalf("sweep status %+v, want %+v", one.Status, want)
	}
}

func scrape(t *testing.T, c *Controller) string {
	t.Helper()
	code, body := request(t, "GET", c.HTTPURL()+"/metrics", "")
	if code != 200 {
		t.Fatalf("GET /metrics: %d", code)
	}
	return body
}

// scrapeHas checks that /metrics has each line.
func scrapeHas(t *testing.T, c *Controller, lines ...string) {
	t.Helper()
	body := scrape(t, c)
	for _, l := range lines {
		if !strings.Contains(body, l+"\n") {
			t.Errorf("/metrics lacks %s", l)
		}
	}
}
