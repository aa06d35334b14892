package main

import (
	"bytes"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/cmd/vlmfleet/internal/termprogress"
	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/client"
	"github.com/vlmfleet/vlmfleet/harness/labtest"
	"github.com/vlmfleet/vlmfleet/internal/jobconsumer"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
	"github.com/vlmfleet/vlmfleet/protocol"
)

func TestReadSweepFile(t *testing.T) {
	dir := t.TempDir()
	good := testutil.WriteFile(t, filepath.Join(dir, "s.yaml"), "name: orins\nagents: [a1]\nworkload:\n  sizes: [720p]\n  cameras: [1, 2, 4]\n  multi_image_sizes: []\n")
	s, err := readSweepFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "orins" || len(s.Workload.Cameras) != 3 || s.Workload.MaxTokens != 128 || len(s.Workload.MultiImageSizes) != 0 {
		t.Errorf("sweep %+v", s)
	}
	for name, body := range map[string]string{
		"typo.yaml":   "name: x\nworkload:\n  camera: [1]\n",
		"bad.yaml":    "workload:\n  cameras: [0]\n",
		"syntax.json": "{\n  \"workload\": {\"cameras\": [1,]}\n}",
		"deep.yaml":   "name: x\nworkload:\n  cameras: " + strings.Repeat("[", 2000) + strings.Repeat("]", 2000),
		"alias.yaml":  "name: &n x\nagents: [*n]\n",
	} {
		_, err := readSweepFile(testutil.WriteFile(t, filepath.Join(dir, name), body))
		want := map[string]string{"typo.yaml": "typo.yaml:3:3: unknown field \"camera\" in workload; did you mean \"cameras\"?", "bad.yaml": "bad.yaml:2:13: workload.cameras[0]", "syntax.json": "line 2 column",
			"deep.yaml": "deep.yaml:3:44: lists and mappings nested more than 32 deep", "alias.yaml": "alias.yaml:1:7: \"&n\": a sweep file takes no anchors, aliases"}[name]
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: got %v, want an error naming the file and %q", name, err, want)
		}
	}
}

