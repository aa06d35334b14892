package simlab_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vlmfleet/vlmfleet/harness/simlab"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// The demo's Jetson measured in two power modes, as `vlmfleet demo` sweeps
// it (simlab.DemoDevice.Sweeps, on a shorter ladder): the explorer shows
// both rows, each with its mode, its power at Max Cameras, joules per
// answer and the cost per camera per month at the page's default inputs;
// the lower mode draws less and keeps up with fewer cameras.
func TestDemoJetsonInTwoPowerModesInTheExplorer(t *testing.T) {
	ctx := testContext(t, 4*time.Minute)
	l := newLab(t, ctx, simlab.Options{})
	var dev simlab.DemoDevice
	for _, d := range simlab.Demo() {
		if d.LowPower != "" {
			dev = d
		}
	}
	if dev.LowPower == "" {
		t.Fatal("the demo measures no device in a second power mode")
	}
	dev.Models = dev.Models[:1]
	l.startAgent(dev.Device)
	w := protocol.DefaultWorkload()
	w.Sizes, w.Cameras, w.RequestsPerLevel = []string{"720p"}, []int{1, 2, 4}, 4
	w.MultiImageSizes, w.ImagesPerRequest, w.MultiImageRequests = nil, nil, 0
	planned, err := dev.Sweeps(w)
	if err != nil {
		t.Fatal(err)
	}
	var sweeps []protocol.Sweep
	for _, p := range planned {
		s, err := l.Submit(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		sweeps = append(sweeps, s)
	}
	if err := l.Wait(ctx, sweeps...); err != nil {
		t.Fatal(err)
	}

	b := openBrowser(t)
	b.do("open the explorer", chromedp.Navigate(l.url()+"/?size=720p"))
	b.poll(`document.querySelectorAll('#tbody tr.row').length === 2 && !!document.querySelector('#tbody .c-cost')`)
	type row struct{ Device, Max, Power, J, WPC, Cost string }
	rows, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]row](`[...document.querySelectorAll('#tbody tr.row')].map(tr => ({
		Device: tr.children[4].textContent, Max: tr.children[7].textContent,
		Power: tr.querySelector('.c-power').textContent, J: tr.querySelector('.c-jpa').textContent,
		WPC: tr.querySelector('.c-wpc').textContent, Cost: tr.querySelector('.c-cost').textContent}))`))
	if err != nil {
		t.Fatal(err)
	}
	byMode := map[string]row{}
	for _, r := range rows {
		_, mode, _ := strings.Cut(r.Device, " · ")
		byMode[mode] = r
	}
	maxn, low := byMode["MAXN"], byMode[dev.LowPower]
	if maxn.Device == "" || low.Device == "" {
		t.Fatalf("rows %+v, want %s · MAXN and · %s", rows, dev.Device.Device, dev.LowPower)
	}
	for _, r := range []row{maxn, low} {
		for name, v := range map[string]string{"power": r.Power, "J per answer": r.J, "W per camera": r.WPC, "cost per camera": r.Cost} {
			if v == "" || strings.Contains(v, "n/a") || strings.Contains(v, "–") {
				t.Errorf("%s: %s is %q, want a figure", r.Device, name, v)
			}
		}
	}
	if watts(t, low.Power) >= watts(t, maxn.Power) {
		t.Errorf("%s draws %s at Max Cameras, MAXN %s: want the lower mode to draw less", dev.LowPower, low.Power, maxn.Power)
	}
	if cameras(t, low.Max) > cameras(t, maxn.Max) {
		t.Errorf("%s keeps up with %s cameras, MAXN %s: want no more in the lower mode", dev.LowPower, low.Max, maxn.Max)
	}
	if !strings.Contains(b.text("#cost-head"), "USD") {
		t.Errorf("cost header %q, want the default currency", b.text("#cost-head"))
	}
}

// watts reads "43.9 W" (the page's power cell).
func watts(t *testing.T, s string) float64 {
	t.Helper()
	var w float64
	if _, err := fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(s), " W"), &w); err != nil {
		t.Fatalf("power cell %q: %v", s, err)
	}
	return w
}

// cameras reads "8+" or "2" (the Max Cameras cell).
func cameras(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(s), "+"), &n); err != nil {
		t.Fatalf("Max Cameras cell %q: %v", s, err)
	}
	return n
}
