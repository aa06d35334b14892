package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/protocol"
)

func TestBaseURL(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == EnvURL {
				return v
			}
			return ""
		}
	}
	for _, c := range []struct {
		flag, env, want, err string
	}{
		{"", "", DefaultURL, ""},
		{"", "http://lab:9000/", "http://lab:9000", ""},
		{"https://ctl.example/vlmfleet/", "http://lab:9000", "https://ctl.example/vlmfleet", ""},
		{"127.0.0.1:8080", "", "", `--controller "127.0.0.1:8080": want a base URL such as http://127.0.0.1:8080`},
		{"", "ftp://lab", "", `VLMFLEET_CONTROLLER "ftp://lab"`},
		{"http://", "", "", "--controller"},
		{"http://lab:9000/?x=1", "", "", "--controller"},
	} {
		got, err := BaseURL(c.flag, env(c.env))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("BaseURL(%q, env %q): %q, %v; want an error with %q", c.flag, c.env, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("BaseURL(%q, env %q) = %q, %v; want %q", c.flag, c.env, got, err, c.want)
		}
	}
	if got, err := BaseURL("", nil); err != nil || got != DefaultURL {
		t.Errorf("no getenv: %q, %v", got, err)
	}
	if _, err := New("localhost:8080", WithSource("--api")); err == nil || !strings.HasPrefix(err.Error(), `--api "localhost:8080"`) {
		t.Errorf("New with a source: %v", err)
	}
}

// lab is a real controller on loopback with agent a1 (offering d1)
// announced; the test plays the agent over JetStream with js.
type lab struct {
	ctx context.Context
	ctl *controller.Controller
	nc  *nats.Conn
	js  jetstream.JetStream
	cl  *Client
}

