package controller

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// startFleetController starts a controller whose agents stay online for
// the whole test: they send heartbeats only when the test says, and a slow
// host must not take them offline between the hello and a sweep.
func startFleetController(t *testing.T) *Controller {
	t.Helper()
	return startControllerWith(t, Options{DataDir: t.TempDir(), HeartbeatTimeout: 10 * time.Minute})
}

// helloLabelled announces the agent with labels and waits until it is stored.
func helloLabelled(t *testing.T, c *Controller, id string, labels map[string]string, deployments ...string) *fakeAgent {
	t.Helper()
	return helloWith(t, c, id, func(h *protocol.AgentHello) { h.Labels = labels }, deployments...)
}

// helloWith announces a simulated AGX Orin offering the deployments, as
// edit changes its hello, and waits until the hello is stored.
func helloWith(t *testing.T, c *Controller, id string, edit func(*protocol.AgentHello), deployments ...string) *fakeAgent {
	t.Helper()
	ev := watchEvents(t, c)
	a := newFakeAgent(t, c, id)
	h := protocol.AgentHello{
		Schema: protocol.SchemaVersion, Level: protocol.AgentLevel, AgentID: id, Hostname: "host-" + id, Version: "test",
		StartedAt: time.Now().UTC(), Simulated: true,
		Device: protocol.DeviceFacts{Name: "Jetson AGX Orin", Kind: protocol.DeviceSimulated},
	}
	for _, d := range deployments {
		h.Deployments = append(h.Deployments, protocol.Deployment{ID: d, Engine: "sim", Model: "Qwen3-VL-4B-Instruct", ParamsB: 4.4, Quantization: "Q8_0", Simulated: true})
	}
	edit(&h)
	a.publish(t, protocol.KindHello, h, protocol.HelloMsgID(id, h.StartedAt.UnixNano()))
	ev.waitFor(t, 1, helloStored(h))
	return a
}

// controlMessages subscribes as the agent to its control subject.
func (a *fakeAgent) controlMessages(t *testing.T) chan *nats.Msg {
	t.Helper()
	ch := make(chan *nats.Msg, 64)
	sub, err := a.nc.ChanSubscribe(protocol.ControlSubject(a.id), ch)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := a.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return ch
}

// nextDrain waits for a Drain on the agent's control subject.
func nextDrain(t *testing.T, ch chan *nats.Msg) protocol.Drain {
	t.Helper()
	select {
	case m := <-ch:
		_, d, err := protocol.DecodeControl(m.Data)
		if err != nil || d == nil {
			t.Fatalf("control message %s: %v, want a drain", m.Data, err)
		}
		return *d
	case <-time.After(waitLimit):
		t.Fatalf("no drain on the control subject within %s", waitLimit)
	}
	return protocol.Drain{}
}

