package controller

import (
	"slices"
	"strings"
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

// On a mixed fleet the sweep page says which agent the power axis does not
// apply to, and at what setting it is measured instead.
func TestSweepPageSaysWhoIsMeasuredAtItsCurrentSetting(t *testing.T) {
	path := chromium(t)
	c := startFleetController(t)
	helloPower(t, c, "orin-1", orinPower, "d1")
	helloPower(t, c, "gpu-1", gpuPower, "d1")
	s := submit(t, c, protocol.Sweep{Agents: []string{"orin-1", "gpu-1"}, Workload: testWorkload(), PowerModes: []string{"15W", "MAXN"}})
	ctx := browsertest.Open(t, path, 60*time.Second)
	if err := chromedp.Do(ctx, chromedp.Navigate(c.HTTPURL()+"/sweeps/"+s.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("sweep-notes") !== null`,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("the sweep's notes never showed: %v", err)
	}
	notes, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#sweep-notes li")].map(li => li.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	want := "gpu-1: measured at its current power setting (450 W limit), none of the sweep's applying: it has no nvpmodel modes (a GPU host takes power_limits_w)"
	if len(notes) != 1 || !strings.HasPrefix(notes[0], want) {
		t.Errorf("the sweep's notes %q, want one: %q", notes, want)
	}
}
