package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/harness/labtest"
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
		checkResult(t, fmt.Sprintf("BaseURL(%q, env %q)", c.flag, c.env), got, err, c.want, c.err)
	}
	if got, err := BaseURL("", nil); err != nil || got != DefaultURL {
		t.Errorf("no getenv: %q, %v", got, err)
	}
	if _, err := New("localhost:8080", WithSource("--api")); err == nil || !strings.HasPrefix(err.Error(), `--api "localhost:8080"`) {
		t.Errorf("New with a source: %v", err)
	}
}

// checkResult fails the test unless call gave an error with wantErr, or,
// when wantErr is "", want and no error.
func checkResult(t *testing.T, call, got string, err error, want, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s = %q, %v; want an error with %q", call, got, err, wantErr)
		}
		return
	}
	if err != nil || got != want {
		t.Errorf("%s = %q, %v; want %q", call, got, err, want)
	}
}

// lab is a real controller on loopback with agent a1 (offering d1)
// announced, and a client of it; the test plays the agent with Report.
type lab struct {
	*labtest.Lab
	cl *Client
}

func newLab(t *testing.T) *lab {
	t.Helper()
	l := labtest.Start(t, controller.Options{
		Explorer: func(runs controller.RunSource) http.Handler { return explorer.NewHandler(runs, zerolog.Nop()) },
	})
	cl, err := New(l.Ctl.HTTPURL(), WithToken(l.Ctl.APIToken()))
	if err != nil {
		t.Fatal(err)
	}
	return &lab{Lab: l, cl: cl}
}