func newLab(t *testing.T) *lab {
	t.Helper()
	ctl, err := controller.New(controller.Options{
		DataDir: t.TempDir(), NATSListen: "127.0.0.1:-1", HTTPAddr: "127.0.0.1:0", Log: zerolog.Nop(),
		Explorer: func(runs controller.RunSource) http.Handler { return explorer.NewHandler(runs, zerolog.Nop()) },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	if err := ctl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctl.Close() })
	nc, err := nats.Connect(ctl.NATSURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	announced := make(chan struct{}, 1)
	stop := ctl.OnEvent(func(e controller.Event) {
		if e.Kind == controller.EventAgent {
			select {
			case announced <- struct{}{}:
			default:
			}
		}
	})
	defer stop()
	hello, _ := json.Marshal(protocol.AgentHello{Schema: 1, AgentID: "a1", Hostname: "h", Simulated: true,
		Deployments: []protocol.Deployment{{ID: "d1", Engine: "sim", Model: "m"}}})
	if _, err := js.Publish(ctx, protocol.AgentSubject("a1", protocol.KindHello), hello); err != nil {
		t.Fatal(err)
	}
	select {
	case <-announced:
	case <-ctx.Done():
		t.Fatal("the agent was never stored")
	}
	cl, err := New(ctl.HTTPURL())
	if err != nil {
		t.Fatal(err)
	}
	return &lab{ctx: ctx, ctl: ctl, nc: nc, js: js, cl: cl}
}

// report publishes a job state as agent a1 does.
func (l *lab) report(t *testing.T, job controller.JobView, st protocol.JobState) {
	t.Helper()
	data, _ := json.Marshal(protocol.JobStateChange{Schema: 1, JobID: job.ID, SweepID: job.SweepID, AgentID: "a1", State: st, Attempt: 1, Time: time.Now()})
	if _, err := l.js.Publish(l.ctx, protocol.AgentSubject("a1", protocol.KindState), data, jetstream.WithMsgID(protocol.StateMsgID(job.ID, st, 1))); err != nil {
		t.Fatal(err)
	}
}

// waitState reads the stream until job reaches st.
func waitState(t *testing.T, s *EventStream, job string, st protocol.JobState) {
	t.Helper()
	for {
		ev, err := s.Next()
		if err != nil {
			t.Fatalf("waiting for %s of %s: %v", st, job, err)
		}
		var ch protocol.JobStateChange
		if ev.Kind != controller.EventState {
			t.Fatalf("event of kind %q from a stream of state events", ev.Kind)
		}
		if err := ev.Decode(&ch); err != nil {
			t.Fatal(err)
		}
		if ch.JobID == job && ch.State == st {
			return
		}
	}
}

func smallSweep() protocol.Sweep {
	w := protocol.DefaultWorkload()
	w.Sizes, w.Cameras, w.MultiImageSizes, w.ImagesPerRequest = []string{"720p"}, []int{1}, nil, nil
	return protocol.Sweep{Agents: []string{"a1"}, Workload: w}
}

func TestHealthAndAgents(t *testing.T) {
	l := newLab(t)
	h, err := l.cl.Health(l.ctx)
	if err != nil || h.Status != "ok" || h.NATS != "connected" {
		t.Fatalf("health %+v, %v", h, err)
	}
	agents, err := l.cl.Agents(l.ctx)
	if err != nil || len(agents) != 1 || agents[0].ID != "a1" || !agents[0].Online || agents[0].Deployments[0].ID != "d1" {
		t.Fatalf("agents %+v, %v", agents, err)
	}
}

// A workload's zero values arrive as zero: no request bound, no
// multi-image family. The controller fills only fields left out.
func TestSubmitSweepSendsZeroValues(t *testing.T) {
	l := newLab(t)
	s := smallSweep()
	s.Workload.RequestTimeoutSec = 0
	created, err := l.cl.SubmitSweep(l.ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(created.Jobs) != 1 || created.ID == "" {
		t.Fatalf("created %+v", created)
	}
	job, err := l.cl.Job(l.ctx, created.Jobs[0])
	if err != nil {
		t.Fatal(err)
	}
	if w := job.Workload; w.RequestTimeoutSec != 0 || len(w.MultiImageSizes) != 0 || len(w.ImagesPerRequest) != 0 {
		t.Errorf("job's workload %+v: want no timeout and no multi-image family", w)
	}
	// The default still applies to a sweep that says nothing else.
	created, err = l.cl.SubmitSweep(l.ctx, protocol.Sweep{Agents: []string{"a1"}, Workload: protocol.DefaultWorkload()})
	if err != nil {
		t.Fatal(err)
	}
	if job, err = l.cl.Job(l.ctx, created.Jobs[0]); err != nil || job.Workload.RequestTimeoutSec != 300 {
		t.Errorf("default sweep's timeout %g, %v; want 300", job.Workload.RequestTimeoutSec, err)
	}
	sweeps, err := l.cl.Sweeps(l.ctx)
	if err != nil || len(sweeps) != 2 {
		t.Errorf("%d sweeps, %v", len(sweeps), err)
	}
	jobs, err := l.cl.Jobs(l.ctx, JobFilter{Sweep: created.ID, Active: true})
	if err != nil || len(jobs) != 1 || jobs[0].ID != created.Jobs[0] {
		t.Errorf("jobs %+v, %v", jobs, err)
	}
}

func TestSubmitSweepRefusedCarriesTheMessage(t *testing.T) {
	l := newLab(t)
	s := smallSweep()
	s.Workload.Cameras = []int{0}
	_, err := l.cl.SubmitSweep(l.ctx, s)
	var api *APIError
	if !errors.As(err, &api) || api.Status != http.StatusBadRequest || api.Message != "workload.cameras[0]: 0, want 1..1024" {
		t.Fatalf("got %v (%#v)", err, api)
	}
	if !strings.Contains(err.Error(), "submit sweep: controller answered 400 Bad Request: workload.cameras[0]") {
		t.Errorf("message %q", err)
	}
	if _, err := l.cl.Sweep(l.ctx, "sw-nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown sweep: %v", err)
	}
}

// Cancel answers the three ways docs/api.md gives, and the stream reports
// what the agent did.
func TestCancelAndEvents(t *testing.T) {
	l := newLab(t)
	events, err := l.cl.Events(l.ctx, controller.EventState)
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()

	queued, err := l.cl.SubmitSweep(l.ctx, smallSweep())
	if err != nil {
		t.Fatal(err)
	}
	job, outcome, err := l.cl.CancelJob(l.ctx, queued.Jobs[0])
	if err != nil || outcome != Cancelled || job.State != protocol.JobCancelled {
		t.Fatalf("queued job: %v %s, %v; want Cancelled", outcome, job.State, err)
	}
	waitState(t, events, job.ID, protocol.JobCancelled)

	running, err := l.cl.SubmitSweep(l.ctx, smallSweep())
	if err != nil {
		t.Fatal(err)
	}
	job, err = l.cl.Job(l.ctx, running.Jobs[0])
	if err != nil {
		t.Fatal(err)
	}
	l.report(t, job, protocol.JobAccepted)
	waitState(t, events, job.ID, protocol.JobAccepted)
	job, outcome, err = l.cl.CancelJob(l.ctx, job.ID)
	if err != nil || outcome != StopRequested || !job.CancelRequested {
		t.Fatalf("accepted job: %v %+v, %v; want StopRequested", outcome, job, err)
	}
	l.report(t, job, protocol.JobCancelled)
	waitState(t, events, job.ID, protocol.JobCancelled)
	job, outcome, err = l.cl.CancelJob(l.ctx, job.ID)
	if err != nil || outcome != AlreadyEnded || job.State != protocol.JobCancelled {
		t.Fatalf("ended job: %v %s, %v; want AlreadyEnded", outcome, job.State, err)
	}
	sc, err := l.cl.CancelSweep(l.ctx, running.ID)
	if err != nil || !slices.Equal(sc.Ended, running.Jobs) || len(sc.Cancelled)+len(sc.Requested) != 0 {
		t.Fatalf("cancel ended sweep: %+v, %v", sc, err)
	}
	third, err := l.cl.SubmitSweep(l.ctx, smallSweep())
	if err != nil {
		t.Fatal(err)
	}
	if sc, err = l.cl.CancelSweep(l.ctx, third.ID); err != nil || !slices.Equal(sc.Cancelled, third.Jobs) {
		t.Fatalf("cancel queued sweep: %+v, %v", sc, err)
	}
	if _, _, err := l.cl.CancelJob(l.ctx, "sw-nope-j1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown job: %v", err)
	}
	if _, err := l.cl.CancelSweep(l.ctx, "sw-nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown sweep: %v", err)
	}
}

