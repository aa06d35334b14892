package controller

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vlmfleet/vlmfleet/internal/testutil/browsertest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// The fleet page shows each agent's power: the mode (Jetson) or limit
// (GPU) it runs in, whether sweeps may switch it (the reason as the
// title when not) and the modes or range it has; a heartbeat in another
// mode shows at once, and a reload keeps it (the API's view).
func TestFleetPageShowsPower(t *testing.T) {
	path := chromium(t)
	c := startFleetController(t)
	orin := helloPower(t, c, "orin-1", orinPower, "d1")
	fixed := *orinPower
	fixed.Mode, fixed.Switchable, fixed.Reason = "MAXN", false, "power.switch is off in its configuration"
	helloPower(t, c, "orin-fixed", &fixed, "d1")
	helloPower(t, c, "gpu-1", gpuPower, "d1")
	helloPower(t, c, "old-1", nil, "d1")

	ctx := browsertest.Open(t, path, 60*time.Second)
	if err := chromedp.Do(ctx, chromedp.Navigate(c.HTTPURL()+"/fleet")); err != nil {
		t.Fatalf("open /fleet: %v", err)
	}
	poll := browsertest.Poller(t, ctx)
	type power struct{ Text, Now, Switch, Title string }
	read := func(id string) power {
		t.Helper()
		p, err := chromedp.Run(ctx, chromedp.Evaluate[power](`(() => {
			const d = document.querySelector('tr[data-agent="`+id+`"] .power');
			if (!d) return {Text: "", Now: "", Switch: "", Title: ""};
			const s = d.querySelector('.switch');
			return {Text: d.textContent, Now: d.dataset.power, Switch: s ? s.textContent : "", Title: s ? s.title : ""};
		})()`))
		if err != nil {
			t.Fatalf("power of %s: %v", id, err)
		}
		return p
	}
	poll(`document.getElementById("conn").textContent === "live"`)
	for id, want := range map[string]power{
		"orin-1":     {Text: "15W (switchable)modes: MAXN, 10W, 15W", Now: "15W", Switch: "(switchable)"},
		"orin-fixed": {Text: "MAXN (fixed)modes: MAXN, 10W, 15W", Now: "MAXN", Switch: "(fixed)", Title: "power.switch is off in its configuration"},
		"gpu-1":      {Text: "450 W limit (switchable)limit 150–600 W", Now: "450 W limit", Switch: "(switchable)"},
		"old-1":      {},
	} {
		got := read(id)
		if want.Title == "" {
			got.Title = "" // a switchable agent's title is the page's own words
		}
		if got != want {
			t.Errorf("%s: power %+v, want %+v", id, got, want)
		}
	}

	// A job switched orin-1 to MAXN: its heartbeat says so.
	hb, _ := json.Marshal(protocol.Heartbeat{Schema: 1, AgentID: "orin-1", Time: time.Now(), State: protocol.AgentIdle, Seq: 1, PowerMode: "MAXN"})
	if err := orin.nc.Publish(protocol.AgentSubject("orin-1", protocol.KindHeartbeat), hb); err != nil {
		t.Fatal(err)
	}
	poll(`(document.querySelector('tr[data-agent="orin-1"] .power') || {dataset: {}}).dataset.power === "MAXN"`)
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	poll(`document.getElementById("conn").textContent === "live"`)
	if got := read("orin-1"); got.Text != "MAXN (switchable)modes: MAXN, 10W, 15W" {
		t.Errorf("orin-1 after a heartbeat in MAXN and a reload: %q", got.Text)
	}
}
