package controller

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vlmfleet/vlmfleet/internal/testutil/browsertest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// TestFleetPageInBrowser loads /fleet in headless chromium: it shows each
// agent with its device, labels, deployments (and the broken one's
// reason), follows a busy agent's job and telemetry, shows no figures for
// an idle one, and drains and takes back an agent with the token typed on
// the page (without it, it says so and changes nothing).
func TestFleetPageInBrowser(t *testing.T) {
	path := chromium(t)
	// Agents here send heartbeats only when the test says; a long timeout
	// keeps them online however slowly the browser starts.
	c := startControllerWith(t, Options{DataDir: t.TempDir(), HeartbeatTimeout: 10 * time.Minute})
	busy := helloLabelled(t, c, "orin-1", map[string]string{"site": "lab1"}, "qwen-q8")
	ev := watchEvents(t, c)
	idle := newFakeAgent(t, c, "orin-2")
	h := protocol.AgentHello{
		Schema: protocol.SchemaVersion, Level: protocol.AgentLevel, AgentID: "orin-2", Hostname: "host-orin-2", Version: "test", StartedAt: time.Now().UTC(),
		Device:            protocol.DeviceFacts{Name: "Jetson Orin NX", Kind: protocol.DeviceJetson, Jetson: &protocol.JetsonFacts{Model: "NVIDIA Jetson Orin NX", PowerMode: "MAXN"}},
		BrokenDeployments: []protocol.BrokenDeployment{{ID: "big", Reason: "deployments[0].model: /models/big.gguf not found under the model roots"}},
	}
	idle.publish(t, protocol.KindHello, h, protocol.HelloMsgID("orin-2", h.StartedAt.UnixNano()))
	ev.waitFor(t, 1, helloStored(h))

	ctx := browsertest.Open(t, path, 60*time.Second)
	if err := chromedp.Do(ctx, chromedp.Navigate(c.HTTPURL()+"/fleet")); err != nil {
		t.Fatalf("open /fleet: %v", err)
	}
	poll := browsertest.Poller(t, ctx)
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(sel))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return v
	}
	row := func(id string) string { return `tr[data-agent="` + id + `"]` }
	poll(`document.getElementById("conn").textContent === "live"`)
	for id, wants := range map[string][]string{
		"orin-1": {"orin-1", "SIMULATED", "site=lab1", "enrolled ", "with agent-creds", "Jetson AGX Orin", "qwen-q8", "idle", "Drain"},
		"orin-2": {"orin-2", "Jetson Orin NX", "power mode MAXN", "BROKEN", "big", "not found under the model roots", "offers no deployment"},
	} {
		got := text(row(id))
		for _, want := range wants {
			if !contains(got, want) {
				t.Errorf("row of %s %q lacks %q", id, got, want)
			}
		}
	}

	// Busy: the job and combination, and a sparkline of each figure.
	w := testWorkload()
	w.Cameras = []int{1, 4}
	job := submit(t, c, protocol.Sweep{Agents: []string{"orin-1"}, Workload: w}).Jobs[0]
	busy.heartbeat(t, job)
	util, power, temp := 65.0, 39.2, 51.0
	for i := range 3 {
		u, p := util+float64(i), power+float64(i)
		tick, _ := json.Marshal(protocol.TelemetryTick{Schema: 1, AgentID: "orin-1", JobID: job,
			Sample: protocol.TelemetrySample{Time: time.Now().UTC(), GPUUtil: &u, PowerW: &p, TempC: &temp}})
		if err := busy.nc.Publish(protocol.AgentSubject("orin-1", protocol.KindTelemetry), tick); err != nil {
			t.Fatal(err)
		}
	}
	prog, _ := json.Marshal(protocol.Progress{Schema: 1, AgentID: "orin-1", JobID: job, RunID: "r", Time: time.Now().UTC(), Phase: protocol.PhaseMeasure,
		Combo: protocol.ComboKey{Size: "720p", Images: 1, Cameras: 4}, ComboIdx: 2, ComboN: 5, Done: 3, Total: 8})
	if err := busy.nc.Publish(protocol.AgentSubject("orin-1", protocol.KindProgress), prog); err != nil {
		t.Fatal(err)
	}
	poll(`document.querySelectorAll('` + row("orin-1") + ` .metric svg').length === 3 && document.querySelector('` + row("orin-1") + ` .combo') !== null`)
	got := text(row("orin-1"))
	for _, want := range []string{"busy", job, "combination 3 of 5 · 720p · 1 img · 4 cam · 3/8", "67 %", "41.2 W", "51 °C"} {
		if !contains(got, want) {
			t.Errorf("busy row %q lacks %q", got, want)
		}
	}
	if got := text(row("orin-2")); contains(got, " %") || contains(got, " W") {
		t.Errorf("idle agent shows figures: %q", got)
	}

	// Idle again: the last job's figures go.
	busy.drainedHeartbeat(t, false)
	poll(`document.querySelectorAll('` + row("orin-1") + ` .metric svg').length === 0`)

	// Drain without the token: the page says so; with it, the agent is drained.
	click := func(sel string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible)); err != nil {
			t.Fatalf("click %s: %v", sel, err)
		}
	}
	// The rows are drawn again at each live event: a click that landed on
	// a row just replaced did nothing, and clicking again without the
	// token changes nothing either.
	for attempt := 1; ; attempt++ {
		click(row("orin-1") + " button.drain")
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('`+row("orin-1")+` .error') !== null`,
			chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(4*time.Second)))
		if err == nil {
			break
		}
		if attempt == 5 {
			t.Fatalf("no error shown after %d clicks on drain without a token: %v", attempt, err)
		}
	}
	if got := text(row("orin-1") + " .error"); !contains(got, "API token") {
		t.Errorf("drain without a token says %q", got)
	}
	if agentByID(t, c, "orin-1").Drained {
		t.Fatal("drained without the token")
	}
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#token"), c.APIToken())); err != nil {
		t.Fatal(err)
	}
	click(row("orin-1") + " button.drain")
	poll(`document.querySelector('` + row("orin-1") + ` .state').textContent.includes("DRAINED")`)
	if !agentByID(t, c, "orin-1").Drained {
		t.Error("the page shows DRAINED but the controller has not drained orin-1")
	}
	if got := text(row("orin-1") + " button.drain"); got != "Undrain" {
		t.Errorf("the button of a drained agent reads %q", got)
	}
	click(row("orin-1") + " button.drain")
	poll(`!document.querySelector('` + row("orin-1") + ` .state').textContent.includes("DRAINED")`)
	if agentByID(t, c, "orin-1").Drained {
		t.Error("undrain from the page did not reach the controller")
	}
}
