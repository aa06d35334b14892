package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/jobs"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/harness/ingestload"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// TestMeasureFleetScale measures, in this process, the three figures of a
// large fleet that one person runs (docs/scaling.md): N agents enrolling at
// once (the total time until every enrolment call has returned), GET
// /api/agents?limit=1000 p50/p99 while the controller stores the results
// of a sweep over those N agents and takes their heartbeats, and /metrics
// with 10,000 jobs in the store. Run it with
//
//	VLMFLEET_MEASURE=1 go test -count=1 -v -timeout 30m -run TestMeasureFleetScale ./controller/
//
// N is 200 unless VLMFLEET_MEASURE_AGENTS says (1000 for the full scale);
// VLMFLEET_MEASURE_INGEST sets the result messages published during the
// agents-list timing (25 per agent unless set);
// VLMFLEET_MEASURE_PROFILES=DIR saves a CPU profile of that timing.
func TestMeasureFleetScale(t *testing.T) {
	if os.Getenv("VLMFLEET_MEASURE") == "" {
		t.Skip("a measurement for docs/benchmarks.md; set VLMFLEET_MEASURE=1 to run it")
	}
	n := measureEnv(t, "VLMFLEET_MEASURE_AGENTS", 200)
	msgs := measureEnv(t, "VLMFLEET_MEASURE_INGEST", 25*n)
	m := &ingestMeter{t: t, dir: t.TempDir()}
	m.start()
	c := m.c

	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("orin-%04d", i)
	}
	reloads, _ := c.identity.ReloadCounts()
	enrol := measureEnrolments(t, c, ids)
	t.Logf("fleet scale: %d enrolments at once: all returned in %s (%.1f ms each on average; %d reloads of the server's users)",
		n, enrol.Round(time.Millisecond), float64(enrol.Microseconds())/1000/float64(n), reloadsSince(c, reloads))

	runs := announceAndRun(t, c, ids)
	batch, err := ingestload.Build(runs, msgs, 0, ingestload.Shape{})
	if err != nil {
		t.Fatal(err)
	}
	ds, stored := timeAgentsDuringIngest(t, m, ids, batch)
	t.Logf("fleet scale: GET /api/agents?limit=1000 with %d agents during the ingest of %d results (%s): p50 %s p99 %s max %s (n=%d)",
		n, msgs, stored.Round(time.Millisecond), pct(ds, 50), pct(ds, 99), pct(ds, 100), len(ds))

	jobs := fillJobs(t, c, 10000)
	var scrapes []time.Duration
	for range 21 {
		t0 := time.Now()
		if code, _ := fetchSized(t, c, "/metrics"); code != http.StatusOK {
			t.Fatalf("GET /metrics: %d", code)
		}
		scrapes = append(scrapes, time.Since(t0))
	}
	t.Logf("fleet scale: /metrics with %d jobs and %d agents: median %s p99 %s (n=%d)",
		jobs, n, pct(scrapes, 50), pct(scrapes, 99), len(scrapes))
}

// measureEnv reads a positive count from the environment, def when unset.
func measureEnv(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// pct is the p-th percentile of ds (sorted in place).
func pct(ds []time.Duration, p int) time.Duration {
	slices.Sort(ds)
	return ds[min(len(ds)-1, len(ds)*p/100)].Round(time.Millisecond / 10)
}

// measureEnrolments enrols every id at once, as many devices set up at
// the same time do, and returns how long until the last call returned.
func measureEnrolments(t *testing.T, c *Controller, ids []string) time.Duration {
	t.Helper()
	ctx := waitCtx(t)
	errs := make(chan error, len(ids))
	start := time.Now()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.EnrolAgent(ctx, id)
			errs <- err
		}()
	}
	wg.Wait()
	took := time.Since(start)
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return took
}

