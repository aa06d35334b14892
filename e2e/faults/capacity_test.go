package faults

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"github.com/shirou/gopsutil/v4/process"

	"github.com/vlmfleet/vlmfleet/controller"
	apiv "github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/harness/ingestload"
	"github.com/vlmfleet/vlmfleet/harness/simlab"
	"github.com/vlmfleet/vlmfleet/harness/swarm"
	"github.com/vlmfleet/vlmfleet/internal/backoff"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
	"github.com/vlmfleet/vlmfleet/protocol"
)

const (
	// capacityEnv runs TestCapacity: "1" for the default steps (200 and
	// 1,000 agents), else the steps as "200,1000".
	capacityEnv = "VLMFLEET_CAPACITY"
	// capacityIngestEnv is how many result messages the ingest step
	// publishes of each shape (default 30,000: some seconds at the rates
	// measured, so that the start and the end weigh little).
	capacityIngestEnv = "VLMFLEET_CAPACITY_INGEST"
	// capacityProfilesEnv names a directory where the benchmark saves the
	// controller's profiles: a heap profile at each step, idle, and a CPU
	// profile of the ingest (go tool pprof reads them).
	capacityProfilesEnv = "VLMFLEET_CAPACITY_PROFILES"
	// idleWindow is how long the controller is watched idle at each step.
	idleWindow = 20 * time.Second
	// agentsRequests is how many GET /api/agents are timed at each step.
	agentsRequests = 60
)