// TestSweepCommandWaits submits a sweep through the command, plays the
// agent's part over NATS and checks that --wait returns once the job ends.
func TestSweepCommandWaits(t *testing.T) {
	l := labtest.Start(t, controller.Options{})
	ctx, ctl := l.Ctx, l.Ctl

	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		var out, errb bytes.Buffer
		code := run([]string{"sweep", "--controller", ctl.HTTPURL(), "--agents", "a1", "--sizes", "720p", "--cameras", "1,2",
			"--multi-sizes", "none", "--requests", "2", "--timeout", "0", "--wait"}, &out, &errb, tokenEnv(ctl.APIToken()))
		done <- result{code, out.String(), errb.String()}
	}()

	// Take the job as the agent would, from the consumer the controller
	// makes, then report it finished.
	if _, err := l.AdminJS.CreateOrUpdateConsumer(ctx, protocol.StreamJobs, jobconsumer.Config("a1", 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	cons, err := l.JS.Consumer(ctx, protocol.StreamJobs, protocol.JobConsumerName("a1"))
	if err != nil {
		t.Fatal(err)
	}
	msg, err := cons.Next(jetstream.FetchMaxWait(20 * time.Second))
	if err != nil {
		t.Fatalf("no job arrived: %v", err)
	}
	job, err := protocol.DecodeJob(msg.Data())
	if err != nil {
		t.Fatal(err)
	}
	_ = msg.Ack()
	if job.Workload.RequestsPerLevel != 2 || len(job.Workload.Cameras) != 2 || len(job.Workload.MultiImageSizes) != 0 || job.Workload.RequestTimeoutSec != 0 {
		t.Errorf("workload from flags: %+v", job.Workload)
	}
	for _, st := range []protocol.JobState{protocol.JobAccepted, protocol.JobRunning, protocol.JobCompleted} {
		l.Report(t, job.ID, job.SweepID, st)
	}
	select {
	case r := <-done:
		if r.code != 0 || !strings.Contains(r.stdout, "done: 1 jobs, 1 completed") {
			t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}

	case <-ctx.Done():
		t.Fatal("vlmfleet sweep --wait did not return after the job completed")
	}
}

func TestSweepCommandReportsBadFlags(t *testing.T) {
	noSizes := testutil.WriteFile(t, filepath.Join(t.TempDir(), "multi.yaml"), "workload:\n  sizes: []\n")
	lowCeiling := testutil.WriteFile(t, filepath.Join(t.TempDir(), "search.yaml"), "workload:\n  search: 8\n")
	levels := make([]int, 128)
	for i := range levels {
		levels[i] = i + 1
	}
	manyCameras := protocol.JoinInts(levels)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--cameras", "1,x"}, `--cameras: "x" is not a whole number in 1..1024`},
		{[]string{"--sizes", "4K"}, `--sizes: image size "4K": want one of`},
		{[]string{"--requests", "0"}, "--requests 0: want 1 or more"},
		{[]string{"--file", noSizes, "--multi-sizes", "none"}, "workload.sizes: at least one image size is needed (--sizes sets it)"},
		{[]string{"--agents", "a b"}, "--agents: agents[0]"},
		{[]string{"--statistic", "p99"}, `--statistic: statistic "p99": want mean, p90 or p95`},
		{[]string{"--target", "0"}, "--target 0: want a positive number of seconds"},
		{[]string{"--search=9"}, "--search: workload.search: ceiling 9, want 16 (the highest camera level) up to 1024"},
		{[]string{"--frame-interval", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17"}, "--frame-interval: workload.frame_interval_sec: 17 intervals, at most 16"},
		{[]string{"--sizes", "480p,720p,1080p,2K", "--cameras", manyCameras, "--frame-interval", "1,2,3,4,5,6,7,8"},
			"workload: 4616 combinations (4 sizes × 128 camera levels × (1 + 8 frame intervals) + 4 multi-image sizes × 3 image counts), at most 4096 per job"},
		{[]string{"--file", lowCeiling}, "search.yaml:2:11: workload.search: ceiling 8, want 16"},
		{[]string{"--controller", "127.0.0.1:8080"}, `--controller "127.0.0.1:8080": want a base URL`},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--power-limits", "300,lots"}, `--power-limits: item 2, "lots", is not a number of watts; want e.g. --power-limits 300,450`},
		{[]string{"--power-limits", "300,0"}, "--power-limits: power_limits_w[1]: 0 W; want a power limit above 0 and at most 5000 W"},
		{[]string{"--power-modes", "15W,MAXN,15W"}, `--power-modes: power_modes[2]: "15W" is listed twice (power_modes[0] too)`},
		{[]string{"--power-modes", "15 W"}, `--power-modes: power_modes[0]: "15 W" has ' '`},
		{[]string{"--agent-labels", "site"}, `--agent-labels: item 1, "site", is not key=value; want e.g. site=lab1,rack=3`},
		{[]string{"--agent-labels", "site=a,site=b"}, `--agent-labels: key "site" is given twice`},
	} {
		var out, errb bytes.Buffer
		code := run(append([]string{"sweep"}, c.args...), &out, &errb, func(string) string { return "" })
		if code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%q: exit %d: %s; want 2 and %q", c.args, code, errb.String(), c.want)
		}
	}
	var out, errb bytes.Buffer
	code := run([]string{"sweep"}, &out, &errb, func(k string) string { return map[string]string{"VLMFLEET_CONTROLLER": "lab:8080"}[k] })
	if code != 2 || !strings.Contains(errb.String(), `VLMFLEET_CONTROLLER "lab:8080"`) {
		t.Errorf("bad environment: exit %d: %s", code, errb.String())
	}
}

// A sweep file's request_timeout_sec: 0 (no bound) reaches the job as 0,
// not as the default the controller fills for a field left out.
func TestSweepFileWithoutTimeout(t *testing.T) {
	l := labtest.Start(t, controller.Options{})
	file := testutil.WriteFile(t, filepath.Join(t.TempDir(), "s.yaml"), "agents: [a1]\nworkload:\n  sizes: [720p]\n  cameras: [1]\n  multi_image_sizes: []\n  request_timeout_sec: 0\n")
	var out, errb bytes.Buffer
	if code := run([]string{"sweep", "--controller", l.Ctl.HTTPURL(), "--file", file}, &out, &errb, tokenEnv(l.Ctl.APIToken())); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(out.String(), "\n")
	if len(lines) < 2 {
		t.Fatalf("output %q", out.String())
	}
	job, err := l.Ctl.Job(l.Ctx, strings.TrimSpace(lines[1]))
	if err != nil {
		t.Fatal(err)
	}
	if w := job.Workload; w.RequestTimeoutSec != 0 || len(w.MultiImageSizes) != 0 || w.MaxTokens != 128 {
		t.Errorf("job's workload %+v: want no timeout, no multi-image family, the default tokens", w)
	}
}

// A sweep file's search and judgement reach the job, a flag given on top
// overriding the file's.
func TestSweepSearchAndJudgementReachTheJob(t *testing.T) {
	l := labtest.Start(t, controller.Options{})
	file := testutil.WriteFile(t, filepath.Join(t.TempDir(), "s.yaml"), "agents: [a1]\nworkload:\n  sizes: [720p]\n  cameras: [1, 2]\n"+
		"  multi_image_sizes: []\n  search: 32\n  judgement: {statistic: p90, target_sec: 2}\n")
	var out, errb bytes.Buffer
	if code := run([]string{"sweep", "--controller", l.Ctl.HTTPURL(), "--file", file, "--target", "2.5"}, &out, &errb, tokenEnv(l.Ctl.APIToken())); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(out.String(), "\n")
	if len(lines) < 2 || !strings.HasSuffix(lines[0], "1 jobs, 2 combinations each and the levels a search up to 32 cameras chooses") {
		t.Fatalf("output %q", out.String())
	}
	job, err := l.Ctl.Job(l.Ctx, strings.TrimSpace(lines[1]))
	if err != nil {
		t.Fatal(err)
	}
	if w := job.Workload; w.Search != 32 || w.Judgement != (protocol.Judgement{Statistic: protocol.StatisticP90, TargetSec: 2.5}) {
		t.Errorf("job's workload: search %d, judgement %+v; want 32, p90 and 2.5 s", w.Search, w.Judgement)
	}
}

// --wait draws progress with the shared renderer, labelled with the job's
// agent and deployment, and writes job states above the bars.
func TestSweepWatchShowsEvents(t *testing.T) {
	var errb bytes.Buffer
	c := &cli{stdout: io.Discard, stderr: &errb}
	w := &sweepWatch{c: c, bars: termprogress.New(&errb, false), who: map[string]string{"j1": "a1 d1"}}
	event := func(kind string, v any) client.Event {
		data, _ := json.Marshal(v)
		return client.Event{Kind: kind, Data: data}
	}
	w.show(event(api.EventProgress, protocol.Progress{AgentID: "a1", JobID: "j1", Phase: protocol.PhaseMeasure,
		Combo: protocol.ComboKey{Size: "720p", Images: 1, Cameras: 2}, ComboIdx: 1, ComboN: 4, Done: 3, Total: 8, MeanTTFT: 1.234, Simulated: true}))
	w.show(event(api.EventState, protocol.JobStateChange{JobID: "j1", AgentID: "a1", State: protocol.JobRunning}))
	w.show(event(api.EventState, protocol.JobStateChange{JobID: "j1", AgentID: "a1", State: protocol.JobFailed, Error: "engine died"}))
	want := "a1 d1 [2/4] 720p-1img-2cam 3/8 TTFT 1.23 s SIMULATED\njob j1 on a1: running\njob j1 on a1: failed: engine died\n"
	if errb.String() != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", errb.String(), want)
	}
}