// announceAndRun publishes a hello for each agent (as the controller's own
// user: the subject names the agent), submits a sweep over them all, has
// each report attempt 1 of its job running, and returns the runs.
func announceAndRun(t *testing.T, c *Controller, ids []string) []protocol.Run {
	t.Helper()
	_, js := adminConn(t, c)
	ev := watchEvents(t, c)
	var hellos []protocol.AgentHello
	for _, id := range ids {
		h := protocol.AgentHello{Schema: protocol.SchemaVersion, Level: protocol.AgentLevel, AgentID: id, Hostname: "host-" + id, Version: "measure",
			StartedAt: time.Now().UTC(), Simulated: true, Labels: map[string]string{"rack": id[len(id)-1:]},
			Device:      protocol.DeviceFacts{Name: "Jetson AGX Orin", Kind: protocol.DeviceSimulated},
			Deployments: []protocol.Deployment{{ID: "d1", Engine: "vllm", Model: "Qwen/Qwen2.5-VL-3B-Instruct", ParamsB: 3, Quantization: "bf16"}}}
		publishJSON(t, js, protocol.AgentSubject(id, protocol.KindHello), h)
		hellos = append(hellos, h)
	}
	for _, h := range hellos {
		ev.waitFor(t, 1, helloStored(h))
	}
	sw := submit(t, c, protocol.Sweep{Agents: ids, Workload: testWorkload()})
	var runs []protocol.Run
	for _, jobID := range sw.Jobs {
		j, err := c.Job(waitCtx(t), jobID)
		if err != nil {
			t.Fatal(err)
		}
		publishJSON(t, js, protocol.AgentSubject(j.AgentID, protocol.KindState), protocol.JobStateChange{
			Schema: protocol.SchemaVersion, JobID: jobID, AgentID: j.AgentID, State: protocol.JobRunning, Attempt: 1,
			RunID: store.RunIDFor(jobID, 1), Time: time.Now().UTC()})
		runs = append(runs, ingestload.Header(store.RunIDFor(jobID, 1), jobID, sw.ID, j.AgentID, time.Now().UTC()))
	}
	ev.waitFor(t, len(sw.Jobs), kindIs(api.EventState))
	return runs
}

func publishJSON(t *testing.T, js jetstream.JetStream, subject string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(waitCtx(t), subject, data); err != nil {
		t.Fatalf("publish %s: %v", subject, err)
	}
}

// timeAgentsDuringIngest publishes batch into the events stream and a
// heartbeat a second from every agent, and times GET
// /api/agents?limit=1000 back to back until every result is stored. It
// returns the timings and how long the ingest took.
func timeAgentsDuringIngest(t *testing.T, m *ingestMeter, ids []string, batch []ingestload.Message) ([]time.Duration, time.Duration) {
	t.Helper()
	c := m.c
	nc, js := adminConn(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	want := m.stored.Load() + int64(len(batch))
	beats := make(chan struct{})
	go func() {
		defer close(beats)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for seq := uint64(1); ; seq++ {
			for _, id := range ids {
				hb := protocol.Heartbeat{Schema: protocol.SchemaVersion, AgentID: id, Time: time.Now().UTC(), State: protocol.AgentBusy, Seq: seq}
				data, _ := json.Marshal(hb)
				_ = nc.Publish(protocol.AgentSubject(id, protocol.KindHeartbeat), data)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	published := make(chan error, 1)
	stop := cpuProfile(t, "fleet-agents-during-ingest.pprof")
	defer stop()
	began := time.Now()
	go func() {
		_, err := ingestload.Publish(ctx, js, batch)
		published <- err
	}()
	var ds []time.Duration
	for m.stored.Load() < want {
		t0 := time.Now()
		code, _ := fetchSized(t, c, "/api/agents?limit=1000")
		ds = append(ds, time.Since(t0))
		if code != http.StatusOK {
			t.Fatalf("GET /api/agents: %d", code)
		}
		if ctx.Err() != nil {
			t.Fatalf("%d of %d results stored", m.stored.Load(), want)
		}
	}
	took := time.Since(began)
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	cancel()
	<-beats
	return ds, took
}

// fillJobs stores finished sweeps of 20 jobs each through the store until
// it holds total jobs, and returns how many it holds.
func fillJobs(t *testing.T, c *Controller, total int) int {
	t.Helper()
	have, err := c.store.Jobs(waitCtx(t), store.JobQuery{})
	if err != nil {
		t.Fatal(err)
	}
	n := len(have)
	base := time.Now().UTC().Add(-time.Hour)
	for i := 0; n < total; i++ {
		at := base.Add(time.Duration(i) * time.Millisecond)
		sw := protocol.Sweep{ID: jobs.NewID("sw", at), Workload: testWorkload(), CreatedAt: at}
		var recs []store.JobRecord
		for k := range min(20, total-n) {
			id := fmt.Sprintf("%s-j%d", sw.ID, k+1)
			sw.Jobs = append(sw.Jobs, id)
			recs = append(recs, store.JobRecord{
				Job: protocol.Job{Schema: protocol.SchemaVersion, ID: id, SweepID: sw.ID, AgentID: fmt.Sprintf("orin-%04d", k),
					Deployment: "d1", Workload: sw.Workload, CreatedAt: at},
				State: protocol.JobCompleted, Attempt: 1, Published: true, UpdatedAt: at,
			})
		}
		if err := c.store.CreateSweep(sw, recs); err != nil {
			t.Fatal(err)
		}
		n += len(recs)
	}
	return n
}

// reloadsSince is how many reloads of the server's users c made after it
// had made before.
func reloadsSince(c *Controller, before int64) int64 {
	made, _ := c.identity.ReloadCounts()
	return made - before
}