func (a *fakeAgent) drainedHeartbeat(t *testing.T, drained bool) {
	t.Helper()
	hb, _ := json.Marshal(protocol.Heartbeat{Schema: 1, AgentID: a.id, Time: time.Now(), State: protocol.AgentIdle, Seq: 2, Drained: drained})
	if err := a.nc.Publish(protocol.AgentSubject(a.id, protocol.KindHeartbeat), hb); err != nil {
		t.Fatal(err)
	}
	if err := a.nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

func agentByID(t *testing.T, c *Controller, id string) api.AgentView {
	t.Helper()
	var agents []api.AgentView
	if code := getJSON(t, c.HTTPURL()+"/api/agents", &agents); code != http.StatusOK {
		t.Fatalf("GET /api/agents: %d", code)
	}
	for _, a := range agents {
		if a.ID == id {
			return a
		}
	}
	t.Fatalf("/api/agents lacks %s", id)
	return api.AgentView{}
}

// Draining an agent through the API: only with the token; the agent is
// told on its control subject, and told again while its heartbeats say
// otherwise; new sweeps skip it, or refuse it when they name it; taking it
// back lets sweeps use it again.
func TestDrainAgentAPI(t *testing.T) {
	c := startFleetController(t)
	a1 := helloLabelled(t, c, "a1", nil, "d1")
	helloLabelled(t, c, "a2", nil, "d1")
	ctl := a1.controlMessages(t)
	base := c.HTTPURL()

	resp, err := http.Post(base+"/api/agents/a1/drain", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("drain without the token: %d, want 401", resp.StatusCode)
	}
	if code, body := request(t, http.MethodGet, base+"/api/agents/a1/drain", ""); code != http.StatusMethodNotAllowed || !strings.Contains(body, "POST to drain") {
		t.Errorf("GET drain: %d %s, want 405 naming POST and DELETE", code, body)
	}
	if code, body := postJSON(t, base+"/api/agents/nobody/drain", ""); code != http.StatusNotFound {
		t.Errorf("drain an unknown agent: %d %s, want 404", code, body)
	}

	code, body := postJSON(t, base+"/api/agents/a1/drain", "")
	var v api.AgentView
	if code != http.StatusOK || json.Unmarshal([]byte(body), &v) != nil || !v.Drained || v.DrainedAt.IsZero() || v.DrainConfirmed {
		t.Fatalf("drain a1: %d %s", code, body)
	}
	if d := nextDrain(t, ctl); !d.Drained {
		t.Fatalf("the agent was told %+v, want drained", d)
	}

	// A heartbeat that does not say drained (the message was lost, or the
	// agent restarted) is answered with the drain again.
	a1.drainedHeartbeat(t, false)
	if d := nextDrain(t, ctl); !d.Drained {
		t.Fatalf("after a heartbeat without the drain the agent was told %+v", d)
	}
	a1.drainedHeartbeat(t, true)
	eventually(t, "the drain confirmed by a heartbeat", func() bool { return agentByID(t, c, "a1").DrainConfirmed })

	s := submit(t, c, protocol.Sweep{Workload: testWorkload()})
	if len(s.Jobs) != 1 {
		t.Fatalf("sweep of every online agent made jobs %v, want one (a2's)", s.Jobs)
	}
	var sv api.SweepView
	getJSON(t, base+"/api/sweeps/"+s.ID, &sv)
	for what, skipped := range map[string][]protocol.SkippedAgent{"the answer": s.Skipped, "the record": sv.Skipped} {
		if len(skipped) != 1 || skipped[0].AgentID != "a1" || !strings.HasPrefix(skipped[0].Reason, "drained") {
			t.Errorf("%s says it skipped %+v, want a1 as drained", what, skipped)
		}
	}
	for _, j := range sv.JobList {
		if j.AgentID != "a2" {
			t.Errorf("the sweep gave job %s to drained agent %s", j.ID, j.AgentID)
		}
	}
	code, body = postJSON(t, base+"/api/sweeps", `{"agents":["a2","a1"],"workload":{"sizes":["720p"],"cameras":[1],"multi_image_sizes":[]}}`)
	if code != http.StatusBadRequest || !strings.Contains(body, `agents[1]: agent \"a1\" is drained`) {
		t.Errorf("sweep naming a drained agent: %d %s, want 400 naming agents[1] and the drain", code, body)
	}

	code, body = request(t, http.MethodDelete, base+"/api/agents/a1/drain", "")
	v = api.AgentView{}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &v) != nil || v.Drained || !v.DrainedAt.IsZero() {
		t.Fatalf("undrain a1: %d %s", code, body)
	}
	if d := nextDrain(t, ctl); d.Drained {
		t.Fatalf("after the undrain the agent was told %+v", d)
	}
	s = submit(t, c, protocol.Sweep{Agents: []string{"a1"}, Workload: testWorkload()})
	if len(s.Jobs) != 1 {
		t.Fatalf("sweep naming the undrained agent made %v", s.Jobs)
	}
}

// Every agent drained: a sweep naming none is refused, saying so.
func TestSweepWithEveryAgentDrained(t *testing.T) {
	c := startFleetController(t)
	helloLabelled(t, c, "a1", nil, "d1")
	if _, err := c.DrainAgent(waitCtx(t), "a1", true); err != nil {
		t.Fatal(err)
	}
	_, err := c.SubmitSweep(waitCtx(t), protocol.Sweep{Workload: testWorkload()})
	if err == nil || statusOf(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "a1: drained") {
		t.Fatalf("sweep with every agent drained: %v", err)
	}
}