// tokenEnv is an environment with only VLMFLEET_TOKEN set.
func tokenEnv(token string) func(string) string {
	return func(k string) string { return map[string]string{"VLMFLEET_TOKEN": token}[k] }
}

// --power-modes and --power-limits reach the controller, which refuses a
// setting its agent cannot take, naming the field and the agent.
func TestSweepPowerFlagsReachTheController(t *testing.T) {
	l := labtest.Start(t, controller.Options{})
	var out, errb bytes.Buffer
	code := run([]string{"sweep", "--controller", l.Ctl.HTTPURL(), "--agents", "a1", "--power-modes", "MAXN,NO_SUCH_MODE"}, &out, &errb, tokenEnv(l.Ctl.APIToken()))
	if code == 0 || !strings.Contains(errb.String(), `power_modes[`) || !strings.Contains(errb.String(), `agent "a1"`) {
		t.Errorf("exit %d: %s; want the controller's refusal naming power_modes and agent a1", code, errb.String())
	}
}

// On a mixed fleet a power setting applies to the agents that have it; the
// sweep's first lines say, beside its jobs, which agent is measured
// otherwise.
func TestSweepSaysWhereThePowerAxisDoesNotApply(t *testing.T) {
	l := labtest.Start(t, controller.Options{})
	seed, err := l.Ctl.EnrolAgent(l.Ctx, "orin-1")
	if err != nil {
		t.Fatal(err)
	}
	_, js := testutil.ConnectJS(t, l.Ctl.NATSURL(), testutil.NkeySeed(t, seed), nats.CustomInboxPrefix(protocol.AgentInboxPrefix("orin-1")))
	announced := make(chan struct{}, 1)
	t.Cleanup(l.Ctl.OnEvent(func(e api.Event) {
		if v, ok := e.Data.(api.AgentView); ok && e.Kind == api.EventAgent && v.ID == "orin-1" {
			select {
			case announced <- struct{}{}:
			default:
			}
		}
	}))
	hello, _ := json.Marshal(protocol.AgentHello{Schema: 1, AgentID: "orin-1", Hostname: "h2", Simulated: true, Level: protocol.AgentLevel,
		Deployments: []protocol.Deployment{{ID: "d1", Engine: "sim", Model: "m"}},
		Power:       &protocol.PowerControl{Modes: []protocol.PowerMode{{ID: 0, Name: "MAXN"}, {ID: 1, Name: "15W"}}, Mode: "MAXN", Switchable: true}})
	if _, err := js.Publish(l.Ctx, protocol.AgentSubject("orin-1", protocol.KindHello), hello); err != nil {
		t.Fatal(err)
	}
	select {
	case <-announced:
	case <-l.Ctx.Done():
		t.Fatal("orin-1 was never stored")
	}
	var out, errb bytes.Buffer
	code := run([]string{"sweep", "--controller", l.Ctl.HTTPURL(), "--agents", "a1,orin-1", "--power-modes", "MAXN,15W",
		"--sizes", "720p", "--cameras", "1", "--multi-sizes", "none"}, &out, &errb, tokenEnv(l.Ctl.APIToken()))
	if want := "  agent a1: measured at its current power setting (as found), none of the sweep's applying: it reports no power control"; code != 0 || !strings.Contains(out.String(), want) {
		t.Errorf("exit %d: %s%s\nwant the note %q", code, out.String(), errb.String(), want)
	}
}

