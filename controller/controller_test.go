package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/protocol"
)

func TestStreamsExist(t *testing.T) {
	c := startController(t, t.TempDir())
	ctx := context.Background()
	for name, want := range map[string]jetstream.RetentionPolicy{protocol.StreamJobs: jetstream.WorkQueuePolicy, protocol.StreamEvents: jetstream.LimitsPolicy} {
		s, err := c.js.Stream(ctx, name)
		if err != nil {
			t.Fatalf("stream %s: %v", name, err)
		}
		cfg := s.CachedInfo().Config
		if cfg.Retention != want || cfg.Storage != jetstream.FileStorage || cfg.Duplicates != time.Hour {
			t.Errorf("%s: retention %v storage %v duplicates %v", name, cfg.Retention, cfg.Storage, cfg.Duplicates)
		}
	}
	cons, err := c.js.Consumer(ctx, protocol.StreamEvents, ConsumerName)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := cons.CachedInfo().Config; cfg.AckPolicy != jetstream.AckExplicitPolicy || cfg.Durable != ConsumerName {
		t.Errorf("consumer config %+v", cfg)
	}
}

func TestAgentRunAndRedeliveryThroughAPI(t *testing.T) {
	c := startController(t, t.TempDir())
	ev, a := announced(t, c, "orin-1", "qwen-q8")

	var agents []api.AgentView
	if code := getJSON(t, c.HTTPURL()+"/api/agents", &agents); code != http.StatusOK {
		t.Fatalf("GET /api/agents: %d", code)
	}
	if len(agents) != 1 || agents[0].ID != "orin-1" || !agents[0].Online || !agents[0].Simulated || len(agents[0].Deployments) != 1 || agents[0].Device.Name != "Jetson AGX Orin" {
		t.Fatalf("agents: %+v", agents)
	}

	// A lab run is the run of an attempt of the agent's job.
	sw := submit(t, c, protocol.Sweep{Agents: []string{"orin-1"}, Workload: testWorkload()})
	a.state(t, sw.Jobs[0], protocol.JobAccepted, 1, true)
	run := testRun(store.RunIDFor(sw.Jobs[0], 1), "orin-1")
	run.JobID, run.SweepID = sw.Jobs[0], sw.ID
	first := protocol.ResultMessage{Schema: 1, AgentID: "orin-1", Run: run, Combination: testCombo("480p", 1)}
	// The same message twice without a message id: the stream stores both,
	// so the controller receives a true redelivery.
	a.publish(t, protocol.KindResult, first, "")
	a.publish(t, protocol.KindResult, first, "")
	a.publish(t, protocol.KindResult, protocol.ResultMessage{Schema: 1, AgentID: "orin-1", Run: run, Combination: testCombo("720p", 2)}, protocol.ResultMsgID(run.ID, "720p-1img-2cam"))
	final := run
	final.Status = protocol.RunCompleted
	final.FinishedAt = time.Now().UTC()
	a.publish(t, protocol.KindResult, protocol.ResultMessage{Schema: 1, AgentID: "orin-1", Run: final, Final: true, Expected: 2}, protocol.ResultMsgID(run.ID, "final"))
	ev.waitFor(t, 4, kindIs(api.EventResult))

	var runs []protocol.Run
	if code := getJSON(t, c.HTTPURL()+"/api/runs", &runs); code != http.StatusOK {
		t.Fatalf("GET /api/runs: %d", code)
	}
	if len(runs) != 1 {
		t.Fatalf("%d runs, want 1", len(runs))
	}
	r := runs[0]
	if r.ID != run.ID || !r.Simulated || r.Status != protocol.RunCompleted || r.Source != protocol.SourceLab || len(r.Combinations) != 2 {
		t.Fatalf("run: id %s simulated %v status %s source %s combos %d", r.ID, r.Simulated, r.Status, r.Source, len(r.Combinations))
	}
	if r.Combinations[0].Size != "480p" || r.Combinations[0].Completed != 2 || r.Combinations[0].Requests != nil {
		t.Errorf("list combination: %+v", r.Combinations[0])
	}
	var full protocol.Run
	getJSON(t, c.HTTPURL()+"/api/runs/"+run.ID, &full)
	if len(full.Combinations) != 2 || len(full.Combinations[0].Requests) != 2 {
		t.Errorf("full run: %d combos, %d records in the first", len(full.Combinations), len(full.Combinations[0].Requests))
	}
	var slim protocol.Run
	getJSON(t, c.HTTPURL()+"/api/runs/"+run.ID+"?requests=0", &slim)
	if len(slim.Combinations) != 2 || slim.Combinations[0].Requests != nil {
		t.Errorf("?requests=0 still carries records")
	}
	if code := getJSON(t, c.HTTPURL()+"/api/runs?agent=other", &runs); code != http.StatusOK || len(runs) != 0 {
		t.Errorf("agent filter: %d runs", len(runs))
	}
	if code := getJSON(t, c.HTTPURL()+"/api/runs/nope", nil); code != http.StatusNotFound {
		t.Errorf("unknown run: %d, want 404", code)
	}
}