// resultDoc is a small valid result document.
func resultDoc(id string) protocol.Run {
	w := protocol.DefaultWorkload()
	w.Sizes, w.Cameras, w.MultiImageSizes = []string{"720p"}, []int{1, 2}, nil
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	return protocol.Run{
		Schema: protocol.SchemaVersion, ID: id, Source: protocol.SourceBench, Status: protocol.RunCompleted,
		Config:    protocol.Configuration{Model: "Qwen3-VL-4B-Instruct", ParamsB: 4.4, Quantization: "Q8_0", Engine: "llama.cpp", Device: "Jetson AGX Orin"},
		Workload:  w,
		CreatedAt: at, FinishedAt: at.Add(time.Minute),
		Engine: protocol.EngineInfo{Kind: "llamacpp", Name: "llama.cpp"},
		Device: protocol.DeviceFacts{Name: "Jetson AGX Orin", Kind: protocol.DeviceJetson},
		Combinations: []protocol.Combination{
			{ComboKey: protocol.ComboKey{Size: "720p", Images: 1, Cameras: 1}, Completed: 8, TTFT: protocol.Stats{Mean: 1.31}, TPS: protocol.Stats{Mean: 28.4}},
			{ComboKey: protocol.ComboKey{Size: "720p", Images: 1, Cameras: 2}, Completed: 8, TTFT: protocol.Stats{Mean: 2.6}, TPS: protocol.Stats{Mean: 25}},
		},
	}
}

