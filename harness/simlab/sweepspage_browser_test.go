package simlab_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vlmfleet/vlmfleet/harness/simlab"
	"github.com/vlmfleet/vlmfleet/internal/testutil/browsertest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// browser opens a headless chromium for the test (failing without one
// unless VLMFLEET_NO_BROWSER is set) and returns helpers that run actions,
// poll for a JavaScript condition and read an element's text.
type browser struct {
	t   *testing.T
	ctx context.Context
}

func openBrowser(t *testing.T) *browser {
	t.Helper()
	if os.Getenv("VLMFLEET_NO_BROWSER") != "" {
		t.Skip("VLMFLEET_NO_BROWSER is set")
	}
	path, err := browsertest.Path()
	if err != nil {
		t.Fatalf("%v; set VLMFLEET_NO_BROWSER to skip", err)
	}
	return &browser{t: t, ctx: browsertest.Open(t, path, 120*time.Second)}
}

func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// js runs a script in the page (setting fields and clicking as a user
// would, through the page's own elements).
func (b *browser) js(what, script string) {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[any](script)); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// poll waits until js is true in the page; a page that navigates away
// meanwhile (a submit opens the sweep) is polled again once loaded.
func (b *browser) poll(js string) {
	b.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := chromedp.Run(b.ctx, chromedp.Poll[bool](js, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(time.Until(deadline))))
		if err == nil {
			return
		}
		if navigating := strings.Contains(err.Error(), "navigated") || strings.Contains(err.Error(), "Cannot find context"); !navigating || time.Now().After(deadline) {
			b.t.Fatalf("waiting for %s: %v", js, err)
		}
	}
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Text(sel))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return v
}

// A sweep submitted on /sweeps with a mistake is refused with the message
// under the line of the mistake; corrected, it is submitted, the page goes
// to the sweep, which advances to done with the answer for its run.
func TestSweepsPageSubmitErrorThenSweepToDone(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	l := newLab(t, ctx, simlab.Options{})
	l.startAgent(agx("orin-1"))
	b := openBrowser(t)

	b.do("open /sweeps", chromedp.Navigate(l.url()+"/sweeps"))
	b.poll(`document.querySelector("#sweeps td.empty") !== null && document.querySelector("#sweeps").textContent.includes("no sweep yet")`)
	bad := "name: page sweep\nagents: [orin-1]\nworkload:\n  sizes: [480p]\n  cameras: [1, 0]\n  requests_per_level: 2\n  multi_image_sizes: []\n"
	b.js("submit a sweep with a mistake", setValue("yaml", bad)+setValue("token", l.Controller().APIToken())+click("submit"))
	b.poll(`document.querySelector("[data-error-line]") !== null`)
	if got := b.text(`[data-error-line="5"]`); !strings.Contains(got, "workload.cameras[1]: 0, want 1..") {
		t.Errorf("the message under line 5 is %q", got)
	}
	if got := b.text(`#source .bad-line`); !strings.Contains(got, "cameras: [1, 0]") {
		t.Errorf("the marked line is %q, want line 5", got)
	}
	var stored []protocol.Sweep
	getJSON(t, l.url()+"/api/sweeps", &stored)
	if len(stored) != 0 {
		t.Fatalf("a refused sweep was stored: %+v", stored)
	}

	good := strings.Replace(bad, "[1, 0]", "[1, 2]", 1)
	b.js("submit the corrected sweep", setValue("yaml", good)+click("submit"))
	b.poll(`location.pathname.startsWith("/sweeps/sw")`)
	b.poll(`document.getElementById("outcome") && document.getElementById("outcome").textContent.startsWith("done, all 1 completed")`)
	b.poll(`document.querySelector("#answer .answer") !== null`)
	answer := b.text("#answer")
	for _, want := range []string{"Cosmos3-Edge", "Jetson AGX Orin", "SIMULATED", "Open these rows in the explorer"} {
		if !strings.Contains(answer, want) {
			t.Errorf("the answer %q lacks %q", answer, want)
		}
	}
	if got := b.text("#jobs"); !strings.Contains(got, "completed") || !strings.Contains(got, "orin-1") {
		t.Errorf("jobs %q", got)
	}

	b.do("back to /sweeps", chromedp.Navigate(l.url()+"/sweeps"))
	b.poll(`document.querySelector("#sweeps tr[data-sweep]") !== null`)
	if got := b.text("#sweeps"); !strings.Contains(got, "page sweep") || !strings.Contains(got, "done") || !strings.Contains(got, "1 completed") {
		t.Errorf("the list %q lacks the sweep done", got)
	}
}

// Cancelling on /sweeps/{id} with the token stops the running job and
// cancels the queued one; the page shows both cancelled.
func TestSweepPageCancels(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	l := newLab(t, ctx, simlab.Options{})
	l.startAgent(agx("orin-1"))
	w := tinyWorkload(5000)
	w.Cameras = []int{1, 2, 4, 8}
	s, err := l.Submit(ctx, protocol.Sweep{Agents: []string{"orin-1"}, Deployments: nil, Workload: w})
	if err != nil {
		t.Fatal(err)
	}
	s2, err := l.Submit(ctx, protocol.Sweep{Agents: []string{"orin-1"}, Workload: w})
	if err != nil {
		t.Fatal(err)
	}
	running := s.Jobs[0]
	l.waitState(running, protocol.JobRunning, 1)

	b := openBrowser(t)
	b.do("open the second sweep", chromedp.Navigate(l.url()+"/sweeps/"+s2.ID))
	b.poll(`document.querySelector("#jobs tr[data-job] .cancel-job") !== null`)
	b.js("cancel its queued job with the token", setValue("token", l.Controller().APIToken())+`document.querySelector("#jobs .cancel-job").click();`)
	b.poll(`document.querySelector("#jobs td.state")?.textContent.startsWith("cancelled")`)

	b.do("open the first sweep", chromedp.Navigate(l.url()+"/sweeps/"+s.ID))
	// The running job shows its combination and live TTFT.
	b.poll(`document.querySelector("#jobs td.combo")?.textContent.includes(" of 4 · 480p")`)
	b.js("cancel the whole sweep", click("cancel-sweep"))
	b.poll(`document.getElementById("message").textContent.includes("cancel the sweep")`)
	l.waitState(running, protocol.JobCancelled, 1)
	b.poll(`document.querySelector("#jobs td.state")?.textContent.startsWith("cancelled")`)
	b.poll(`document.getElementById("outcome")?.textContent.startsWith("done, 1 of 1 not completed")`)
}

// setValue and click are scripts that do in the page what a user does.
func setValue(id, value string) string {
	v, _ := json.Marshal(value)
	return fmt.Sprintf("document.getElementById(%q).value = %s;", id, v)
}

func click(id string) string { return fmt.Sprintf("document.getElementById(%q).click();", id) }