func TestRejectedMessagesAreRecordedNotRedelivered(t *testing.T) {
	c := startController(t, t.TempDir())
	ev := watchEvents(t, c)
	a := newFakeAgent(t, c, "a1")
	a.publish(t, protocol.KindResult, []byte("{not json"), "")
	impostor := protocol.AgentHello{Schema: 1, Level: protocol.AgentLevel, AgentID: "a2", Hostname: "h"}
	a.publish(t, protocol.KindHello, impostor, "")
	// A good message after the bad ones: once it is stored, the bad ones
	// were handled (the consumer delivers in order).
	ev.waitFor(t, 1, helloStored(a.hello(t, "d1")))

	rej, err := c.store.Rejected(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rej) != 2 {
		t.Fatalf("%d rejections, want 2: %+v", len(rej), rej)
	}
	// Newest first.
	if !strings.Contains(rej[0].Reason, `subject names agent "a1" but the message says agent_id "a2"`) {
		t.Errorf("mismatch reason: %s", rej[0].Reason)
	}
	if !strings.Contains(rej[1].Reason, "result message") || rej[1].Excerpt != "{not json" {
		t.Errorf("malformed: %+v", rej[1])
	}
	cons, err := c.js.Consumer(context.Background(), protocol.StreamEvents, ConsumerName)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the consumer to have nothing pending", func() bool {
		info, err := cons.Info(context.Background())
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0 && info.AckFloor.Stream == 3
	})
	info, _ := cons.Info(context.Background())
	if info.NumRedelivered != 0 {
		t.Errorf("%d redeliveries, want 0", info.NumRedelivered)
	}
	var agents []api.AgentView
	getJSON(t, c.HTTPURL()+"/api/agents", &agents)
	if len(agents) != 1 || agents[0].ID != "a1" {
		t.Errorf("the impostor hello was stored: %+v", agents)
	}
	var listed []api.Rejection
	if code := getJSON(t, c.HTTPURL()+"/api/rejected", &listed); code != http.StatusOK || len(listed) != 2 {
		t.Errorf("GET /api/rejected: %d, %d entries", code, len(listed))
	}
}

