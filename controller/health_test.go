package controller

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
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

// An agent past its heartbeat makes the controller degraded (503), named.
func TestSilentAgentMakesHealthDegraded(t *testing.T) {
	c := startControllerWith(t, Options{DataDir: t.TempDir(), HeartbeatTimeout: time.Second})
	code, h := getHealth(t, c)
	if code != http.StatusOK || h["status"] != HealthOK || fmt.Sprint(h["problems"]) != "[]" {
		t.Fatalf("health of a new controller: %d %v, want 200 ok with no problems", code, h)
	}
	announced(t, c, "a1")
	h = waitHealth(t, c, 30*time.Second, "the silent agent reported", func(code int, h map[string]any) bool {
		return code == http.StatusServiceUnavailable && problemsName(h, ProblemAgents)
	})
	if h["status"] != HealthDegraded || fmt.Sprint(h["agents_silent"]) != "[a1]" ||
		!strings.Contains(fmt.Sprint(h["problems"]), "a1 silent for") {
		t.Errorf("health with a silent agent: %v, want degraded naming a1", h)
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
	if h["status"] != HealthFailing || h["jetstream"] != "unavailable" {
		t.Errorf("health with JetStream disabled: %v, want failing, jetstream unavailable", h)
	}
	releaseRepair()
	waitHealth(t, c, 30*time.Second, "health ok again", func(code int, h map[string]any) bool {
		return code == http.StatusOK && h["status"] == HealthOK
	})
	ev.waitFor(t, 1, helloStored(a.hello(t, "d1")))
}