func TestImportAndReadRuns(t *testing.T) {
	l := newLab(t)
	res, err := l.cl.Import(l.ctx, []store.ImportEntry{{Origin: "a.json", Run: resultDoc("run-a")}, {Origin: "b.json", Run: resultDoc("run-b")}})
	if err != nil || res.Imported != 2 || !slices.Equal(res.IDs, []string{"run-a", "run-b"}) {
		t.Fatalf("import %+v, %v", res, err)
	}
	_, err = l.cl.Import(l.ctx, []store.ImportEntry{{Origin: "c.json", Run: resultDoc("run-c")}, {Origin: "c.json", Run: resultDoc("run-c")}})
	var api *APIError
	if !errors.As(err, &api) || api.Status != http.StatusBadRequest || !strings.Contains(api.Message, "origin c.json") {
		t.Errorf("duplicate id: %v", err)
	}
	// Over the limit nothing is sent.
	small := *l.cl
	small.maxImport = 100
	if _, err := small.Import(l.ctx, []store.ImportEntry{{Origin: "d.json", Run: resultDoc("run-d")}}); err == nil || !strings.Contains(err.Error(), "smaller groups") {
		t.Errorf("over the limit: %v", err)
	}
	runs, err := l.cl.Runs(l.ctx, RunFilter{Source: protocol.SourceImport})
	if err != nil || len(runs) != 2 {
		t.Fatalf("%d imported runs, %v; want 2 (run-c and run-d refused)", len(runs), err)
	}
	if r, err := l.cl.Run(l.ctx, "run-b"); err != nil || r.ID != "run-b" || r.Origin != "b.json (bench)" {
		t.Errorf("run-b: %+v, %v", r, err)
	}
	if r, err := l.cl.RunSummary(l.ctx, "run-a"); err != nil || len(r.Combinations) != 2 {
		t.Errorf("run-a summary: %+v, %v", r, err)
	}
	if _, err := l.cl.Run(l.ctx, "run-nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown run: %v", err)
	}
	ds, err := l.cl.ExplorerData(l.ctx)
	if err != nil || len(ds.Rows) != 1 {
		t.Errorf("explorer data: %d rows, %v", len(ds.Rows), err)
	}
	rows, err := l.cl.ExplorerRows(l.ctx, explorer.Query{Size: "720p", Cameras: 2, Images: 1, Target: 3})
	if err != nil || len(rows.Rows) != 1 || rows.Rows[0].MaxCamerasLabel != "2+" {
		t.Errorf("explorer rows %+v, %v", rows, err)
	}
	if rej, err := l.cl.Rejected(l.ctx, 0); err != nil || len(rej) != 0 {
		t.Errorf("rejected %+v, %v", rej, err)
	}
	if live, err := l.cl.Live(l.ctx); err != nil || len(live.Agents) != 1 {
		t.Errorf("live %+v, %v", live, err)
	}
}

func TestExplorerDataChecksTheSchema(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"schema": 99, "rows": []}`))
	}))
	defer srv.Close()
	cl, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.ExplorerData(context.Background()); err == nil || !strings.Contains(err.Error(), "dataset schema 99, this build reads 1..1") {
		t.Errorf("got %v", err)
	}
	srv.Close()
	if _, err := cl.ExplorerData(context.Background()); err == nil || !strings.Contains(err.Error(), "fetch explorer data") {
		t.Errorf("closed server: %v", err)
	}
}

// An answer over its bound is an error, not a truncated document.
func TestAnswersAreBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"id": "` + strings.Repeat("x", 100) + `"}`))
	}))
	defer srv.Close()
	cl, _ := New(srv.URL)
	if _, _, err := cl.do(context.Background(), http.MethodGet, "/api/jobs/x", nil, 50); err == nil || !strings.Contains(err.Error(), "over 50 bytes") {
		t.Errorf("got %v", err)
	}
}
