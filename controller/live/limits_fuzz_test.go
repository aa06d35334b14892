package live

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// liveFuzzFeed is a feed whose store holds open jobs of a1 (j1, j2) and a2
// (j3) and an ended job of a1 (j4), and the refusals it counted by kind.
func liveFuzzFeed(f *testing.F) (*Feed, map[string]store.JobRecord, map[string]int) {
	jobs := map[string]store.JobRecord{}
	for _, j := range []struct {
		id, agent string
		state     protocol.JobState
	}{{"j1", "a1", protocol.JobRunning}, {"j2", "a1", protocol.JobQueued}, {"j3", "a2", protocol.JobQueued}, {"j4", "a1", protocol.JobCompleted}} {
		rec := store.JobRecord{Job: protocol.Job{Schema: 1, ID: j.id, AgentID: j.agent, Deployment: "d1", Workload: testWorkload(), CreatedAt: time.Now().UTC()}, State: j.state}
		jobs[j.id] = rec
	}
	refused := map[string]int{}
	refuse := func(_, kind, _ string) { refused[kind]++ }
	done := make(chan struct{})
	f.Cleanup(func() { close(done) })
	return NewFeed(NewState(), NewFanout(), jobReader(jobs), refuse, zerolog.Nop(), done), jobs, refused
}

// jobReader is a store of the jobs it maps.
type jobReader map[string]store.JobRecord

func (r jobReader) Job(id string) (store.JobRecord, error) {
	if j, ok := r[id]; ok {
		return j, nil
	}
	return store.JobRecord{}, store.ErrNotFound
}

// testWorkload is a small plan: two sizes, one and two cameras.
func testWorkload() protocol.Workload {
	w := protocol.DefaultWorkload()
	w.Sizes = []string{"480p", "720p"}
	w.Cameras = []int{1, 2}
	w.RequestsPerLevel = 2
	w.MultiImageSizes, w.ImagesPerRequest, w.MultiImageRequests = nil, nil, 0
	return w
}

// progressOf is a measuring progress message of agent on job for combo.
func progressOf(agent, job string, combo protocol.ComboKey, done int) protocol.Progress {
	return protocol.Progress{Schema: protocol.SchemaVersion, AgentID: agent, JobID: job, RunID: job + "-a1", Time: time.Now().UTC(),
		Phase: protocol.PhaseMeasure, Combo: combo, ComboN: 4, Done: done, Total: 8}
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
	c, jobs, refusals := liveFuzzFeed(f)
	combo := testWorkload().Plan()[0].ComboKey
	liveSeeds(f,
		progressOf("a1", "j1", combo, 1), progressOf("a1", "j3", combo, 1), progressOf("a1", "j4", combo, 1),
		progressOf("a1", "j2", protocol.ComboKey{}, 1), progressOf("a1", "j1", protocol.ComboKey{Size: "8K", Images: 1, Cameras: 1}, 1),
		protocol.Progress{Schema: 1, AgentID: "a1", JobID: "j1", Phase: protocol.PhaseDone, Message: strings.Repeat("é", 9000)})
	handle := c.ProgressHandler()
	f.Fuzz(func(t *testing.T, agent string, data []byte) {
		before := refusals[RefusalProgress]
		handle(&nats.Msg{Subject: protocol.AgentSubject(agent, protocol.KindProgress), Data: data})
		if refusals[RefusalProgress] == before {
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
func checkLiveProgress(t *testing.T, c *Feed, jobs map[string]store.JobRecord) {
	t.Helper()
	prog, _ := c.live.Snapshot()
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
		if len(js) > MaxLiveJobsPerAgent {
			t.Fatalf("agent %s: progress of %d jobs kept", a, len(js))
		}
	}
}

// Whatever an agent sends as telemetry, the controller keeps at most
// telemetryRing samples of it, each within the size and field bounds, and
// counts every sample it does not keep as refused.
func FuzzTelemetryMessage(f *testing.F) {
	c, _, refusals := liveFuzzFeed(f)
	x := 1.5
	liveSeeds(f,
		protocol.TelemetryTick{Schema: 1, AgentID: "a1", JobID: "j1", Sample: protocol.TelemetrySample{Time: time.Now().UTC(), GPUUtil: &x, Extra: map[string]float64{"gpu0_util": 3}, Rails: map[string]float64{"VDD_IN": 4}, Throttle: []string{"hw_slowdown"}}},
		protocol.TelemetryTick{Schema: 1, AgentID: "a1", JobID: "not an id"})
	handle := c.TelemetryHandler()
	f.Fuzz(func(t *testing.T, agent string, data []byte) {
		before := refusals[RefusalTelemetry]
		handle(&nats.Msg{Subject: protocol.AgentSubject(agent, protocol.KindTelemetry), Data: data})
		if refusals[RefusalTelemetry] == before {
			var tick protocol.TelemetryTick
			if err := json.Unmarshal(data, &tick); err != nil || len(data) > maxTelemetryBytes || tick.AgentID != agent {
				t.Fatalf("kept a sample of %q from agent %q (%d bytes): %v", tick.AgentID, agent, len(data), err)
			}
		}
		_, tel := c.live.Snapshot()
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