// The drain is stored: a controller restarted on the same data dir still
// skips the agent.
func TestDrainSurvivesControllerRestart(t *testing.T) {
	dir := t.TempDir()
	c := startController(t, dir)
	helloLabelled(t, c, "a1", nil, "d1")
	if _, err := c.DrainAgent(waitCtx(t), "a1", true); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c = startController(t, dir)
	if v := agentByID(t, c, "a1"); !v.Drained {
		t.Fatalf("after a restart a1 is %+v, want drained", v)
	}
}

// A heartbeat sent as a request (an agent's first) is answered with the
// agent's drain, and with "not drained" for an agent not stored yet.
func TestFirstHeartbeatIsAnsweredWithTheDrain(t *testing.T) {
	c := startFleetController(t)
	a1 := helloLabelled(t, c, "a1", nil, "d1")
	ask := func(a *fakeAgent) protocol.Drain {
		t.Helper()
		hb, _ := json.Marshal(protocol.Heartbeat{Schema: 1, AgentID: a.id, Time: time.Now(), State: protocol.AgentIdle, Seq: 1})
		reply, err := a.nc.Request(protocol.AgentSubject(a.id, protocol.KindHeartbeat), hb, waitLimit)
		if err != nil {
			t.Fatalf("first heartbeat of %s: %v", a.id, err)
		}
		_, d, err := protocol.DecodeControl(reply.Data)
		if err != nil || d == nil {
			t.Fatalf("answer %s: %v", reply.Data, err)
		}
		return *d
	}
	if d := ask(a1); d.Drained {
		t.Fatalf("a1 before the drain: %+v", d)
	}
	if _, err := c.DrainAgent(waitCtx(t), "a1", true); err != nil {
		t.Fatal(err)
	}
	if d := ask(a1); !d.Drained {
		t.Fatalf("a1 after the drain: %+v", d)
	}
	if d := ask(newFakeAgent(t, c, "new")); d.Drained {
		t.Fatalf("an agent never announced: %+v", d)
	}
}

// A sweep's agent_labels selects the agents carrying them; a selection no
// agent fits, a named agent without them and a malformed key are refused
// with the field and what is there.
func TestSweepSelectsAgentsByLabels(t *testing.T) {
	c := startFleetController(t)
	helloLabelled(t, c, "a1", map[string]string{"site": "lab1", "rack": "3"}, "d1")
	helloLabelled(t, c, "a2", map[string]string{"site": "lab2"}, "d1")
	base := c.HTTPURL()

	if v := agentByID(t, c, "a1"); v.Labels["site"] != "lab1" || v.Labels["rack"] != "3" {
		t.Errorf("/api/agents shows a1's labels %v", v.Labels)
	}
	if v := agentByID(t, c, "a2"); v.Labels["site"] != "lab2" {
		t.Errorf("/api/agents shows a2's labels %v", v.Labels)
	}
	w := `"workload":{"sizes":["720p"],"cameras":[1],"multi_image_sizes":[]}`
	code, body := postJSON(t, base+"/api/sweeps", `{"agent_labels":{"site":"lab1"},`+w+`}`)
	var s protocol.Sweep
	if code != http.StatusCreated || json.Unmarshal([]byte(body), &s) != nil || len(s.Jobs) != 1 {
		t.Fatalf("sweep by label: %d %s", code, body)
	}
	j, err := c.Job(waitCtx(t), s.Jobs[0])
	if err != nil || j.AgentID != "a1" {
		t.Fatalf("the label sweep's job went to %q (%v), want a1", j.AgentID, err)
	}
	if s.AgentLabels["site"] != "lab1" {
		t.Errorf("the stored sweep lost its selection: %+v", s.AgentLabels)
	}

	for _, tc := range []struct{ body, want string }{
		{`{"agent_labels":{"site":"lab9"},` + w + `}`, `agent_labels: no online agent carries {site=lab9} (online: a1 {rack=3, site=lab1}, a2 {site=lab2})`},
		{`{"agents":["a2"],"agent_labels":{"site":"lab1"},` + w + `}`, `agents[0]: agent \"a2\" does not carry agent_labels {site=lab1} (its labels: {site=lab2})`},
		{`{"agent_labels":{"bad key":"x"},` + w + `}`, `agent_labels: key \"bad key\": want 1-63 letters`},
	} {
		code, body := postJSON(t, base+"/api/sweeps", tc.body)
		if code != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Errorf("sweep %s: %d %s, want 400 with %q", tc.body, code, body, tc.want)
		}
	}
}