// report publishes a job state as agent a1 does.
func (l *lab) report(t *testing.T, job api.JobView, st protocol.JobState) {
	t.Helper()
	l.Report(t, job.ID, job.SweepID, st)
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
		if ev.Kind != api.EventState {
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
	h, err := l.cl.Health(l.Ctx)
	if err != nil || h.Status != "ok" || h.NATS != "connected" || h.NATSAuth != api.NATSAuthNkeys {
		t.Fatalf("health %+v, %v", h, err)
	}
	agents, err := l.cl.Agents(l.Ctx)
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
	created, err := l.cl.SubmitSweep(l.Ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(created.Jobs) != 1 || created.ID == "" {
		t.Fatalf("created %+v", created)
	}
	job, err := l.cl.Job(l.Ctx, created.Jobs[0])
	if err != nil {
		t.Fatal(err)
	}
	if w := job.Workload; w.RequestTimeoutSec != 0 || len(w.MultiImageSizes) != 0 || len(w.ImagesPerRequest) != 0 {
		t.Errorf("job's workload %+v: want no timeout and no multi-image family", w)
	}
	// The default still applies to a sweep that says nothing else.
	created, err = l.cl.SubmitSweep(l.Ctx, protocol.Sweep{Agents: []string{"a1"}, Workload: protocol.DefaultWorkload()})
	if err != nil {
		t.Fatal(err)
	}
	if job, err = l.cl.Job(l.Ctx, created.Jobs[0]); err != nil || job.Workload.RequestTimeoutSec != 300 {
		t.Errorf("default sweep's timeout %g, %v; want 300", job.Workload.RequestTimeoutSec, err)
	}
	sweeps, err := l.cl.Sweeps(l.Ctx)
	if err != nil || len(sweeps) != 2 {
		t.Errorf("%d sweeps, %v", len(sweeps), err)
	}
	jobs, err := l.cl.Jobs(l.Ctx, JobFilter{Sweep: created.ID, Active: true})
	if err != nil || len(jobs) != 1 || jobs[0].ID != created.Jobs[0] {
		t.Errorf("jobs %+v, %v", jobs, err)
	}
}

func TestSubmitSweepRefusedCarriesTheMessage(t *testing.T) {
	l := newLab(t)
	s := smallSweep()
	s.Workload.Cameras = []int{0}
	_, err := l.cl.SubmitSweep(l.Ctx, s)
	var api *APIError
	if !errors.As(err, &api) || api.Status != http.StatusBadRequest || api.Message != "workload.cameras[0]: 0, want 1..1024" {
		t.Fatalf("got %v (%#v)", err, api)
	}
	if !strings.Contains(err.Error(), "submit sweep: controller answered 400 Bad Request: workload.cameras[0]") {
		t.Errorf("message %q", err)
	}
	if api.Field != "workload.cameras[0]" || api.Line != 0 {
		t.Errorf("field %q line %d, want workload.cameras[0] and no line", api.Field, api.Line)
	}
	_, err = l.cl.SubmitSweepYAML(l.Ctx, "name: x\nworkload:\n  cameras: [1, 0]\n")
	if !errors.As(err, &api) || api.Line != 3 || api.Column == 0 || api.Field != "workload.cameras[1]" {
		t.Fatalf("a YAML sweep's error: %v (%#v), want line 3 and field workload.cameras[1]", err, api)
	}
	if _, err := l.cl.Sweep(l.Ctx, "sw-nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown sweep: %v", err)
	}
}

// Cancel answers the three ways docs/api.md gives, and the stream reports
// what the agent did.
func TestCancelAndEvents(t *testing.T) {
	l := newLab(t)
	events, err := l.cl.Events(l.Ctx, api.EventState)
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()

	queued, err := l.cl.SubmitSweep(l.Ctx, smallSweep())
	if err != nil {
		t.Fatal(err)
	}
	job, outcome, err := l.cl.CancelJob(l.Ctx, queued.Jobs[0])
	if err != nil || outcome != Cancelled || job.State != protocol.JobCancelled {
		t.Fatalf("queued job: %v %s, %v; want Cancelled", outcome, job.State, err)
	}
	waitState(t, events, job.ID, protocol.JobCancelled)

	running, err := l.cl.SubmitSweep(l.Ctx, smallSweep())
	if err != nil {
		t.Fatal(err)
	}
	job, err = l.cl.Job(l.Ctx, running.Jobs[0])
	if err != nil {
		t.Fatal(err)
	}
	l.report(t, job, protocol.JobAccepted)
	waitState(t, events, job.ID, protocol.JobAccepted)
	job, outcome, err = l.cl.CancelJob(l.Ctx, job.ID)
	if err != nil || outcome != StopRequested || !job.CancelRequested {
		t.Fatalf("accepted job: %v %+v, %v; want StopRequested", outcome, job, err)
	}
	l.report(t, job, protocol.JobCancelled)
	waitState(t, events, job.ID, protocol.JobCancelled)
	job, outcome, err = l.cl.CancelJob(l.Ctx, job.ID)
	if err != nil || outcome != AlreadyEnded || job.State != protocol.JobCancelled {
		t.Fatalf("ended job: %v %s, %v; want AlreadyEnded", outcome, job.State, err)
	}
	sc, err := l.cl.CancelSweep(l.Ctx, running.ID)
	if err != nil || !slices.Equal(sc.Ended, running.Jobs) || len(sc.Cancelled)+len(sc.Requested) != 0 {
		t.Fatalf("cancel ended sweep: %+v, %v", sc, err)
	}
	third, err := l.cl.SubmitSweep(l.Ctx, smallSweep())
	if err != nil {
		t.Fatal(err)
	}
	if sc, err = l.cl.CancelSweep(l.Ctx, third.ID); err != nil || !slices.Equal(sc.Cancelled, third.Jobs) {
		t.Fatalf("cancel queued sweep: %+v, %v", sc, err)
	}
	if _, _, err := l.cl.CancelJob(l.Ctx, "sw-nope-j1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown job: %v", err)
	}
	if _, err := l.cl.CancelSweep(l.Ctx, "sw-nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown sweep: %v", err)
	}
}

// resultDoc is a small valid result document.
func resultDoc(id string) protocol.Run { return labtest.ResultDoc(id, "Qwen3-VL-4B-Instruct") }

