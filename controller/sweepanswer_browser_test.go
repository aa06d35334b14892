package controller

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/store"
	"github.com/vlmfleet/vlmfleet/explorer"
	"github.com/vlmfleet/vlmfleet/internal/testutil/browsertest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// judgedLevels keep up by the mean at every level up to 32 cameras, and by
// p90 up to 21: a search measured 21 and 22.
func judgedLevels() []*protocol.Combination {
	var out []*protocol.Combination
	for _, l := range []struct {
		cams      int
		mean, p90 float64
		search    bool
	}{{1, 0.2, 0.3, false}, {2, 0.3, 0.4, false}, {4, 0.4, 0.6, false}, {8, 0.6, 0.9, false}, {16, 1.2, 2.1, false},
		{32, 2.6, 4.2, true}, {24, 2.1, 3.6, true}, {20, 1.5, 2.8, true}, {22, 1.8, 3.2, true}, {21, 1.6, 2.9, true}} {
		c := testCombo("720p", l.cams)
		c.TTFT.Mean, c.TTFT.P90, c.Search = l.mean, l.p90, l.search
		c.Tail = &protocol.TTFTTail{Due: 2, P90: l.p90, P95: l.p90}
		out = append(out, c)
	}
	return out
}

// The sweep page's answer is the one the sweep asked for: judged by p90,
// the card gives the p90 Max Cameras and its sentences judge by p90; the
// card names the power setting, and the workload line says the search,
// the frame clock and the judgement.
func TestSweepPageAnswersAsTheSweepJudges(t *testing.T) {
	path := chromium(t)
	c := startControllerWith(t, Options{DataDir: t.TempDir(),
		Explorer: func(runs RunSource) http.Handler { return explorer.NewHandler(runs, zerolog.Nop()) }})
	ev, a := announced(t, c, "orin-1", "qwen-q8")
	w := testWorkload()
	w.Sizes, w.Search, w.FrameIntervalSec = []string{"720p"}, 32, []float64{5}
	w.Judgement = protocol.Judgement{Statistic: protocol.StatisticP90, TargetSec: 3}
	sw := submit(t, c, protocol.Sweep{Agents: []string{"orin-1"}, Workload: w})
	job := sw.Jobs[0]
	a.state(t, job, protocol.JobAccepted, 1, true)
	run := testRun(store.RunIDFor(job, 1), "orin-1")
	run.JobID, run.SweepID, run.Workload, run.Config.PowerMode = job, sw.ID, w, "15W"
	levels := judgedLevels()
	for _, combo := range levels {
		a.publish(t, protocol.KindResult, protocol.ResultMessage{Schema: 1, AgentID: "orin-1", Run: run, Combination: combo},
			protocol.ResultMsgID(run.ID, combo.String()))
	}
	final := run
	final.Status, final.FinishedAt = protocol.RunCompleted, time.Now().UTC()
	a.publish(t, protocol.KindResult, protocol.ResultMessage{Schema: 1, AgentID: "orin-1", Run: final, Final: true, Expected: len(levels)}, protocol.ResultMsgID(run.ID, "final"))
	ev.waitFor(t, len(levels)+1, kindIs(api.EventResult))
	a.state(t, job, protocol.JobCompleted, 1, true)
	ev.waitFor(t, 1, stateIs(job, protocol.JobCompleted))

	ctx := browsertest.Open(t, path, 60*time.Second)
	if err := chromedp.Do(ctx, chromedp.Navigate(c.HTTPURL()+"/sweeps/"+sw.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector("#answer .answer") !== null`,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("no answer: %v", err)
	}
	type page struct{ Card, Workload, Link string }
	got, err := chromedp.Run(ctx, chromedp.Evaluate[page](`({Card: document.querySelector("#answer .answer").textContent,
		Workload: document.getElementById("workload").textContent, Link: document.getElementById("explorer-link").getAttribute("href")})`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Jetson AGX Orin · 15W", "Max Cameras: 21", "9 of 10 answers starting within 3 s", "it keeps up with 21 cameras at once",
		"image after 0.2 s on average"} {
		if !strings.Contains(got.Card, want) {
			t.Errorf("the answer card lacks %q: %s", want, got.Card)
		}
	}
	if strings.Contains(got.Card, "at least 32") || strings.Contains(got.Card, "32 cameras") {
		t.Errorf("the answer card judges by the mean (32 cameras): %s", got.Card)
	}
	for _, want := range []string{"one frame every 5 s per camera", "search for the exact Max Cameras up to 32 cameras", "judged by p90 within 3 s"} {
		if !strings.Contains(got.Workload, want) {
			t.Errorf("the workload line lacks %q: %s", want, got.Workload)
		}
	}
	if !strings.Contains(got.Link, "stat=p90") {
		t.Errorf("the explorer link %q does not open the explorer by p90", got.Link)
	}
}