// TestCapacity sizes one controller (a process of its own, with embedded
// NATS) against a swarm of simulated agents (harness/swarm, in this
// process: each agent with its own connection and credentials), in steps
// of fleet size. At each step it reports the controller's idle CPU and
// RSS, the heartbeats it takes in and their delay, GET /api/agents
// (p50/p99, body size), and a one-combination sweep over every agent
// (time, peak RSS, /api/agents meanwhile). Then it measures the ingest
// rate: result messages the size agents on real devices publish
// (ingestload: the default workload's 8-camera combination, and 8 cameras
// measured for 30 s), published as fast as JetStream takes them, and the
// time until the controller has stored them all. Run it with
// ./scripts/capacity.
func TestCapacity(t *testing.T) {
	env := os.Getenv(capacityEnv)
	if env == "" {
		t.Skipf("capacity benchmark: run ./scripts/capacity (or set %s=1)", capacityEnv)
	}
	steps, err := capacitySteps(env)
	if err != nil {
		t.Fatal(err)
	}
	ingestN := 30000
	if v := os.Getenv(capacityIngestEnv); v != "" {
		if ingestN, err = strconv.Atoi(v); err != nil || ingestN < 1 {
			t.Fatalf("%s=%q: want a number of messages", capacityIngestEnv, v)
		}
	}
	ctx := testContext(t, 45*time.Minute)
	l := newLab(t, ctx, labOptions{speedup: 50})
	images, err := simlab.Pictures("")
	if err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(l.dir, "logs", "swarm.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	swarmLog := zerolog.New(logf).Level(zerolog.WarnLevel).With().Timestamp().Logger()
	token, err := os.ReadFile(filepath.Join(l.dir, "data", "api-token"))
	if err != nil {
		t.Fatal(err)
	}
	api := &capacityAPI{base: "http://" + l.httpAddr, token: strings.TrimSpace(string(token))}

	var rows []capacityRow
	var all []string
	var lastSweep protocol.Sweep
	for _, n := range steps {
		add := n - len(all)
		s, err := swarm.Start(ctx, swarm.Options{Count: add, Prefix: fmt.Sprintf("cap%d", n), Client: l.cl,
			Device: simDevice, Models: []string{simModel}, Speedup: 50, LogDir: filepath.Join(l.dir, "logs"),
			Images: images, Log: swarmLog, Enrolers: min(add, capacityEnrolers)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Stop() })
		all = append(all, s.IDs()...)
		r := capacityRow{agents: n, enrolled: add, enrolAll: s.Enrolled, enrolEach: s.Enrolled / time.Duration(add)}
		began := time.Now()
		waitOnline(t, ctx, api, n)
		r.online = time.Since(began)
		t.Logf("capacity: %d agents: enrolled %d in %v, all online %v later", n, add, s.Enrolled.Round(time.Millisecond), r.online.Round(time.Millisecond))

		profiled := make(chan struct{})
		go func() { // the idle window's CPU, for what heartbeats cost
			defer close(profiled)
			saveProfile(t, ctx, api, fmt.Sprintf("idle-cpu-%d.pprof", n), fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(idleWindow.Seconds()/2)))
		}()
		r.idle = watchIdle(t, ctx, l, api, idleWindow)
		<-profiled
		saveProfile(t, ctx, api, fmt.Sprintf("heap-%d.pprof", n), "/debug/pprof/heap")
		r.agentsP50, r.agentsP99, r.agentsBytes = timeAgents(t, ctx, api, agentsRequests)

		w := workload(4)
		w.Cameras = []int{1}
		m := watchController(ctx, t, l)
		began = time.Now()
		lastSweep = l.submit(w, all...)
		l.waitDone(lastSweep)
		r.sweep = time.Since(began)
		st := m.stop()
		saveProfile(t, ctx, api, fmt.Sprintf("heap-%d-after-sweep.pprof", n), "/debug/pprof/heap")
		r.sweepPeakRSS, r.sweepCPU = st.maxRSS, st.cpu
		r.sweepAgentsP50, r.sweepAgentsP99, r.sweepAgentsMax = st.pct(0.5), st.pct(0.99), st.pct(1)
		o := l.outcome(lastSweep, nil)
		r.outcome = fmt.Sprintf("%d jobs: lost %d, duplicated %d, second attempts %d", o.jobs, o.lost, o.duplicated, o.secondAttempts)
		t.Logf("capacity: %d agents: %s", n, r.outcome)
		if ended := s.Ended(); len(ended) > 0 {
			t.Errorf("%d agents ended on their own: %v", len(ended), ended[:min(len(ended), 5)])
		}
		rows = append(rows, r)
		o.check(t)
		for _, line := range capacityTable(rows, nil) {
			t.Log("capacity: " + line)
		}
	}
	// Two shapes: the default workload's 8-camera combination (8 request
	// records, 6 s of telemetry) and 8 cameras measured for 30 s (80
	// records).
	runs := ingestRuns(t, ctx, l, lastSweep)
	ings := []ingestStats{
		measureIngest(t, ctx, l, api, runs, ingestN, 0, ingestload.Shape{}, "ingest-cpu.pprof"),
		measureIngest(t, ctx, l, api, runs, ingestN, 1, ingestload.Shape{Records: 80, Seconds: 30}, "ingest-30s-cpu.pprof"),
	}
	jobs, scrapeP50, scrapeP99 := metricsAtJobs(t, ctx, l, api, all)
	t.Log("capacity: " + strings.Repeat("-", 60))
	for _, line := range capacityTable(rows, ings) {
		t.Log("capacity: " + line)
	}
	t.Logf("capacity: /metrics with %d jobs and %d agents: p50 %.1f ms, p99 %.1f ms (%d scrapes; target under 20 ms)",
		jobs, len(all), float64(scrapeP50)/float64(time.Millisecond), float64(scrapeP99)/float64(time.Millisecond), metricsScrapes)
}

func capacitySteps(env string) ([]int, error) {
	if env == "1" {
		return []int{200, 1000}, nil
	}
	var out []int
	for _, f := range strings.Split(env, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || (len(out) > 0 && n <= out[len(out)-1]) {
			return nil, fmt.Errorf("%s=%q: want 1, or growing agent counts such as 200,1000", capacityEnv, env)
		}
		out = append(out, n)
	}
	return out, nil
}

type capacityRow struct {
	agents               int
	enrolled             int
	enrolAll             time.Duration
	enrolEach, online    time.Duration
	idle                 idleStats
	agentsP50, agentsP99 time.Duration
	agentsBytes          int
	sweep                time.Duration
	sweepPeakRSS         float64
	sweepCPU             time.Duration
	sweepAgentsP50       time.Duration
	sweepAgentsP99       time.Duration
	sweepAgentsMax       time.Duration
	outcome              string
}

type idleStats struct {
	cpuPct, rss           float64
	heartbeatsPerSec      float64
	delayP50, delayP99    float64 // seconds, bucket upper bounds
	goroutines, heapInuse float64
}

type ingestStats struct {
	// msgBytes is the messages' JSON, wireBytes what was sent: compressed,
	// as agents send results to a controller that takes them so.
	messages, msgBytes, wireBytes, records, samples int
	publish, stored                                 time.Duration
	rejected                                        float64
	// controllerCPU and testCPU are the CPU the controller and this
	// process (the publisher and the swarm) used from the first publish
	// until all was stored.
	controllerCPU, testCPU time.Duration
	// lists are busyLists timed while the messages were being stored.
	lists []listTiming
}