func TestImportAndReadRuns(t *testing.T) {
	l := newLab(t)
	res, err := l.cl.Import(l.Ctx, []api.ImportEntry{{Origin: "a.json", Run: resultDoc("run-a")}, {Origin: "b.json", Run: resultDoc("run-b")}})
	if err != nil || res.Imported != 2 || !slices.Equal(res.IDs, []string{"run-a", "run-b"}) {
		t.Fatalf("import %+v, %v", res, err)
	}
	_, err = l.cl.Import(l.Ctx, []api.ImportEntry{{Origin: "c.json", Run: resultDoc("run-c")}, {Origin: "c.json", Run: resultDoc("run-c")}})
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest || !strings.Contains(apiErr.Message, "origin c.json") {
		t.Errorf("duplicate id: %v", err)
	}
	// Over the limit nothing is sent.
	small := *l.cl
	small.maxImport = 100
	if _, err := small.Import(l.Ctx, []api.ImportEntry{{Origin: "d.json", Run: resultDoc("run-d")}}); err == nil || !strings.Contains(err.Error(), "smaller groups") {
		t.Errorf("over the limit: %v", err)
	}
	runs, err := l.cl.Runs(l.Ctx, RunFilter{Source: protocol.SourceImport})
	if err != nil || len(runs) != 2 {
		t.Fatalf("%d imported runs, %v; want 2 (run-c and run-d refused)", len(runs), err)
	}
	if r, err := l.cl.Run(l.Ctx, "run-b"); err != nil || r.ID != "run-b" || r.Origin != "b.json (bench)" {
		t.Errorf("run-b: %+v, %v", r, err)
	}
	if r, err := l.cl.RunSummary(l.Ctx, "run-a"); err != nil || len(r.Combinations) != 2 {
		t.Errorf("run-a summary: %+v, %v", r, err)
	}
	if _, err := l.cl.Run(l.Ctx, "run-nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown run: %v", err)
	}
	ds, err := l.cl.ExplorerData(l.Ctx)
	if err != nil || len(ds.Rows) != 1 {
		t.Errorf("explorer data: %d rows, %v", len(ds.Rows), err)
	}
	rows, err := l.cl.ExplorerRows(l.Ctx, explorer.Query{Size: "720p", Cameras: 2, Images: 1, Target: 3})
	if err != nil || len(rows.Rows) != 1 || rows.Rows[0].MaxCamerasLabel != "2+" {
		t.Errorf("explorer rows %+v, %v", rows, err)
	}
	judged := explorer.Query{Size: "720p", Cameras: 2, Images: 1, Target: 3, Interval: 5, Statistic: "p90"}
	if rows, err := l.cl.ExplorerRows(l.Ctx, judged); err != nil || rows.Query != judged {
		t.Errorf("explorer rows at %+v: answered at %+v, %v", judged, rows.Query, err)
	}
	if rej, err := l.cl.Rejected(l.Ctx, 0); err != nil || len(rej) != 0 {
		t.Errorf("rejected %+v, %v", rej, err)
	}
	if live, err := l.cl.Live(l.Ctx); err != nil || len(live.Agents) != 1 {
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

// A list of runs without their series carries everything else; with them
// (the default) the series come as stored.
func TestRunsWithoutSeries(t *testing.T) {
	l := newLab(t)
	r := resultDoc("run-s")
	w := 12.5
	for i := range r.Combinations {
		r.Combinations[i].TelemetrySeries = []protocol.TelemetrySample{{Time: r.CreatedAt, PowerW: &w}, {Time: r.CreatedAt.Add(time.Second), PowerW: &w}}
	}
	if _, err := l.cl.Import(l.Ctx, []api.ImportEntry{{Origin: "s.json", Run: r}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		noSeries bool
		samples  int
	}{{false, 2}, {true, 0}} {
		runs, err := l.cl.Runs(l.Ctx, RunFilter{NoSeries: c.noSeries})
		if err != nil || len(runs) != 1 || len(runs[0].Combinations) != len(r.Combinations) {
			t.Fatalf("NoSeries %t: %d runs, %v", c.noSeries, len(runs), err)
		}
		for _, cb := range runs[0].Combinations {
			if len(cb.TelemetrySeries) != c.samples {
				t.Errorf("NoSeries %t: %s has %d samples, want %d", c.noSeries, cb.ComboKey, len(cb.TelemetrySeries), c.samples)
			}
		}
	}
}