// An idle agent shows no telemetry: agents sample only during a job, and
// the samples of the job it ran last are not the figures of an idle device
// ("65 %, 399.2 W" on idle simulated agents).
func TestIdleAgentHasNoLiveTelemetry(t *testing.T) {
	c := startFleetController(t)
	ev, a := announced(t, c, "a1", "d1")
	a.heartbeat(t, "job-1")
	util, power := 65.0, 399.2
	tick, _ := json.Marshal(protocol.TelemetryTick{Schema: 1, AgentID: "a1", JobID: "job-1",
		Sample: protocol.TelemetrySample{Time: time.Now().UTC(), GPUUtil: &util, PowerW: &power}})
	if err := a.nc.Publish(protocol.AgentSubject("a1", protocol.KindTelemetry), tick); err != nil {
		t.Fatal(err)
	}
	ev.waitFor(t, 1, kindIs(api.EventTelemetry))
	var snap api.LiveSnapshot
	getJSON(t, c.HTTPURL()+"/api/live", &snap)
	if len(snap.Telemetry["a1"]) != 1 {
		t.Fatalf("busy agent's telemetry: %+v, want its one sample", snap.Telemetry["a1"])
	}
	a.drainedHeartbeat(t, false) // idle
	ev.waitFor(t, 1, func(e api.Event) bool {
		hb, ok := e.Data.(protocol.Heartbeat)
		return ok && hb.State == protocol.AgentIdle
	})
	var idle api.LiveSnapshot
	getJSON(t, c.HTTPURL()+"/api/live", &idle)
	if got := idle.Telemetry["a1"]; len(got) != 0 {
		t.Fatalf("idle agent's telemetry: %d samples (%v W), want none", len(got), *got[len(got)-1].Sample.PowerW)
	}
}

// A sweep over every online agent says which it passed over and why: one
// whose configuration cannot serve the sweep's deployment, one that does
// not offer it.
func TestSweepSaysWhichAgentsItSkipped(t *testing.T) {
	c := startFleetController(t)
	helloLabelled(t, c, "a1", nil, "d1")
	helloLabelled(t, c, "a2", nil, "d2")
	ev := watchEvents(t, c)
	broken := newFakeAgent(t, c, "a3")
	h := protocol.AgentHello{
		Schema: protocol.SchemaVersion, Level: protocol.AgentLevel, AgentID: "a3", Hostname: "host-a3", Version: "test", StartedAt: time.Now().UTC(),
		Device:            protocol.DeviceFacts{Name: "Jetson AGX Orin", Kind: protocol.DeviceJetson},
		BrokenDeployments: []protocol.BrokenDeployment{{ID: "d1", Engine: "llamacpp", Reason: "deployments[0].model: /models/x.gguf is not under the model roots"}},
	}
	broken.publish(t, protocol.KindHello, h, protocol.HelloMsgID("a3", h.StartedAt.UnixNano()))
	ev.waitFor(t, 1, helloStored(h))

	s := submit(t, c, protocol.Sweep{Deployments: []string{"d1"}, Workload: testWorkload()})
	var sv api.SweepView
	getJSON(t, c.HTTPURL()+"/api/sweeps/"+s.ID, &sv)
	want := map[string]string{"a2": "offers none of the sweep's deployments", "a3": "not under the model roots"}
	if len(sv.Skipped) != len(want) {
		t.Fatalf("skipped %+v, want a2 and a3", sv.Skipped)
	}
	for _, sk := range sv.Skipped {
		if !strings.Contains(sk.Reason, want[sk.AgentID]) {
			t.Errorf("skipped %s because %q, want %q", sk.AgentID, sk.Reason, want[sk.AgentID])
		}
	}
}