// --agent-labels selects the agents the controller sweeps: a1 carries no
// label, so the controller answers that no online agent carries it.
func TestSweepAgentLabelsReachTheController(t *testing.T) {
	l := labtest.Start(t, controller.Options{})
	var out, errb bytes.Buffer
	code := run([]string{"sweep", "--controller", l.Ctl.HTTPURL(), "--agent-labels", "site=lab1", "--sizes", "720p", "--cameras", "1"}, &out, &errb, tokenEnv(l.Ctl.APIToken()))
	if code != 1 || !strings.Contains(errb.String(), "agent_labels: no online agent carries {site=lab1} (online: a1 {})") {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
}

// A sweep file's problems are each named at file:line:column, all at once,
// and exit 2 without pointing at the command's help, which cannot fix a
// file.
func TestSweepFileProblemsAtOnceWithoutHelp(t *testing.T) {
	file := testutil.WriteFile(t, filepath.Join(t.TempDir(), "s1.yaml"),
		"agents: [a1]\nworkload:\n  camras: [1, 2]\n  search: true\n  judgment: {statistic: p90}\n")
	var out, errb bytes.Buffer
	code := run([]string{"sweep", "--file", file}, &out, &errb, func(string) string { return "" })
	want := []string{
		"vlmfleet sweep: " + file + `:3:3: unknown field "camras" in workload; did you mean "cameras"?`,
		file + ":4:11: workload.search: true, want a whole number; a search ceiling is a number of cameras: write `search: 64`, not `search: true`",
		file + `:5:3: unknown field "judgment" in workload; did you mean "judgement"?`,
	}
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	if len(lines) != len(want) {
		t.Fatalf("stderr %q, want %d lines", errb.String(), len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d %q, want %q", i+1, lines[i], w)
		}
	}
}
