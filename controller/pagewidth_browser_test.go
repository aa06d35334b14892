package controller

import (
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/explorer/web"
	"github.com/vlmfleet/vlmfleet/internal/testutil/browsertest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// completedSweep submits a sweep for agent a's deployment in power mode
// and measures its job: the judged levels, closed completed.
func completedSweep(t *testing.T, c *Controller, ev *eventLog, a *fakeAgent, mode string) (protocol.Sweep, string) {
	t.Helper()
	w := testWorkload()
	w.Sizes, w.Search, w.FrameIntervalSec = []string{"720p"}, 32, []float64{5}
	sw := submit(t, c, protocol.Sweep{Agents: []string{a.id}, Workload: w})
	job := sw.Jobs[0]
	a.state(t, job, protocol.JobAccepted, 1, true)
	run := testRun(store.RunIDFor(job, 1), a.id)
	run.JobID, run.SweepID, run.Workload, run.Config.PowerMode = job, sw.ID, w, mode
	levels := judgedLevels()
	for _, combo := range levels {
		// Power samples, so that the explorer shows its power columns and
		// cost inputs.
		combo.Energy = &protocol.Energy{Source: protocol.PowerSourceModuleInput, Samples: 8, MeanPowerW: 12 + float64(combo.Cameras), WindowSec: 8, JoulesPerAnswer: 4}
		a.publish(t, protocol.KindResult, protocol.ResultMessage{Schema: 1, AgentID: a.id, Run: run, Combination: combo},
			protocol.ResultMsgID(run.ID, combo.String()))
	}
	final := run
	final.Status, final.FinishedAt = protocol.RunCompleted, time.Now().UTC()
	a.publish(t, protocol.KindResult, protocol.ResultMessage{Schema: 1, AgentID: a.id, Run: final, Final: true, Expected: len(levels)}, protocol.ResultMsgID(run.ID, "final"))
	ev.waitFor(t, 1, func(e api.Event) bool {
		r, ok := e.Data.(api.ResultEvent)
		return e.Kind == api.EventResult && ok && r.Final && r.RunID == run.ID
	})
	a.state(t, job, protocol.JobCompleted, 1, true)
	ev.waitFor(t, 1, stateIs(job, protocol.JobCompleted))
	return sw, run.ID
}

// Every page fits a 412 px phone and a 1280 px laptop without scrolling
// sideways (a table scrolls in its own box), with a lab's data on it; at
// 1280 px the explorer's cost inputs do not overlap their labels.
func TestEveryPageFitsTheScreen(t *testing.T) {
	path := chromium(t)
	c := startControllerWith(t, Options{DataDir: t.TempDir(), HeartbeatTimeout: 10 * time.Minute,
		Explorer: func(runs RunSource) http.Handler { return explorer.NewHandler(runs, zerolog.Nop(), web.WithLab()) }})
	ev, a := announced(t, c, "orin-nx-with-a-long-id-01", "qwen3-vl-4b-instruct-q8_0-llama-cpp")
	_, runA := completedSweep(t, c, ev, a, "15W")
	latest, runB := completedSweep(t, c, ev, a, "15W")
	running := submit(t, c, protocol.Sweep{Agents: []string{a.id}, Workload: testWorkload()}).Jobs[0]
	a.state(t, running, protocol.JobRunning, 1, true)
	ev.waitFor(t, 1, stateIs(running, protocol.JobRunning))

	pages := []struct{ path, ready string }{
		{"/", `!!(window.vlmfleetExplorer && window.vlmfleetExplorer.ready) && document.querySelectorAll("#tbody tr.row").length > 0`},
		{"/live", `document.getElementById("conn").textContent === "live" && document.querySelector("#jobs .job") !== null && document.querySelector("#finished tr[data-job]") !== null`},
		{"/fleet", `document.getElementById("conn").textContent === "live" && document.querySelector("tr[data-agent]") !== null`},
		{"/sweeps", `document.querySelector("#sweeps tr[data-sweep]") !== null`},
		{"/sweeps/" + latest.ID, `document.querySelector("#answer .answer") !== null`},
		{"/compare?a=" + runA + "&b=" + runB, `!!(window.vlmfleetCompare && window.vlmfleetCompare.ready)`},
		{"/profiles", `!!(window.vlmfleetProfiles && window.vlmfleetProfiles.ready) && document.querySelector("table.profile") !== null`},
	}
	ctx := browsertest.Open(t, path, 3*time.Minute)
	for _, width := range []int64{412, 1280} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 900)); err != nil {
			t.Fatal(err)
		}
		for _, p := range pages {
			if err := chromedp.Do(ctx, chromedp.Navigate(c.HTTPURL()+p.path)); err != nil {
				t.Fatalf("open %s: %v", p.path, err)
			}
			if _, err := chromedp.Run(ctx, chromedp.Poll[bool](p.ready, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second))); err != nil {
				t.Errorf("%s at %d px never got ready: %v", p.path, width, err)
				continue
			}
			type fit struct{ Page, Window float64 }
			got, err := chromedp.Run(ctx, chromedp.Evaluate[fit](`({Page: document.documentElement.scrollWidth, Window: window.innerWidth})`))
			if err != nil {
				t.Fatal(err)
			}
			if got.Page > got.Window {
				t.Errorf("%s at %d px: the page is %.0f px wide, wider than the %.0f px window", p.path, width, got.Page, got.Window)
			}
		}
	}
	// At 1280 px the last page opened is the profiles page; the explorer's
	// cost inputs are checked against their labels.
	if err := chromedp.Do(ctx, chromedp.Navigate(c.HTTPURL()+"/")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](pages[0].ready, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatal(err)
	}
	if shown, err := chromedp.Run(ctx, chromedp.Evaluate[int](`[...document.querySelectorAll("#cost label[for]")].filter(l => l.offsetParent !== null).length`)); err != nil || shown != 4 {
		t.Fatalf("%d cost inputs shown, want 4 (%v)", shown, err)
	}
	overlaps, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#cost label[for]")].filter(l => {
		const input = document.getElementById(l.htmlFor);
		const a = l.getBoundingClientRect(), b = input.getBoundingClientRect();
		const textWidth = (() => { const r = document.createRange(); r.selectNodeContents(l); return r.getBoundingClientRect().width; })();
		return (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) || textWidth > a.width + 1;
	}).map(l => l.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	if len(overlaps) > 0 {
		t.Errorf("at 1280 px these cost labels overlap their inputs or are cut: %q", overlaps)
	}
	clipped, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#table thead th button")].filter(b => b.offsetParent !== null && b.scrollWidth > b.clientWidth + 1).map(b => b.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	if len(clipped) > 0 {
		t.Errorf("at 1280 px these headers are clipped: %q", clipped)
	}
	if over, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`(() => { const w = document.querySelector(".table-wrap"); return w.scrollWidth - w.clientWidth; })()`)); err != nil || over > 1 {
		t.Errorf("at 1280 px the explorer's table scrolls sideways by %.0f px to reach its last column (%v)", over, err)
	}
}