// capacityAPI is the controller's HTTP API read raw: the body's size and
// the metrics' text are what the benchmark reports.
type capacityAPI struct {
	base, token string
}

func (a *capacityAPI) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s: %.200s", path, resp.Status, body)
	}
	return body, err
}

// metrics reads /metrics into series → value (series as written, labels
// included).
func (a *capacityAPI) metrics(ctx context.Context) (map[string]float64, error) {
	body, err := a.get(ctx, "/metrics")
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out, sc.Err()
}

// saveProfile saves the controller's profile at path (under
// /debug/pprof/) as file in $VLMFLEET_CAPACITY_PROFILES, if set.
func saveProfile(t *testing.T, ctx context.Context, api *capacityAPI, file, path string) {
	dir := os.Getenv(capacityProfilesEnv)
	if dir == "" {
		return
	}
	body, err := api.get(ctx, path)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, file), body, 0o644)
	}
	if err != nil {
		t.Errorf("profile %s: %v", path, err)
	}
}

// waitOnline waits until the controller shows n agents online.
func waitOnline(t *testing.T, ctx context.Context, api *capacityAPI, n int) {
	t.Helper()
	var online int
	err := poll.Retry(ctx, func(int) error {
		body, err := api.get(ctx, "/api/agents")
		if err != nil {
			return err
		}
		var agents []apiv.AgentView
		if err := json.Unmarshal(body, &agents); err != nil {
			return backoff.Permanent(err)
		}
		online = 0
		for _, a := range agents {
			if a.Online {
				online++
			}
		}
		if online < n {
			return fmt.Errorf("%d of %d agents online", online, n)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("agents never all online: %v", err)
	}
}

// watchIdle watches the controller for d with nothing to do but its
// agents' heartbeats.
func watchIdle(t *testing.T, ctx context.Context, l *lab, api *capacityAPI, d time.Duration) idleStats {
	t.Helper()
	p, err := process.NewProcessWithContext(ctx, int32(l.ctrl.Pid()))
	if err != nil {
		t.Fatal(err)
	}
	m0, err := api.metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t0, err := p.TimesWithContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	select {
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	case <-time.After(d): // the window itself is what is measured
	}
	t1, err := p.TimesWithContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(began).Seconds()
	m1, err := api.metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := p.MemoryInfoWithContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := idleStats{
		cpuPct:           100 * (t1.User + t1.System - t0.User - t0.System) / took,
		rss:              float64(mem.RSS),
		heartbeatsPerSec: (m1["vlmfleet_heartbeats_total"] - m0["vlmfleet_heartbeats_total"]) / took,
		goroutines:       m1["go_goroutines"],
		heapInuse:        m1["go_memstats_heap_inuse_bytes"],
	}
	s.delayP50 = histogramQuantile(m0, m1, "vlmfleet_heartbeat_delay_seconds", 0.5)
	s.delayP99 = histogramQuantile(m0, m1, "vlmfleet_heartbeat_delay_seconds", 0.99)
	return s
}

// histogramQuantile is the upper bound of the bucket that holds the q
// quantile of what the histogram name took in between two scrapes.
func histogramQuantile(m0, m1 map[string]float64, name string, q float64) float64 {
	type bucket struct{ le, n float64 }
	var bs []bucket
	prefix := name + `_bucket{le="`
	for k, v := range m1 {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		le, err := strconv.ParseFloat(strings.TrimSuffix(k[len(prefix):], `"}`), 64)
		if err != nil {
			continue
		}
		bs = append(bs, bucket{le, v - m0[k]})
	}
	slices.SortFunc(bs, func(a, b bucket) int { return int(math.Copysign(1, a.le-b.le)) })
	if len(bs) == 0 || bs[len(bs)-1].n == 0 {
		return math.NaN()
	}
	total := bs[len(bs)-1].n
	for _, b := range bs {
		if b.n >= q*total {
			return b.le
		}
	}
	return math.Inf(1)
}

// timeAgents times n GET /api/agents one after another.
func timeAgents(t *testing.T, ctx context.Context, api *capacityAPI, n int) (p50, p99 time.Duration, size int) {
	t.Helper()
	var lat []time.Duration
	for range n {
		began := time.Now()
		body, err := api.get(ctx, "/api/agents")
		if err != nil {
			t.Fatal(err)
		}
		lat = append(lat, time.Since(began))
		size = len(body)
	}
	st := watchStats{latencies: lat}
	return st.pct(0.5), st.pct(0.99), size
}

// ingestRuns are up to 100 runs of a sweep that stored a combination:
// the runs the ingest's messages are results of, with their real headers.
func ingestRuns(t *testing.T, ctx context.Context, l *lab, s protocol.Sweep) []protocol.Run {
	t.Helper()
	v, err := l.cl.Sweep(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	var runs []protocol.Run
	for _, j := range v.JobList {
		if j.RunID == "" {
			continue
		}
		r, err := l.cl.Run(ctx, j.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Combinations) == 0 {
			continue // its job failed (the check of the sweep says so)
		}
		runs = append(runs, r)
		if len(runs) == 100 {
			break // enough runs to spread the messages over
		}
	}
	if len(runs) == 0 {
		t.Fatal("the sweep stored no run")
	}
	return runs
}

// measureIngest publishes n result messages of the shape (ingestload:
// the size and make-up of what agents on real devices publish) for the
// runs into the events stream, as fast as JetStream acknowledges them,
// and times the controller storing them: until its durable consumer has
// acknowledged the last (it acknowledges a message once stored), read
// from JetStream rather than from the controller, which the reading would
// load. It publishes as the controller's own NATS user: the agents' users
// may publish only their own subjects, and the messages name the agents
// of real runs.
func measureIngest(t *testing.T, ctx context.Context, l *lab, api *capacityAPI, runs []protocol.Run, n, pass int, shape ingestload.Shape, profile string) ingestStats {
	t.Helper()
	msgs, err := ingestload.Build(runs, n, pass, shape)
	if err != nil {
		t.Fatal(err)
	}
	st := ingestStats{messages: n, records: shape.Records, samples: shape.Samples()}
	if st.records == 0 {
		st.records = protocol.DefaultWorkload().RequestsPerLevel
	}
	for _, m := range msgs {
		st.msgBytes += len(m.JSON)
		st.wireBytes += len(m.Data)
	}
	_, js := testutil.ConnectJS(t, "nats://"+l.natsAddr, testutil.NkeyFile(t, filepath.Join(l.dir, "data", controller.ControllerSeedFile)),
		nats.Timeout(30*time.Second))
	cons, err := js.Consumer(ctx, protocol.StreamEvents, controller.ConsumerName)
	if err != nil {
		t.Fatal(err)
	}
	m0, err := api.metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	profiled := make(chan struct{})
	go func() {
		defer close(profiled)
		saveProfile(t, ctx, api, profile, "/debug/pprof/profile?seconds=5")
	}()
	defer func() { <-profiled }()
	ctrl, err := process.NewProcessWithContext(ctx, int32(l.ctrl.Pid()))
	if err != nil {
		t.Fatal(err)
	}
	c0, err := ctrl.TimesWithContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	self0 := testutil.ProcessCPU(t)
	lists := l.startListProbe(busyLists, 0)
	began := time.Now()
	last, err := ingestload.Publish(ctx, js, msgs)
	if err != nil {
		t.Fatal(err)
	}
	st.publish = time.Since(began)
	err = backoff.Policy{First: 5 * time.Millisecond, Max: 20 * time.Millisecond}.Retry(ctx, func(int) error {
		info, err := cons.Info(ctx)
		if err != nil {
			return err
		}
		if info.AckFloor.Stream < last {
			return fmt.Errorf("stored up to stream sequence %d of %d", info.AckFloor.Stream, last)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("ingest: %v", err)
	}
	st.stored = time.Since(began)
	st.lists = lists.timings()
	c1, err := ctrl.TimesWithContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st.controllerCPU = time.Duration((c1.User + c1.System - c0.User - c0.System) * float64(time.Second))
	st.testCPU = testutil.ProcessCPU(t) - self0
	m1, err := api.metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const ingested = `vlmfleet_messages_ingested_total{kind="result"}`
	const rejected = `vlmfleet_messages_rejected_total{kind="result"}`
	st.rejected = m1[rejected] - m0[rejected]
	if got := m1[ingested] - m0[ingested] + st.rejected; got != float64(n) {
		t.Errorf("ingest: the controller counts %.0f result messages settled, want %d", got, n)
	}
	if st.rejected > 0 {
		t.Errorf("ingest: %.0f of %d messages rejected", st.rejected, n)
	}
	return st
}

func capacityTable(rows []capacityRow, ings []ingestStats) []string {
	mib := func(b float64) string { return fmt.Sprintf("%.0f MiB", b/(1<<20)) }
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
	lines := []string{fmt.Sprintf("%-34s", "agents")}
	add := func(name string, f func(r capacityRow) string) {
		line := fmt.Sprintf("%-34s", name)
		for _, r := range rows {
			line += fmt.Sprintf(" | %16s", f(r))
		}
		lines = append(lines, line)
	}
	for _, r := range rows {
		lines[0] += fmt.Sprintf(" | %16d", r.agents)
	}
	add("enrolment, each", func(r capacityRow) string { return ms(r.enrolEach) })
	add("enrolments at once, all done in", func(r capacityRow) string {
		return fmt.Sprintf("%d in %s", r.enrolled, r.enrolAll.Round(10*time.Millisecond))
	})
	add("all online after start", func(r capacityRow) string { return r.online.Round(100 * time.Millisecond).String() })
	add("idle CPU (of one core)", func(r capacityRow) string { return fmt.Sprintf("%.1f%%", r.idle.cpuPct) })
	add("idle RSS", func(r capacityRow) string { return mib(r.idle.rss) })
	add("idle Go heap in use", func(r capacityRow) string { return mib(r.idle.heapInuse) })
	add("idle goroutines", func(r capacityRow) string { return fmt.Sprintf("%.0f", r.idle.goroutines) })
	add("heartbeats taken in", func(r capacityRow) string { return fmt.Sprintf("%.0f/s", r.idle.heartbeatsPerSec) })
	add("heartbeat delay p50 / p99 (<=)", func(r capacityRow) string {
		return fmt.Sprintf("%gs / %gs", r.idle.delayP50, r.idle.delayP99)
	})
	add("GET /api/agents idle p50", func(r capacityRow) string { return ms(r.agentsP50) })
	add("GET /api/agents idle p99", func(r capacityRow) string { return ms(r.agentsP99) })
	add("GET /api/agents body", func(r capacityRow) string { return fmt.Sprintf("%d KB", r.agentsBytes/1000) })
	add("one-combination sweep, all agents", func(r capacityRow) string { return r.sweep.Round(100 * time.Millisecond).String() })
	add("  controller CPU in it", func(r capacityRow) string { return r.sweepCPU.Round(100 * time.Millisecond).String() })
	add("  peak RSS", func(r capacityRow) string { return mib(r.sweepPeakRSS) })
	add("  GET /api/agents p50/p99/max", func(r capacityRow) string {
		return ms(r.sweepAgentsP50) + " / " + ms(r.sweepAgentsP99) + " / " + ms(r.sweepAgentsMax)
	})
	lines = append(lines, "")
	for _, ing := range ings {
		each := float64(ing.msgBytes) / float64(ing.messages)
		secs := ing.stored.Seconds()
		lines = append(lines,
			fmt.Sprintf("ingest: %d result messages of an 8-camera combination (%d request records, %d telemetry samples, %.1f KB of JSON each, %.1f KB compressed, %.1f MB of JSON in all)",
				ing.messages, ing.records, ing.samples, each/1000, float64(ing.wireBytes)/float64(ing.messages)/1000, float64(ing.msgBytes)/1e6),
			fmt.Sprintf("ingest: published in %v, all stored %v after the first publish", ing.publish.Round(time.Millisecond), ing.stored.Round(time.Millisecond)),
			fmt.Sprintf("ingest: %.0f combinations/s, %.1f MB/s of JSON stored (target 5,000 combinations/s)", float64(ing.messages)/secs, float64(ing.msgBytes)/1e6/secs),
			fmt.Sprintf("ingest: CPU meanwhile: the controller %.2f cores (%.0f µs a message), the publisher and the swarm %.2f cores",
				ing.controllerCPU.Seconds()/secs, float64(ing.controllerCPU.Microseconds())/float64(ing.messages), ing.testCPU.Seconds()/secs),
		)
		for _, l := range ing.lists {
			lines = append(lines, fmt.Sprintf("ingest: GET %s meanwhile: p50 %s, p99 %s, max %s (%d requests; target p99 under 100 ms)",
				l.path, ms(l.p50), ms(l.p99), ms(l.max), l.n))
		}
	}
	return lines
}
