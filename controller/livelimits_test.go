package controller

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/live"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// live publishes v (JSON, or the bytes as they are) on the agent's live
// subject of kind, as a hostile agent with its own credentials can, and
// flushes, so that what it publishes next is handled after it.
func (a *fakeAgent) live(t *testing.T, kind string, v any) {
	t.Helper()
	data, ok := v.([]byte)
	if !ok {
		var err error
		if data, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.nc.Publish(protocol.AgentSubject(a.id, kind), data); err != nil {
		t.Fatal(err)
	}
	if err := a.nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

// progressOf is a measuring progress message of agent on job for combo.
func progressOf(agent, job string, combo protocol.ComboKey, done int) protocol.Progress {
	return protocol.Progress{Schema: protocol.SchemaVersion, AgentID: agent, JobID: job, RunID: job + "-a1", Time: time.Now().UTC(),
		Phase: protocol.PhaseMeasure, Combo: combo, ComboN: 4, Done: done, Total: 8}
}

// progressFrom matches the progress event of agent on job with done requests.
func progressFrom(agent, job string, done int) func(api.Event) bool {
	return func(e api.Event) bool {
		p, ok := e.Data.(protocol.Progress)
		return e.Kind == api.EventProgress && ok && p.AgentID == agent && p.JobID == job && p.Done == done
	}
}

// refusalCount is vlmfleet_agent_refusals_total of kind, as /metrics says.
func refusalCount(t *testing.T, c *Controller, kind string) float64 {
	t.Helper()
	_, body := request(t, http.MethodGet, c.HTTPURL()+"/metrics", "")
	return metricValue(t, body, `vlmfleet_agent_refusals_total{kind="`+kind+`"}`)
}

// liveSnapshot reads /api/live and its size in bytes.
func liveSnapshot(t *testing.T, c *Controller) (api.LiveSnapshot, int) {
	t.Helper()
	code, body := request(t, http.MethodGet, c.HTTPURL()+"/api/live", "")
	if code != http.StatusOK {
		t.Fatalf("GET /api/live: %d %.200s", code, body)
	}
	var snap api.LiveSnapshot
	if err := json.Unmarshal([]byte(body), &snap); err != nil {
		t.Fatal(err)
	}
	return snap, len(body)
}

// jobsOf submits a sweep for agents and returns each agent's jobs.
func jobsOf(t *testing.T, c *Controller, agents ...string) map[string][]string {
	t.Helper()
	sw := submit(t, c, protocol.Sweep{Agents: agents, Workload: testWorkload()})
	out := map[string][]string{}
	for _, id := range sw.Jobs {
		j, err := c.store.Job(id)
		if err != nil {
			t.Fatal(err)
		}
		out[j.Job.AgentID] = append(out[j.Job.AgentID], id)
	}
	return out
}

// An agent's progress is taken only for a job the controller gave that
// agent: one naming another agent's job, or a job nobody made, is refused,
// counted and never served.
func TestProgressOnlyForTheSendersOwnJob(t *testing.T) {
	c := startController(t, t.TempDir())
	ev, a1 := announced(t, c, "a1", "d1")
	a2 := newFakeAgent(t, c, "a2")
	ev.waitFor(t, 1, helloStored(a2.hello(t, "d1")))
	jobs := jobsOf(t, c, "a1", "a2")
	combo := testWorkload().Plan()[0].ComboKey

	a1.live(t, protocol.KindProgress, progressOf("a1", jobs["a2"][0], combo, 5))
	a1.live(t, protocol.KindProgress, progressOf("a1", "made-up-job", combo, 6))
	a1.live(t, protocol.KindProgress, progressOf("a1", jobs["a1"][0], combo, 1))
	ev.waitFor(t, 1, progressFrom("a1", jobs["a1"][0], 1))

	if got := ev.waitFor(t, 0, kindIs(api.EventProgress)); len(got) != 1 {
		t.Errorf("%d progress events, want only a1's own job's: %+v", len(got), got)
	}
	snap, _ := liveSnapshot(t, c)
	if len(snap.Progress) != 1 || snap.Progress[0].JobID != jobs["a1"][0] {
		t.Errorf("/api/live progress %+v, want only a1's own job %s", snap.Progress, jobs["a1"][0])
	}
	if n := refusalCount(t, c, RefusalProgress); n != 2 {
		t.Errorf("progress refusals %v, want 2", n)
	}
}

// A search's levels are not in the plan, but its progress is taken for
// any level the search may measure, and only the level being searched is
// kept: earlier ones are results by then.
func TestProgressOfSearchedLevels(t *testing.T) {
	c := startController(t, t.TempDir())
	ev, a := announced(t, c, "a1", "d1")
	w := testWorkload()
	w.Search = 16
	sw := submit(t, c, protocol.Sweep{Agents: []string{"a1"}, Workload: w})
	job := sw.Jobs[0]
	ladder := w.Plan()[0].ComboKey
	probe := func(cams int) protocol.ComboKey {
		return protocol.ComboKey{Size: ladder.Size, Images: 1, Cameras: cams, Load: protocol.LoadSustained}
	}

	a.live(t, protocol.KindProgress, progressOf("a1", job, ladder, 1))
	a.live(t, protocol.KindProgress, progressOf("a1", job, probe(4), 2))
	a.live(t, protocol.KindProgress, progressOf("a1", job, probe(17), 3)) // past the ceiling
	a.live(t, protocol.KindProgress, progressOf("a1", job, probe(3), 4))
	ev.waitFor(t, 1, progressFrom("a1", job, 4))

	snap, _ := liveSnapshot(t, c)
	var got []string
	for _, p := range snap.Progress {
		got = append(got, p.Combo.String())
	}
	slices.Sort(got)
	if want := []string{ladder.String(), probe(3).String()}; !slices.Equal(got, want) {
		t.Errorf("/api/live progress %v, want the ladder's and the level being searched %v", got, want)
	}
	if n := refusalCount(t, c, RefusalProgress); n != 1 {
		t.Errorf("progress refusals %v, want 1 (the level past the ceiling)", n)
	}
}

// Progress of a job that has ended is refused: it would stay on the live
// page for ever, as nothing ends the job again.
func TestProgressOfAnEndedJobIsRefused(t *testing.T) {
	c := startController(t, t.TempDir())
	ev, a := announced(t, c, "a1", "d1", "d2")
	jobs := jobsOf(t, c, "a1")["a1"]
	combo := testWorkload().Plan()[0].ComboKey
	a.live(t, protocol.KindProgress, progressOf("a1", jobs[0], combo, 1))
	ev.waitFor(t, 1, progressFrom("a1", jobs[0], 1))
	a.state(t, jobs[0], protocol.JobAccepted, 1, true)
	a.state(t, jobs[0], protocol.JobCompleted, 1, true)
	ev.waitFor(t, 1, stateIs(jobs[0], protocol.JobCompleted))

	a.live(t, protocol.KindProgress, progressOf("a1", jobs[0], combo, 2))
	a.live(t, protocol.KindProgress, progressOf("a1", jobs[1], combo, 3))
	ev.waitFor(t, 1, progressFrom("a1", jobs[1], 3))
	snap, _ := liveSnapshot(t, c)
	if len(snap.Progress) != 1 || snap.Progress[0].JobID != jobs[1] {
		t.Errorf("/api/live progress %+v, want only the open job %s", snap.Progress, jobs[1])
	}
	if n := refusalCount(t, c, RefusalProgress); n != 1 {
		t.Errorf("progress refusals %v, want 1", n)
	}
}

// A hostile agent's attack: live messages of about 1 MB each, progress
// with made-up job ids and combinations and telemetry with thousands of
// fields. Each is refused; /api/live stays the size of what real agents
// send, and the agent's real progress still shows.
func TestOversizedLiveMessagesAreRefused(t *testing.T) {
	c := startController(t, t.TempDir())
	ev, a := announced(t, c, "a1", "d1")
	job := jobsOf(t, c, "a1")["a1"][0]
	combo := testWorkload().Plan()[0].ComboKey
	a.heartbeat(t, job)
	big := strings.Repeat("x", 1_000_000)
	for i := range 10 {
		p := progressOf("a1", fmt.Sprintf("made-up-%d", i), combo, 1)
		p.Message = big
		a.live(t, protocol.KindProgress, p)
		p.JobID = job
		a.live(t, protocol.KindProgress, p)
		a.live(t, protocol.KindTelemetry, []byte(`{"schema":1,"agent_id":"a1","job_id":"`+job+`","sample":{"t":"2026-01-01T00:00:00Z","extra":{"x":1}},"pad":"`+big+`"}`))
	}
	for i := range 300 {
		a.live(t, protocol.KindProgress, progressOf("a1", job, protocol.ComboKey{Size: fmt.Sprintf("made-up-%d", i), Images: 1, Cameras: 1}, 1))
	}
	extra := map[string]float64{}
	for i := range 5000 {
		extra[fmt.Sprintf("field_%d", i)] = float64(i)
	}
	a.live(t, protocol.KindTelemetry, protocol.TelemetryTick{Schema: 1, AgentID: "a1", JobID: job, Sample: protocol.TelemetrySample{Time: time.Now().UTC(), Extra: extra}})
	a.live(t, protocol.KindProgress, progressOf("a1", job, combo, 7))
	ev.waitFor(t, 1, progressFrom("a1", job, 7))
	// Telemetry is taken on a subscription of its own, which may not have
	// read its last message when the last progress shows: wait for its
	// refusals before reading what it kept.
	eventually(t, "the 11 telemetry refusals counted", func() bool { return refusalCount(t, c, RefusalTelemetry) >= 11 })

	snap, size := liveSnapshot(t, c)
	if size > 64<<10 {
		t.Errorf("/api/live is %d bytes after the attack, want under 64 KiB", size)
	}
	if len(snap.Progress) != 1 || snap.Progress[0].Done != 7 {
		t.Errorf("/api/live progress: %d entries, want the one real one", len(snap.Progress))
	}
	if n := len(snap.Telemetry["a1"]); n != 0 {
		t.Errorf("%d telemetry samples kept, want none", n)
	}
	if n := refusalCount(t, c, RefusalProgress); n != 320 {
		t.Errorf("progress refusals %v, want 320", n)
	}
	if n := refusalCount(t, c, RefusalTelemetry); n != 11 {
		t.Errorf("telemetry refusals %v, want 11", n)
	}
}

// An agent's live progress covers a few of its jobs at most: an agent
// runs one job at a time, so an agent naming many of its queued jobs
// keeps only the latest few on the live page.
func TestProgressJobsPerAgentAreBounded(t *testing.T) {
	c := startController(t, t.TempDir())
	deployments := []string{"d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8"}
	ev, a := announced(t, c, "a1", deployments...)
	jobs := jobsOf(t, c, "a1")["a1"]
	if len(jobs) != len(deployments) {
		t.Fatalf("%d jobs, want %d", len(jobs), len(deployments))
	}
	for i, job := range jobs {
		for _, pc := range testWorkload().Plan() {
			a.live(t, protocol.KindProgress, progressOf("a1", job, pc.ComboKey, i+1))
		}
	}
	last := jobs[len(jobs)-1]
	ev.waitFor(t, len(testWorkload().Plan()), progressFrom("a1", last, len(jobs)))
	snap, _ := liveSnapshot(t, c)
	kept := map[string]int{}
	for _, p := range snap.Progress {
		kept[p.JobID]++
	}
	if len(kept) != live.MaxLiveJobsPerAgent || kept[last] != len(testWorkload().Plan()) {
		t.Errorf("live progress of %d jobs %v, want the latest %d, each with all its combinations", len(kept), kept, live.MaxLiveJobsPerAgent)
	}
}
