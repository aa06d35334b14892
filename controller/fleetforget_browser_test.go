package controller

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/internal/testutil/browsertest"
)

// A silent agent is listed among /fleet's fleet matters while the page's
// header still says health ok (no banner), and the Forget button of an
// offline agent, with the token typed, removes it from the fleet.
func TestFleetPageForgetsASilentAgent(t *testing.T) {
	path := chromium(t)
	c := startControllerWith(t, Options{DataDir: t.TempDir(), HeartbeatTimeout: time.Second})
	ev, _ := announced(t, c, "orin-9", "d1")
	ev.waitFor(t, 1, func(e api.Event) bool {
		v, ok := e.Data.(api.AgentView)
		return e.Kind == api.EventAgent && ok && v.ID == "orin-9" && !v.Online
	})
	ctx := browsertest.Open(t, path, 60*time.Second)
	if err := chromedp.Do(ctx, chromedp.Navigate(c.HTTPURL()+"/fleet")); err != nil {
		t.Fatalf("open /fleet: %v", err)
	}
	poll := browsertest.Poller(t, ctx)
	poll(`document.getElementById("fleet-problems").textContent.includes("orin-9 silent for")`)
	banner, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("health").style.display + "|" + document.getElementById("health-ok").textContent`))
	if err != nil || banner != "none|health ok" {
		t.Errorf("health banner and mark with a silent agent: %q (%v), want no banner, health ok", banner, err)
	}
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#token"), c.APIToken())); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`tr[data-agent="orin-9"] button.forget`), chromedp.NodeVisible)); err != nil {
		t.Fatalf("click Forget: %v", err)
	}
	poll(`document.querySelector('tr[data-agent="orin-9"]') === null`)
	if agents, err := c.Agents(waitCtx(t)); err != nil || len(agents) != 0 {
		t.Errorf("agents after Forget: %+v %v, want none", agents, err)
	}
}
