package controller

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// liveFuzzController is a controller that is not started, whose store
// holds open jobs of a1 (j1, j2) and a2 (j3) and an ended job of a1 (j4):
// enough for the live handlers, which read the store and the live state
// only.
func liveFuzzController(f *testing.F) (*Controller, map[string]store.JobRecord) {
	c, err := New(Options{DataDir: f.TempDir(), Log: zerolog.Nop()})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = c.Close() })
	jobs := map[string]store.JobRecord{}
	for _, j := range []struct {
		id, agent string
		state     protocol.JobState
	}{{"j1", "a1", protocol.JobRunning}, {"j2", "a1", protocol.JobQueued}, {"j3", "a2", protocol.JobQueued}, {"j4", "a1", protocol.JobCompleted}} {
		rec := store.JobRecord{Job: protocol.Job{Schema: 1, ID: j.id, AgentID: j.agent, Deployment: "d1", Workload: testWorkload(), CreatedAt: time.Now().UTC()}, State: j.state}
		if err := c.store.PutJob(rec); err != nil {
			f.Fatal(err)
		}
		jobs[j.id] = rec
	}
	return c, jobs
}

// refusalsOf returns a reader of vlmfleet_agent_refusals_total of kind
// (a registry of its own: gathering c's would read the store each time).
func refusalsOf(f *testing.F, c *Controller, kind string) func(t *testing.T) float64 {
	reg := prometheus.NewRegistry()
	if err := reg.Register(c.metrics.refusals.counter); err != nil {
		f.Fatal(err)
	}
	return func(t *testing.T) float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				if l := m.GetLabel(); len(l) == 1 && l[0].GetValue() == kind {
					return m.GetCounter().GetValue()
				}
			}
		}
		t.Fatalf("no refusals of kind %s", kind)
		return 0
	}
}

// liveSeeds are messages of each kind that the handlers take, and near misses.
func liveSeeds(f *testing.F, valid ...any) {
	for _, v := range valid {
		data, err := json.Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add("a1", data)
		f.Add("a2", data)
		f.Add("a1.x", data)
		f.Add("a1", append(data[:len(data)-1:len(data)-1], `,"pad":"`+strings.Repeat("x", 70<<10)+`"}`...))
	}
	f.Add("a1", []byte(`{"schema":1,"agent_id":"a1"`))
	f.Add("", []byte(`null`))
	f.Add("a1", []byte(`{"schema":1,"agent_id":"a1","job_id":"j1","phase":"measure","combo":{"size":"480p","images":1,"cameras":1},"message":"\u00e9\u00e9"}`))
}

// Whatever an agent sends as progress, the controller keeps only its own
// open jobs' progress, for their plans' combinations, within the per-agent
// bounds; and every message it does not keep is counted as refused.
func FuzzProgressMessage(f *testing.F) {
	c, jobs := liveFuzzController(f)
	combo := testWorkload().Plan()[0].ComboKey
	liveSeeds(f,
		progressOf("a1", "j1", combo, 1), progressOf("a1", "j3", combo, 1), progressOf("a1", "j4", combo, 1),
		progressOf("a1", "j2", protocol.ComboKey{}, 1), progressOf("a1", "j1", protocol.ComboKey{Size: "8K", Images: 1, Cameras: 1}, 1),
		protocol.Progress{Schema: 1, AgentID: "a1", JobID: "j1", Phase: protocol.PhaseDone, Message: strings.Repeat("é", 9000)})
	handle := c.progressHandler()
	refused := refusalsOf(f, c, RefusalProgress)
	f.Fuzz(func(t *testing.T, agent string, data []byte) {
		before := refused(t)
		handle(&nats.Msg{Subject: protocol.AgentSubject(agent, protocol.KindProgress), Data: data})
		if refused(t) == before {
			var p protocol.Progress
			if err := json.Unmarshal(data, &p); err != nil || len(data) > maxProgressBytes || p.AgentID != agent || jobs[p.JobID].Job.AgentID != agent {
				t.Fatalf("kept progress of %q from agent %q (%d bytes): %v", p.JobID, agent, len(data), err)
			}
		}
		checkLiveProgress(t, c, jobs)
	})
}

// checkLiveProgress fails t when the live progress holds anything but its
// agents' own open jobs within the bounds.
func checkLiveProgress(t *testing.T, c *Controller, jobs map[string]store.JobRecord) {
	t.Helper()
	prog, _ := c.live.snapshot()
	perJob := map[string]int{}
	perAgent := map[string]map[string]bool{}
	for _, p := range prog {
		rec, ok := jobs[p.JobID]
		if !ok || rec.State.Terminal() || rec.Job.AgentID != p.AgentID {
			t.Fatalf("live progress of job %q from %q", p.JobID, p.AgentID)
		}
		if len(p.Message) > maxProgressMessage {
			t.Fatalf("a progress message of %d bytes kept", len(p.Message))
		}
		perJob[p.JobID]++
		if perAgent[p.AgentID] == nil {
			perAgent[p.AgentID] = map[string]bool{}
		}
		perAgent[p.AgentID][p.JobID] = true
	}
	for id, n := range perJob {
		if n > len(jobs[id].Job.Workload.Plan())+1 {
			t.Fatalf("job %s: %d combinations kept", id, n)
		}
	}
	for a, js := range perAgent {
		if len(js) > maxLiveJobsPerAgent {
			t.Fatalf("agent %s: progress of %d jobs kept", a, len(js))
		}
	}
}

// Whatever an agent sends as telemetry, the controller keeps at most
// telemetryRing samples of it, each within the size and field bounds, and
// counts every sample it does not keep as refused.
func FuzzTelemetryMessage(f *testing.F) {
	c, _ := liveFuzzController(f)
	x := 1.5
	liveSeeds(f,
		protocol.TelemetryTick{Schema: 1, AgentID: "a1", JobID: "j1", Sample: protocol.TelemetrySample{Time: time.Now().UTC(), GPUUtil: &x, Extra: map[string]float64{"gpu0_util": 3}, Rails: map[string]float64{"VDD_IN": 4}, Throttle: []string{"hw_slowdown"}}},
		protocol.TelemetryTick{Schema: 1, AgentID: "a1", JobID: "not an id"})
	handle := c.telemetryHandler()
	refused := refusalsOf(f, c, RefusalTelemetry)
	f.Fuzz(func(t *testing.T, agent string, data []byte) {
		before := refused(t)
		handle(&nats.Msg{Subject: protocol.AgentSubject(agent, protocol.KindTelemetry), Data: data})
		if refused(t) == before {
			var tick protocol.TelemetryTick
			if err := json.Unmarshal(data, &tick); err != nil || len(data) > maxTelemetryBytes || tick.AgentID != agent {
				t.Fatalf("kept a sample of %q from agent %q (%d bytes): %v", tick.AgentID, agent, len(data), err)
			}
		}
		_, tel := c.live.snapshot()
		for a, ring := range tel {
			if len(ring) > telemetryRing {
				t.Fatalf("agent %s: %d samples kept", a, len(ring))
			}
			for _, s := range ring {
				if n := len(s.Sample.Extra) + len(s.Sample.Rails); n > maxTelemetryFields || len(s.Sample.Throttle) > maxTelemetryThrottle {
					t.Fatalf("agent %s: a sample of %d fields and %d throttle reasons kept", a, n, len(s.Sample.Throttle))
				}
			}
		}
	})
}
