package controller

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
	"github.com/vlmfleet/vlmfleet/internal/testutil/natstest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// waitHealth polls /api/health (the controller emits no event for its own
// health) until cond holds, for at most limit, and returns the last body.
func waitHealth(t *testing.T, c *Controller, limit time.Duration, what string, cond func(code int, h map[string]any) bool) map[string]any {
	t.Helper()
	start := time.Now()
	for {
		code, h := getHealth(t, c)
		if cond(code, h) {
			t.Logf("%s after %.1f s", what, time.Since(start).Seconds())
			return h
		}
		if time.Since(start) > limit {
			t.Fatalf("waited %s for %s; health: %d %v", limit, what, code, h)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func problemsName(h map[string]any, component string) bool {
	return strings.Contains(fmt.Sprint(h["problems"]), "component:"+component)
}

// An agent past its heartbeat is a fleet matter: /api/health names it
// under fleet and agents_silent, and stays ok (200), so that no page puts
// the controller's banner up for it. Revoked, it no longer counts.
func TestSilentAgentIsAFleetMatter(t *testing.T) {
	c := startControllerWith(t, Options{DataDir: t.TempDir(), HeartbeatTimeout: time.Second})
	code, h := getHealth(t, c)
	if code != http.StatusOK || h["status"] != api.HealthOK || fmt.Sprint(h["problems"]) != "[]" || fmt.Sprint(h["fleet"]) != "[]" {
		t.Fatalf("health of a new controller: %d %v, want 200 ok with no problems", code, h)
	}
	announced(t, c, "a1")
	waitHealth(t, c, 30*time.Second, "the silent agent reported", func(code int, h map[string]any) bool {
		return fmt.Sprint(h["agents_silent"]) == "[a1]"
	})
	code, h = getHealth(t, c)
	if code != http.StatusOK || h["status"] != api.HealthOK || fmt.Sprint(h["problems"]) != "[]" ||
		!strings.Contains(fmt.Sprint(h["fleet"]), "component:"+ProblemAgents) || !strings.Contains(fmt.Sprint(h["fleet"]), "a1 silent for") {
		t.Errorf("health with a silent agent: %d %v, want 200 ok, a1 named under fleet", code, h)
	}
	if err := c.RevokeAgent(waitCtx(t), "a1"); err != nil {
		t.Fatal(err)
	}
	if code, h := getHealth(t, c); code != http.StatusOK || fmt.Sprint(h["agents_silent"]) != "[]" || fmt.Sprint(h["fleet"]) != "[]" {
		t.Errorf("health once a1 is revoked: %d %v, want no silent agent", code, h)
	}
	if v := agentByID(t, c, "a1"); v.RevokedAt.IsZero() {
		t.Errorf("a1's view after its revocation: %+v, want revoked_at", v)
	}
}

// An offline agent can be forgotten: it leaves the agents list and
// health, and what it measured stays. An online one is refused with 409
// and what to do; an unknown one is 404.
func TestForgetAnOfflineAgent(t *testing.T) {
	c := startControllerWith(t, Options{DataDir: t.TempDir(), HeartbeatTimeout: 3 * time.Second})
	ev, a := announced(t, c, "a1", "d1")
	sw := submit(t, c, protocol.Sweep{Agents: []string{"a1"}, Workload: testWorkload()})
	a.heartbeat(t, "")
	ev.waitFor(t, 1, kindIs(api.EventHeartbeat))
	if code, body := request(t, http.MethodDelete, c.HTTPURL()+"/api/agents/a1", ""); code != http.StatusConflict ||
		!strings.Contains(body, "agent a1 is online") || !strings.Contains(body, "stop it first") {
		t.Errorf("DELETE an online agent: %d %s, want 409 saying to stop it first", code, body)
	}
	ev.waitFor(t, 1, func(e api.Event) bool {
		v, ok := e.Data.(api.AgentView)
		return e.Kind == api.EventAgent && ok && v.ID == "a1" && !v.Online
	})
	code, body := request(t, http.MethodDelete, c.HTTPURL()+"/api/agents/a1", "")
	if code != http.StatusOK || !strings.Contains(body, `"agent_id": "a1"`) {
		t.Fatalf("DELETE an offline agent: %d %s, want 200", code, body)
	}
	var agents []api.AgentView
	getJSON(t, c.HTTPURL()+"/api/agents", &agents)
	if len(agents) != 0 {
		t.Errorf("agents after a1 was forgotten: %+v", agents)
	}
	if _, h := getHealth(t, c); fmt.Sprint(h["agents_silent"]) != "[]" {
		t.Errorf("health after a1 was forgotten: %v", h)
	}
	if v, err := c.store.Sweep(sw.ID); err != nil || len(v.Jobs) != 1 {
		t.Errorf("a1's sweep after it was forgotten: %+v %v, want it kept", v, err)
	}
	if code, body := request(t, http.MethodDelete, c.HTTPURL()+"/api/agents/a1", ""); code != http.StatusNotFound {
		t.Errorf("DELETE a forgotten agent: %d %s, want 404", code, body)
	}
}

// JetStream disabled under the controller (as the server does on a
// permission error, or an operator) is reported as failing within 30 s,
// and the controller starts it again and ingests what is published next.
func TestDisabledJetStreamIsReportedAndRestarted(t *testing.T) {
	c := startController(t, t.TempDir())
	ev, a := announced(t, c, "a1")
	// Hold the repair until the test has seen the problem reported.
	release := make(chan struct{})
	var once sync.Once
	releaseRepair := func() { once.Do(func() { close(release) }) }
	t.Cleanup(releaseRepair) // before Close, which waits for the watcher
	hook := func(string) { <-release }
	c.testHookRepair.Store(&hook)
	if err := c.ns.ShutdownJetStream(); err != nil {
		t.Fatal(err)
	}
	h := waitHealth(t, c, 30*time.Second, "JetStream reported unavailable", func(code int, h map[string]any) bool {
		return code == http.StatusServiceUnavailable && problemsName(h, ProblemJetStream)
	})
	if h["status"] != api.HealthFailing || h["jetstream"] != "unavailable" {
		t.Errorf("health with JetStream disabled: %v, want failing, jetstream unavailable", h)
	}
	releaseRepair()
	waitHealth(t, c, 30*time.Second, "health ok again", func(code int, h map[string]any) bool {
		return code == http.StatusOK && h["status"] == api.HealthOK
	})
	ev.waitFor(t, 1, helloStored(a.hello(t, "d1")))
}

// Jobs that JetStream refuses to store (here "maximum bytes exceeded": the
// jobs stream is at its byte limit) make the controller degraded, naming
// the error, until they are published.
func TestRefusedJobPublishIsReported(t *testing.T) {
	ns := natstest.Start(t, &server.Options{JetStream: true, StoreDir: t.TempDir()})
	c := startControllerWith(t, Options{DataDir: t.TempDir(), NATSURL: ns.ClientURL(), JobsStreamMaxBytes: MinStreamMaxBytes})
	announced(t, c, "a1", "d1")

	// An operator's messages fill the jobs stream, to the last 256 bytes.
	_, js := testutil.ConnectJS(t, ns.ClientURL())
	for _, size := range []int{1 << 20, 32 << 10, 1 << 10, 256} {
		filler := make([]byte, size)
		for i := 0; ; i++ {
			_, err := js.Publish(waitCtx(t), protocol.JobSubject("filler"), filler)
			if err != nil {
				if !strings.Contains(err.Error(), "maximum bytes exceeded") {
					t.Fatalf("filling the jobs stream: %v", err)
				}
				break
			}
			if i > 64 {
				t.Fatalf("over %d messages of %d bytes fit in what messages of %d bytes left", i, size, size<<5)
			}
		}
	}

	sw := submit(t, c, protocol.Sweep{Agents: []string{"a1"}, Workload: testWorkload()})
	h := waitHealth(t, c, 30*time.Second, "the refused publish reported", func(code int, h map[string]any) bool {
		return code == http.StatusServiceUnavailable && problemsName(h, ProblemPublish)
	})
	if h["status"] != api.HealthDegraded || !strings.Contains(fmt.Sprint(h["problems"]), "maximum bytes exceeded") {
		t.Errorf("health with jobs refused: %v, want degraded naming maximum bytes exceeded", h)
	}

	stream, err := js.Stream(waitCtx(t), protocol.StreamJobs)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Purge(waitCtx(t), jetstream.WithPurgeSubject(protocol.JobSubject("filler"))); err != nil {
		t.Fatal(err)
	}
	waitHealth(t, c, 90*time.Second, "the job published and the problem cleared", func(code int, h map[string]any) bool {
		return !problemsName(h, ProblemPublish)
	})
	if j, err := c.store.Job(sw.Jobs[0]); err != nil || !j.Published {
		t.Errorf("job after space returned: %+v, %v; want published", j, err)
	}
}

// An external server's JetStream going away is reported as failing, and
// the controller leaves its repair to the server's operator. (That the
// problem clears once the check passes is the embedded tests' path too; the
// external JetStream is not enabled again here because nats-server's
// EnableJetStream races with API requests arriving meanwhile, which the
// race detector reports inside nats-server.)
func TestExternalJetStreamUnavailableIsReported(t *testing.T) {
	ns := natstest.Start(t, &server.Options{JetStream: true, StoreDir: t.TempDir()})
	c := startControllerWith(t, Options{DataDir: t.TempDir(), NATSURL: ns.ClientURL()})
	if err := ns.ShutdownJetStream(); err != nil {
		t.Fatal(err)
	}
	h := waitHealth(t, c, 30*time.Second, "JetStream reported unavailable", func(code int, h map[string]any) bool {
		return code == http.StatusServiceUnavailable && problemsName(h, ProblemJetStream)
	})
	if h["status"] != api.HealthFailing || !strings.Contains(fmt.Sprint(h["problems"]), "JetStream unavailable on "+ns.ClientURL()) {
		t.Errorf("health with the external JetStream gone: %v", h)
	}
	if ns.JetStreamEnabled() {
		t.Fatal("the controller restarted an external server's JetStream")
	}
}
