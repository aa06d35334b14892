package controller

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vlmfleet/vlmfleet/internal/testutil/browsertest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// chromium is chromium's path; the test is skipped without one.
func chromium(t *testing.T) string {
	t.Helper()
	p, err := browsertest.Path()
	if err != nil {
		t.Skip(err)
	}
	return p
}

// TestLivePageInBrowser loads /live in headless chromium and checks that it
// shows a simulated agent and follows progress pushed over /api/events.
func TestLivePageInBrowser(t *testing.T) {
	path := chromium(t)
	c := startController(t, t.TempDir())
	_, a := announced(t, c, "orin-1", "qwen-q8")

	poll, text := openLive(t, path, c.HTTPURL())
	poll(`document.getElementById("conn").textContent === "live"`)
	agentsText := text("#agents")
	for _, want := range []string{"orin-1", "SIMULATED", "Jetson AGX Orin", "qwen-q8"} {
		if !contains(agentsText, want) {
			t.Errorf("agents table %q lacks %q", agentsText, want)
		}
	}
	w := testWorkload()
	w.Cameras = []int{1, 4}
	job := submit(t, c, protocol.Sweep{Agents: []string{"orin-1"}, Workload: w}).Jobs[0]
	p := protocol.Progress{Schema: 1, AgentID: "orin-1", JobID: job, RunID: "r", Time: time.Now().UTC(), Phase: protocol.PhaseMeasure,
		Combo: protocol.ComboKey{Size: "720p", Images: 1, Cameras: 4}, ComboIdx: 2, ComboN: 5, Done: 3, Total: 8, MeanTTFT: 2.41, Simulated: true}
	data, _ := json.Marshal(p)
	if err := a.nc.Publish(protocol.AgentSubject("orin-1", protocol.KindProgress), data); err != nil {
		t.Fatal(err)
	}
	poll(`[...document.querySelectorAll("#jobs .combo")].some(e => e.textContent.includes("3/8"))`)
	jobsText := text("#jobs")
	for _, want := range []string{job, "3/5 · 720p · 1 img · 4 cam", "TTFT 2.41 s", "SIMULATED"} {
		if !contains(jobsText, want) {
			t.Errorf("jobs %q lack %q", jobsText, want)
		}
	}
}

// openLive opens the live page in headless chromium and returns helpers
// that poll for a JavaScript condition and read an element's text.
func openLive(t *testing.T, path, baseURL string) (poll func(js string), text func(sel string) string) {
	t.Helper()
	ctx := browsertest.Open(t, path, 60*time.Second)
	if err := chromedp.Do(ctx, chromedp.Navigate(baseURL+"/live")); err != nil {
		t.Fatalf("open /live: %v", err)
	}
	poll = browsertest.Poller(t, ctx)
	text = func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(sel))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return v
	}
	return poll, text
}

// TestLivePageShowsStalledJobs checks that a running job whose agent went
// offline is marked stalled on the live page, and unmarked when it returns.
func TestLivePageShowsStalledJobs(t *testing.T) {
	path := chromium(t)
	c := startControllerWith(t, Options{DataDir: t.TempDir(), HeartbeatTimeout: 1500 * time.Millisecond})
	ev, a := announced(t, c, "orin-1", "qwen-q8")
	jobID := submitJobs(t, c, "orin-1")[0]
	a.state(t, jobID, protocol.JobRunning, 1, true)
	ev.waitFor(t, 1, stateIs(jobID, protocol.JobRunning))
	poll, text := openLive(t, path, c.HTTPURL())
	poll(`document.getElementById("conn").textContent === "live"`)
	poll(`document.querySelector("#jobs .stalled") !== null`)
	if got := text("#jobs"); !contains(got, "STALLED · agent offline") || !contains(got, jobID) {
		t.Errorf("jobs %q lack the stalled mark", got)
	}
	a.heartbeat(t, jobID)
	poll(`document.querySelector("#jobs .job") !== null && document.querySelector("#jobs .stalled") === null`)
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestLivePageShowsHealthProblems checks that what /api/health reports
// broken in the controller is shown on the live page (here jobs it cannot
// publish), and that a silent agent, a matter for /fleet, is not.
func TestLivePageShowsHealthProblems(t *testing.T) {
	path := chromium(t)
	c := startControllerWith(t, Options{DataDir: t.TempDir(), HeartbeatTimeout: time.Second})
	poll, text := openLive(t, path, c.HTTPURL())
	poll(`document.getElementById("health-ok").textContent === "health ok"`)
	announced(t, c, "orin-1")
	waitHealth(t, c, 30*time.Second, "orin-1 silent", func(_ int, h map[string]any) bool { return fmt.Sprint(h["agents_silent"]) == "[orin-1]" })
	c.problems.set(ProblemPublish, errors.New("the jobs stream refused a job: maximum bytes exceeded"))
	poll(`document.getElementById("health").style.display === "block"`)
	got := text("#health")
	if !contains(got, "Controller DEGRADED") || !contains(got, "publish") || !contains(got, "maximum bytes exceeded") {
		t.Errorf("health banner %q lacks the publish problem", got)
	}
	if contains(got, "orin-1") {
		t.Errorf("health banner %q names the silent agent, a matter for /fleet", got)
	}
}
