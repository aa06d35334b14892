package controller

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vlmfleet/vlmfleet/protocol"
)

func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("VLMFLEET_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on PATH (scripts/test installs Debian's chromium)")
	return ""
}

// TestLivePageInBrowser loads /live in headless chromium and checks that it
// shows a simulated agent and follows progress pushed over /api/events.
func TestLivePageInBrowser(t *testing.T) {
	path := chromium(t)
	c := startController(t, t.TempDir())
	ev := watchEvents(t, c)
	a := newFakeAgent(t, c, "orin-1")
	ev.waitFor(t, 1, helloStored(a.hello(t, "qwen-q8")))

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	defer cancel()

	if err := chromedp.Do(ctx, chromedp.Navigate(c.HTTPURL()+"/live")); err != nil {
		t.Fatalf("open /live: %v", err)
	}
	poll := func(js string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			t.Fatalf("waiting for %s: %v", js, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(sel))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return v
	}
	poll(`document.getElementById("conn").textContent === "live"`)
	agentsText := text("#agents")
	for _, want := range []string{"orin-1", "SIMULATED", "Jetson AGX Orin", "qwen-q8"} {
		if !contains(agentsText, want) {
			t.Errorf("agents table %q lacks %q", agentsText, want)
		}
	}
	p := protocol.Progress{Schema: 1, AgentID: "orin-1", JobID: "job-1", RunID: "r", Time: time.Now().UTC(), Phase: protocol.PhaseMeasure,
		Combo: protocol.ComboKey{Size: "720p", Images: 1, Cameras: 4}, ComboIdx: 2, ComboN: 5, Done: 3, Total: 8, MeanTTFT: 2.41, Simulated: true}
	data, _ := json.Marshal(p)
	if err := a.nc.Publish(protocol.AgentSubject("orin-1", protocol.KindProgress), data); err != nil {
		t.Fatal(err)
	}
	poll(`[...document.querySelectorAll("#jobs .combo")].some(e => e.textContent.includes("3/8"))`)
	jobsText := text("#jobs")
	for _, want := range []string{"job-1", "3/5 · 720p · 1 img · 4 cam", "TTFT 2.41 s", "SIMULATED"} {
		if !contains(jobsText, want) {
			t.Errorf("jobs %q lack %q", jobsText, want)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