func TestLateStateAfterCompletedIsIgnored(t *testing.T) {
	c := startController(t, t.TempDir())
	ev, a := announced(t, c, "a1", "d1")
	s := submit(t, c, protocol.Sweep{Workload: testWorkload()})
	job := s.Jobs[0]
	for _, st := range []protocol.JobState{protocol.JobAccepted, protocol.JobStarting, protocol.JobRunning, protocol.JobCompleted} {
		a.state(t, job, st, 1, true)
	}
	ev.waitFor(t, 4, kindIs(api.EventState))
	a.state(t, job, protocol.JobRunning, 1, false)  // a late redelivery
	ev.waitFor(t, 1, helloStored(a.hello(t, "d1"))) // a marker stored after the late state

	var jv api.JobView
	getJSON(t, c.HTTPURL()+"/api/jobs/"+job, &jv)
	if jv.State != protocol.JobCompleted || jv.RunID != store.RunIDFor(job, 1) {
		t.Errorf("job state %s run %s, want completed %s", jv.State, jv.RunID, store.RunIDFor(job, 1))
	}
	if len(jv.History) != 4 {
		t.Errorf("history %+v, want 4 entries", jv.History)
	}
	st, err := c.SweepStatus(context.Background(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Done || st.States[protocol.JobCompleted] != 1 || st.Failed != 0 {
		t.Errorf("sweep status %+v", st)
	}
	if n := len(ev.waitFor(t, 0, kindIs(api.EventState))); n != 4 {
		t.Errorf("%d state events, want 4 (the late one changes nothing)", n)
	}
}

// consumeJobs reads n jobs as the agent would, through its durable consumer.
func consumeJobs(t *testing.T, a *fakeAgent, n int) []jetstream.Msg {
	t.Helper()
	cons := a.boundJobConsumer(t, jetstream.ConsumerConfig{
		Durable: protocol.JobConsumerName(a.id), FilterSubject: protocol.JobSubject(a.id), AckPolicy: jetstream.AckExplicitPolicy,
	})
	batch, err := cons.Fetch(n, jetstream.FetchMaxWait(waitLimit))
	if err != nil {
		t.Fatal(err)
	}
	var msgs []jetstream.Msg
	for m := range batch.Messages() {
		msgs = append(msgs, m)
	}
	if len(msgs) != n {
		t.Fatalf("fetched %d jobs, want %d (%v)", len(msgs), n, batch.Error())
	}
	return msgs
}

func TestSubmitSweepPublishesJobs(t *testing.T) {
	c := startController(t, t.TempDir())
	ev := watchEvents(t, c)
	a := newFakeAgent(t, c, "a1")
	b := newFakeAgent(t, c, "b1")
	ev.waitFor(t, 1, helloStored(a.hello(t, "qwen-q8", "qwen-fp16")))
	ev.waitFor(t, 1, helloStored(b.hello(t, "qwen-q8")))

	_, err := c.SubmitSweep(context.Background(), protocol.Sweep{Deployments: []string{"nope"}, Workload: testWorkload()})
	var bad *api.BadSweepError
	if !errors.As(err, &bad) || !strings.Contains(err.Error(), `deployments[0]: "nope" is offered by none`) {
		t.Fatalf("unknown deployment: %v", err)
	}
	s := submit(t, c, protocol.Sweep{Deployments: []string{"qwen-q8"}, Workload: testWorkload()})
	if len(s.Jobs) != 2 || s.ID == "" {
		t.Fatalf("sweep %+v, want 2 jobs", s)
	}
	for _, fa := range []*fakeAgent{a, b} {
		m := consumeJobs(t, fa, 1)[0]
		job, err := protocol.DecodeJob(m.Data())
		if err != nil {
			t.Fatal(err)
		}
		if m.Subject() != protocol.JobSubject(fa.id) || job.AgentID != fa.id || job.Deployment != "qwen-q8" || job.SweepID != s.ID {
			t.Errorf("job on %s: %+v", m.Subject(), job)
		}
		if got := m.Headers().Get(jetstream.MsgIDHeader); got != protocol.JobMsgID(job.ID) {
			t.Errorf("msg id %q, want %q", got, protocol.JobMsgID(job.ID))
		}
		_ = m.Ack()
		rec, err := c.store.Job(job.ID)
		if err != nil || !rec.Published || rec.State != protocol.JobQueued {
			t.Errorf("stored job %+v, %v", rec, err)
		}
	}
	st, err := c.SweepStatus(context.Background(), s.ID)
	if err != nil || st.Done || st.States[protocol.JobQueued] != 2 {
		t.Errorf("status %+v %v", st, err)
	}
}

func TestRestartKeepsStateAndRepublishes(t *testing.T) {
	dir := t.TempDir()
	c1, err := New(Options{DataDir: dir, NATSListen: "127.0.0.1:-1", HTTPAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c1.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, a := announced(t, c1, "a1", "d1")
	s := submit(t, c1, protocol.Sweep{Workload: testWorkload()})
	a.nc.Close()
	if err := c1.Close(); err != nil {
		t.Fatal(err)
	}
	// A job stored but never acknowledged by JetStream (the controller died
	// between the two): the next start must publish it.
	st, err := store.Open(dir+"/vlmfleet.db", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	orphan := store.JobRecord{Job: protocol.Job{Schema: 1, ID: "orphan-1", SweepID: s.ID, AgentID: "a1", Deployment: "d1", Workload: testWorkload(), CreatedAt: time.Now().UTC()}, State: protocol.JobQueued}
	if err := st.PutJob(orphan); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	c2 := startController(t, dir)
	var agents []api.AgentView
	getJSON(t, c2.HTTPURL()+"/api/agents", &agents)
	if len(agents) != 1 || agents[0].ID != "a1" {
		t.Fatalf("agents after restart: %+v", agents)
	}
	var sv api.SweepView
	if code := getJSON(t, c2.HTTPURL()+"/api/sweeps/"+s.ID, &sv); code != http.StatusOK || sv.Status.Jobs != 2 {
		t.Fatalf("sweep after restart: %d %+v", code, sv)
	}
	a2 := newFakeAgent(t, c2, "a1")
	msgs := consumeJobs(t, a2, 2) // the sweep's job kept by JetStream, and the orphan
	ids := map[string]bool{}
	for _, m := range msgs {
		j, err := protocol.DecodeJob(m.Data())
		if err != nil {
			t.Fatal(err)
		}
		ids[j.ID] = true
	}
	if !ids["orphan-1"] || !ids[s.Jobs[0]] {
		t.Errorf("jobs after restart: %v", ids)
	}
	eventually(t, "the orphan marked published", func() bool {
		j, err := c2.store.Job("orphan-1")
		return err == nil && j.Published
	})
}

func TestSweepOverHTTP(t *testing.T) {
	c := startController(t, t.TempDir())
	announced(t, c, "a1", "d1")

	code, body := postJSON(t, c.HTTPURL()+"/api/sweeps", `{"workload":{"cameras":[1,0]}}`)
	if code != http.StatusBadRequest || !strings.Contains(body, "workload.cameras[1]") {
		t.Errorf("bad camera: %d %s", code, body)
	}
	code, body = postJSON(t, c.HTTPURL()+"/api/sweeps", `{"workload":{"camera":[1]}}`)
	if code != http.StatusBadRequest || !strings.Contains(body, `unknown field \"camera\"`) {
		t.Errorf("misspelt field: %d %s", code, body)
	}
	code, body = postJSON(t, c.HTTPURL()+"/api/sweeps", `{"agents":["a1"],"workload":{"sizes":["720p"],"cameras":[1,2],"multi_image_sizes":[]}}`)
	if code != http.StatusCreated {
		t.Fatalf("submit: %d %s", code, body)
	}
	var s protocol.Sweep
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Jobs) != 1 || s.Workload.RequestsPerLevel != protocol.DefaultWorkload().RequestsPerLevel {
		t.Errorf("sweep %+v", s)
	}
	var sv api.SweepView
	getJSON(t, c.HTTPURL()+"/api/sweeps/"+s.ID, &sv)
	if len(sv.JobList) != 1 || sv.JobList[0].State != protocol.JobQueued {
		t.Errorf("sweep view %+v", sv)
	}
	var list []api.SweepView
	getJSON(t, c.HTTPURL()+"/api/sweeps", &list)
	var jobs []api.JobView
	getJSON(t, c.HTTPURL()+"/api/jobs?sweep="+s.ID, &jobs)
	if len(list) != 1 || len(jobs) != 1 {
		t.Errorf("%d sweeps, %d jobs", len(list), len(jobs))
	}
	for path, want := range map[string]int{"/api/health": 200, "/api/nope": 404, "/live": 200, "/": 200, "/api/live": 200} {
		if code := getJSON(t, c.HTTPURL()+path, nil); code != want {
			t.Errorf("GET %s: %d, want %d", path, code, want)
		}
	}
}

func TestImportOverHTTPIsAtomic(t *testing.T) {
	c := startController(t, t.TempDir())
	good := testRun("bench-1", "")
	good.Source = protocol.SourceBench
	good.Status = protocol.RunCompleted
	good.Combinations = []protocol.Combination{*testCombo("720p", 1)}
	bad := good
	bad.ID = "bench-2"
	bad.Status = "done"
	body := func(runs ...protocol.Run) string {
		req := api.ImportRequest{}
		for i, r := range runs {
			req.Runs = append(req.Runs, api.ImportEntry{Origin: fmt.Sprintf("f%d.json", i), Run: r})
		}
		b, _ := json.Marshal(req)
		return string(b)
	}
	code, resp := postJSON(t, c.HTTPURL()+"/api/runs/import", body(good, bad))
	if code != http.StatusBadRequest || !strings.Contains(resp, "runs[1] (origin f1.json)") || !strings.Contains(resp, `status \"done\"`) {
		t.Fatalf("bad import: %d %s", code, resp)
	}
	var runs []protocol.Run
	getJSON(t, c.HTTPURL()+"/api/runs", &runs)
	if len(runs) != 0 {
		t.Fatalf("%d runs stored after a refused import", len(runs))
	}
	code, resp = postJSON(t, c.HTTPURL()+"/api/runs/import", body(good))
	if code != http.StatusOK || !strings.Contains(resp, `"imported": 1`) {
		t.Fatalf("good import: %d %s", code, resp)
	}
	getJSON(t, c.HTTPURL()+"/api/runs?source=import", &runs)
	if len(runs) != 1 || runs[0].Origin != "f0.json (bench)" {
		t.Errorf("imported: %+v", runs)
	}
	if code, resp := postJSON(t, c.HTTPURL()+"/api/runs/import", `{"runs":[]}`); code != http.StatusBadRequest {
		t.Errorf("empty import: %d %s", code, resp)
	}
}

func TestHeartbeatsDriveOnlineState(t *testing.T) {
	c := startControllerWith(t, Options{DataDir: t.TempDir(), HeartbeatTimeout: 1500 * time.Millisecond})
	ev, a := announced(t, c, "a1", "d1")
	hb, _ := json.Marshal(protocol.Heartbeat{Schema: 1, AgentID: "a1", Time: time.Now(), State: protocol.AgentBusy, JobID: "j9", Seq: 1})
	if err := a.nc.Publish(protocol.AgentSubject("a1", protocol.KindHeartbeat), hb); err != nil {
		t.Fatal(err)
	}
	// A heartbeat whose body names another agent is ignored.
	forged, _ := json.Marshal(protocol.Heartbeat{Schema: 1, AgentID: "a2", Time: time.Now(), State: protocol.AgentIdle})
	_ = a.nc.Publish(protocol.AgentSubject("a1", protocol.KindHeartbeat), forged)
	// So is one whose state is not an agent state.
	odd, _ := json.Marshal(protocol.Heartbeat{Schema: 1, AgentID: "a1", Time: time.Now(), State: "on fire", Seq: 2})
	_ = a.nc.Publish(protocol.AgentSubject("a1", protocol.KindHeartbeat), odd)
	_ = a.nc.Flush()
	ev.waitFor(t, 1, kindIs(api.EventHeartbeat))
	var agents []api.AgentView
	getJSON(t, c.HTTPURL()+"/api/agents", &agents)
	if len(agents) != 1 || !agents[0].Online || agents[0].State != protocol.AgentBusy || agents[0].JobID != "j9" {
		t.Fatalf("agent after heartbeat: %+v", agents)
	}
	// No more heartbeats: the watcher announces the agent offline.
	ev.waitFor(t, 1, func(e api.Event) bool {
		v, ok := e.Data.(api.AgentView)
		return e.Kind == api.EventAgent && ok && !v.Online && v.State == "offline"
	})
	getJSON(t, c.HTTPURL()+"/api/agents", &agents)
	if agents[0].Online {
		t.Errorf("agent still online after the timeout")
	}
	if n := len(ev.waitFor(t, 0, kindIs(api.EventHeartbeat))); n != 1 {
		t.Errorf("%d heartbeat events, want 1 (the forged and the odd one are dropped)", n)
	}
}

func TestExternalNATS(t *testing.T) {
	ns := startExternalNATS(t)
	c := startControllerWith(t, Options{DataDir: t.TempDir(), NATSURL: ns.ClientURL()})
	if c.NATSURL() != ns.ClientURL() {
		t.Errorf("NATSURL %s, want the external %s", c.NATSURL(), ns.ClientURL())
	}
	announced(t, c, "ext-1", "d1")
	if _, err := c.store.Agent("ext-1"); err != nil {
		t.Fatal(err)
	}
}

// A request that is wrong, or names what does not exist, is answered with
// its status and a JSON error saying why.
func TestAPIErrorStatuses(t *testing.T) {
	c := startController(t, t.TempDir())
	for _, tc := range []struct {
		method, path, body string
		status             int
		says               string
	}{
		{http.MethodPost, "/api/sweeps", strings.Repeat(" ", api.MaxSweepBody+1), http.StatusRequestEntityTooLarge, "request body over"},
		{http.MethodPost, "/api/sweeps", `{"workload":`, http.StatusBadRequest, "sweep"},
		{http.MethodPost, "/api/runs/import", `{"runs":[]}`, http.StatusBadRequest, "run"},
		{http.MethodGet, "/api/rejected?limit=-1", "", http.StatusBadRequest, `limit "-1": want a whole number`},
		{http.MethodGet, "/api/runs/nope", "", http.StatusNotFound, "not found"},
		{http.MethodGet, "/api/sweeps/nope", "", http.StatusNotFound, "not found"},
		{http.MethodDelete, "/api/sweeps/nope", "", http.StatusNotFound, "not found"},
		{http.MethodGet, "/api/jobs/nope", "", http.StatusNotFound, "not found"},
		{http.MethodDelete, "/api/jobs/nope", "", http.StatusNotFound, "not found"},
	} {
		status, body := request(t, tc.method, c.HTTPURL()+tc.path, tc.body)
		var answer struct{ Error string }
		if err := json.Unmarshal([]byte(body), &answer); err != nil || status != tc.status || !strings.Contains(answer.Error, tc.says) {
			t.Errorf("%s %s: %d %s, want %d saying %q", tc.method, tc.path, status, body, tc.status, tc.says)
		}
	}
}
