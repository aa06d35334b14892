package controller

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
	"github.com/vlmfleet/vlmfleet/internal/testutil/natstest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

const waitLimit = 10 * time.Second

// waitCtx is a context that ends after waitLimit, or with the test.
func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

func startController(t *testing.T, dir string) *Controller {
	t.Helper()
	return startControllerWith(t, Options{DataDir: dir})
}

// startControllerWith starts a controller with opt, its NATS server on a
// loopback port and its HTTP API on one too unless opt.HTTPAddr is set,
// and closes it when the test ends.
func startControllerWith(t *testing.T, opt Options) *Controller {
	t.Helper()
	return startControllerLogging(t, opt, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
}

// startControllerLogging is startControllerWith for a test that reads
// the controller's log: it logs to log.
func startControllerLogging(t *testing.T, opt Options, log zerolog.Logger) *Controller {
	t.Helper()
	opt.NATSListen = "127.0.0.1:-1"
	if opt.HTTPAddr == "" {
		opt.HTTPAddr = "127.0.0.1:0"
	}
	opt.Log = log
	c, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		_ = c.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	apiTokens.Store(strings.TrimPrefix(c.HTTPURL(), "http://"), c.APIToken())
	return c
}

// startExternalNATS starts a NATS server with JetStream, for a controller
// to use as an external server, that admits the nkey users given, or
// anyone when none is.
func startExternalNATS(t *testing.T, users ...*server.NkeyUser) *server.Server {
	t.Helper()
	return natstest.Start(t, &server.Options{JetStream: true, StoreDir: t.TempDir(), Nkeys: users})
}

// apiTokens maps the host:port of each test's controller to its API token,
// which request sends.
var apiTokens sync.Map

// eventLog collects the controller's live events for tests to wait on.
type eventLog struct {
	mu     sync.Mutex
	events []api.Event
	signal chan struct{}
}

func watchEvents(t *testing.T, c *Controller) *eventLog {
	l := &eventLog{signal: make(chan struct{}, 1)}
	cancel := c.OnEvent(func(e api.Event) {
		l.mu.Lock()
		l.events = append(l.events, e)
		l.mu.Unlock()
		select {
		case l.signal <- struct{}{}:
		default:
		}
	})
	t.Cleanup(cancel)
	return l
}

// waitFor blocks until n events match, or fails the test.
func (l *eventLog) waitFor(t *testing.T, n int, match func(api.Event) bool) []api.Event {
	t.Helper()
	got, ok := l.waitWithin(waitLimit, n, match)
	if !ok {
		t.Fatalf("waited %s for %d matching events, saw %d", waitLimit, n, len(got))
	}
	return got
}

// waitWithin is waitFor for a test that tries again: it reports whether n
// events matched within limit instead of failing.
func (l *eventLog) waitWithin(limit time.Duration, n int, match func(api.Event) bool) ([]api.Event, bool) {
	deadline := time.After(limit)
	for {
		l.mu.Lock()
		var got []api.Event
		for _, e := range l.events {
			if match(e) {
				got = append(got, e)
			}
		}
		l.mu.Unlock()
		if len(got) >= n {
			return got, true
		}
		select {
		case <-l.signal:
		case <-deadline:
			return got, false
		}
	}
}

func kindIs(kind string) func(api.Event) bool {
	return func(e api.Event) bool { return e.Kind == kind }
}

// helloStored matches the agent event that follows storing hello h (not an
// online/offline transition, which the watcher may emit at any time).
func helloStored(h protocol.AgentHello) func(api.Event) bool {
	return func(e api.Event) bool {
		v, ok := e.Data.(api.AgentView)
		return e.Kind == api.EventAgent && ok && v.ID == h.AgentID && v.StartedAt.Equal(h.StartedAt)
	}
}

// eventually polls cond until it holds; used only where no event exists
// to wait on (rejections, consumer counters).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", waitLimit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fakeAgent publishes exactly what protocol says an agent publishes.
type fakeAgent struct {
	id  string
	nc  *nats.Conn
	js  jetstream.JetStream
	ctl *Controller
}

// newFakeAgent enrols agent id and connects with its credentials, so it
// has exactly the permissions a real agent has.
func newFakeAgent(t *testing.T, c *Controller, id string) *fakeAgent {
	t.Helper()
	var opts []nats.Option
	if c.NATSAuth() == api.NATSAuthNkeys {
		opts = agentAuth(t, c, id)
	}
	nc, js := testutil.ConnectJS(t, c.NATSURL(), opts...)
	return &fakeAgent{id: id, nc: nc, js: js, ctl: c}
}

// boundJobConsumer makes the agent's job consumer with cfg as the
// controller (only it may make one; cfg is what the test needs) and binds
// it as the agent, which may only look it up.
func (a *fakeAgent) boundJobConsumer(t *testing.T, cfg jetstream.ConsumerConfig) jetstream.Consumer {
	t.Helper()
	_, admin := adminConn(t, a.ctl)
	if _, err := admin.CreateOrUpdateConsumer(waitCtx(t), protocol.StreamJobs, cfg); err != nil {
		t.Fatal(err)
	}
	cons, err := a.js.Consumer(waitCtx(t), protocol.StreamJobs, protocol.JobConsumerName(a.id))
	if err != nil {
		t.Fatalf("agent %s binding its job consumer: %v", a.id, err)
	}
	return cons
}

// agentAuth enrols agent id and returns the options that connect as it.
func agentAuth(t *testing.T, c *Controller, id string) []nats.Option {
	t.Helper()
	seed, err := c.EnrolAgent(waitCtx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	return []nats.Option{testutil.NkeySeed(t, seed), nats.CustomInboxPrefix(protocol.AgentInboxPrefix(id))}
}

// adminConn connects with the controller's own credentials, for a test
// that plays the controller or an operator.
func adminConn(t *testing.T, c *Controller) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	return testutil.ConnectJS(t, c.NATSURL(), testutil.NkeyFile(t, c.NATSSeedFile()))
}

// announced watches c's events and starts a fake agent that announces the
// deployments; it returns once the agent's hello is stored.
func announced(t *testing.T, c *Controller, id string, deployments ...string) (*eventLog, *fakeAgent) {
	t.Helper()
	ev := watchEvents(t, c)
	a := newFakeAgent(t, c, id)
	ev.waitFor(t, 1, helloStored(a.hello(t, deployments...)))
	return ev, a
}

// submit submits the sweep, failing the test when it is refused.
func submit(t *testing.T, c *Controller, s protocol.Sweep) protocol.Sweep {
	t.Helper()
	s, err := c.SubmitSweep(waitCtx(t), s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (a *fakeAgent) publish(t *testing.T, kind string, v any, msgID string) {
	t.Helper()
	data, ok := v.([]byte)
	if !ok {
		var err error
		if data, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	var opts []jetstream.PublishOpt
	if msgID != "" {
		opts = append(opts, jetstream.WithMsgID(msgID))
	}
	if _, err := a.js.Publish(waitCtx(t), protocol.AgentSubject(a.id, kind), data, opts...); err != nil {
		t.Fatalf("publish %s: %v", kind, err)
	}
}

func (a *fakeAgent) hello(t *testing.T, deployments ...string) protocol.AgentHello {
	t.Helper()
	h := protocol.AgentHello{
		Schema: protocol.SchemaVersion, Level: protocol.AgentLevel, AgentID: a.id, Hostname: "host-" + a.id, Version: "test",
		StartedAt: time.Now().UTC(), Simulated: true,
		Device: protocol.DeviceFacts{Name: "Jetson AGX Orin", Kind: protocol.DeviceSimulated},
	}
	for _, d := range deployments {
		h.Deployments = append(h.Deployments, protocol.Deployment{ID: d, Engine: "sim", Model: "Qwen3-VL-4B-Instruct", ParamsB: 4.4, Quantization: "Q8_0", Simulated: true})
	}
	a.publish(t, protocol.KindHello, h, protocol.HelloMsgID(a.id, h.StartedAt.UnixNano()))
	return h
}

func (a *fakeAgent) state(t *testing.T, jobID string, st protocol.JobState, attempt int, msgID bool) {
	t.Helper()
	ch := protocol.JobStateChange{Schema: 1, JobID: jobID, AgentID: a.id, State: st, Time: time.Now().UTC(), Attempt: attempt, RunID: store.RunIDFor(jobID, attempt)}
	id := ""
	if msgID {
		id = protocol.StateMsgID(jobID, st, attempt)
	}
	a.publish(t, protocol.KindState, ch, id)
}

func testWorkload() protocol.Workload {
	w := protocol.DefaultWorkload()
	w.Sizes = []string{"480p", "720p"}
	w.Cameras = []int{1, 2}
	w.RequestsPerLevel = 2
	w.MultiImageSizes, w.ImagesPerRequest, w.MultiImageRequests = nil, nil, 0
	return w
}

func testRun(id, agent string) protocol.Run {
	return protocol.Run{
		Schema: protocol.SchemaVersion, ID: id, JobID: "job-1", AgentID: agent, Simulated: true, Source: protocol.SourceLab,
		Config:   protocol.Configuration{Model: "Qwen3-VL-4B-Instruct", ParamsB: 4.4, Quantization: "Q8_0", Engine: "llama.cpp", Device: "Jetson AGX Orin"},
		Workload: testWorkload(), Status: protocol.RunRunning, CreatedAt: time.Now().UTC(),
	}
}

func testCombo(size string, cams int) *protocol.Combination {
	return &protocol.Combination{
		ComboKey: protocol.ComboKey{Size: size, Images: 1, Cameras: cams}, Completed: 2,
		TTFT: protocol.Stats{N: 2, Mean: 1.31, P50: 1.3, P90: 1.32, P99: 1.32, Min: 1.3, Max: 1.32},
		Requests: []protocol.RequestRecord{
			{Camera: 0, Seq: 0, TTFT: 1.3, CompletionTokens: 128, TPS: 28},
			{Camera: 0, Seq: 1, TTFT: 1.32, CompletionTokens: 128, TPS: 28},
		},
	}
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if v != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("GET %s: %v in %s", url, err, body)
		}
	}
	return resp.StatusCode
}

func postJSON(t *testing.T, url, body string) (int, string) {
	t.Helper()
	return request(t, http.MethodPost, url, body)
}

// request sends body (none when empty) and returns the status and what came back.
func request(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req := testutil.NewRequest(t, method, url, body)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok, ok := apiTokens.Load(req.URL.Host); ok {
		req.Header.Set("Authorization", "Bearer "+tok.(string))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
