package controller

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// The live page names each job's power setting, active and finished, and a
// combination on a frame clock by its clock: two power modes of one
// deployment are two jobs a reader must tell apart.
func TestLivePageShowsPowerAndFrameClock(t *testing.T) {
	path := chromium(t)
	c := startFleetController(t)
	a := helloPower(t, c, "orin-1", orinPower, "d1")
	ev := watchEvents(t, c)
	w := testWorkload()
	w.FrameIntervalSec = []float64{5}
	s := submit(t, c, protocol.Sweep{Agents: []string{"orin-1"}, Workload: w, PowerModes: []string{"MAXN", "10W"}})
	running, done := s.Jobs[0], s.Jobs[1]
	a.state(t, done, protocol.JobCompleted, 1, true)
	ev.waitFor(t, 1, stateIs(done, protocol.JobCompleted))
	a.state(t, running, protocol.JobRunning, 1, true)
	ev.waitFor(t, 1, stateIs(running, protocol.JobRunning))

	poll, text := openLive(t, path, c.HTTPURL())
	poll(`document.getElementById("conn").textContent === "live"`)
	p := protocol.Progress{Schema: 1, AgentID: "orin-1", JobID: running, RunID: running + "-a1", Time: time.Now().UTC(), Phase: protocol.PhaseMeasure,
		Combo: protocol.ComboKey{Size: "720p", Images: 1, Cameras: 1, FrameIntervalSec: 5}, ComboIdx: 3, ComboN: 6, Done: 2, Total: 8, Simulated: true}
	data, _ := json.Marshal(p)
	if err := a.nc.Publish(protocol.AgentSubject("orin-1", protocol.KindProgress), data); err != nil {
		t.Fatal(err)
	}
	poll(`document.getElementById("jobs").textContent.includes(` + jsString(running) + `)`)
	poll(`[...document.querySelectorAll("#jobs .combo")].some(e => e.textContent.includes("2/8"))`)
	if got := text("#jobs"); !contains(got, "deployment d1 · MAXN") || !contains(got, "4/6 · 720p · 1 img · 1 cam · every 5 s") {
		t.Errorf("active job %q lacks its power mode or its frame clock", got)
	}
	poll(`document.querySelector('#finished tr[data-job=` + jsString(done) + `]') !== null`)
	if got := text(`#finished tr[data-job=` + jsString(done) + `] .deployment`); !strings.Contains(got, "d1") || !strings.Contains(got, "10W") {
		t.Errorf("finished job's deployment %q, want d1 and its 10W", got)
	}
}

// Until the controller's first answer, /live says it is connecting, not
// that the lab is empty.
func TestLivePageSaysConnectingUntilItsFirstData(t *testing.T) {
	path := chromium(t)
	c := startController(t, t.TempDir())
	release := make(chan struct{})
	target, err := url.Parse(c.HTTPURL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1
	// The proxy holds the page's first reads until the test lets them go:
	// the page is then as it is while a slow controller answers.
	held := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/live" || r.URL.Path == "/api/jobs" {
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(held.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})

	poll, text := openLive(t, path, held.URL)
	// The shared script has run once the health mark is drawn.
	poll(`document.getElementById("health-ok").textContent === "health ok"`)
	for _, sel := range []string{"#agents", "#jobs", "#finished"} {
		if got := text(sel); !strings.Contains(got, "connecting…") || strings.Contains(got, "no ") {
			t.Errorf("%s says %q before the controller answered, want connecting…", sel, got)
		}
	}
	close(release)
	poll(`document.getElementById("agents").textContent.includes("no agents yet")`)
	poll(`document.getElementById("finished").textContent.includes("no job has finished yet")`)
	if got := text("#jobs"); got != "no job is running" {
		t.Errorf("jobs %q once loaded, want no job is running", got)
	}
}
