package controller

import (
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vlmfleet/vlmfleet/internal/testutil/browsertest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// The sweep page names the sweep's power axis and each job's setting.
func TestSweepPageShowsPower(t *testing.T) {
	path := chromium(t)
	c := startFleetController(t)
	helloPower(t, c, "orin-1", orinPower, "d1")
	s := submit(t, c, protocol.Sweep{Agents: []string{"orin-1"}, Workload: testWorkload(), PowerModes: []string{"15W", "MAXN"}})
	ctx := browsertest.Open(t, path, 60*time.Second)
	if err := chromedp.Do(ctx, chromedp.Navigate(c.HTTPURL()+"/sweeps/"+s.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelectorAll("#jobs tr[data-job]").length === 2`,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("the jobs never showed: %v", err)
	}
	powers, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#jobs tr[data-job] .deployment")].map(td => td.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"d115W", "d1MAXN"}; !slices.Equal(powers, want) {
		t.Errorf("job deployments %q, want %q", powers, want)
	}
	// The summary is drawn again at each event: read it in one evaluation.
	axis, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.getElementById("power-axis") || {}).textContent || ""`))
	if err != nil || axis != "Power: each agent in 15W, MAXN (the settings that apply to it)" {
		t.Errorf("power axis %q, %v", axis, err)
	}
}
