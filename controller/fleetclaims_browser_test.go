package controller

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/internal/testutil/browsertest"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// /fleet shows on the agent's row a second process refused with its id
// (its host, and what to do) and an agent this controller cannot serve
// (the release it runs and the one it needs), and lists both among the
// fleet's matters, while the header still says health ok.
func TestFleetPageShowsASecondProcessAndAnUpgrade(t *testing.T) {
	path := chromium(t)
	c := startControllerWith(t, Options{DataDir: t.TempDir(), Version: "0.6.0", HeartbeatTimeout: 10 * time.Minute})
	first := func(h *protocol.AgentHello) { h.Instance, h.SpoolLock, h.Hostname = "aaaa", "f1a2b3c4", "lab-1" }
	a := helloWith(t, c, "orin-1", first, "d1")
	helloWith(t, c, "old1", func(h *protocol.AgentHello) { h.Level, h.Version = 0, "0.5.2" }, "d1")

	ev := watchEvents(t, c)
	second := protocol.AgentHello{Schema: protocol.SchemaVersion, Level: protocol.AgentLevel, AgentID: "orin-1", Hostname: "lab-3",
		Version: "test", StartedAt: time.Now().UTC(), Instance: "bbbb", SpoolLock: "e5d6c7b8", Simulated: true,
		Device: protocol.DeviceFacts{Name: "Jetson AGX Orin", Kind: protocol.DeviceSimulated}}
	a.publish(t, protocol.KindHello, second, protocol.HelloMsgID("orin-1", second.StartedAt.UnixNano()))
	ev.waitFor(t, 1, func(e api.Event) bool {
		v, ok := e.Data.(api.AgentView)
		return e.Kind == api.EventAgent && ok && v.ID == "orin-1" && len(v.Duplicates) == 1
	})

	ctx := browsertest.Open(t, path, 60*time.Second)
	if err := chromedp.Do(ctx, chromedp.Navigate(c.HTTPURL()+"/fleet")); err != nil {
		t.Fatalf("open /fleet: %v", err)
	}
	poll := browsertest.Poller(t, ctx)
	poll(`document.querySelector('tr[data-agent="orin-1"]') !== null && document.querySelector('tr[data-agent="old1"]') !== null`)
	poll(`document.getElementById("fleet-problems").textContent.includes("` + ProblemAgentUpgrade + `")`)
	type page struct{ Orin, Old, Problems, Mark string }
	got, err := chromedp.Run(ctx, chromedp.Evaluate[page](`({Orin: document.querySelector('tr[data-agent="orin-1"] .state').textContent,
		Old: document.querySelector('tr[data-agent="old1"] .state').textContent,
		Problems: document.getElementById("fleet-problems").textContent,
		Mark: document.getElementById("health").style.display + "|" + document.getElementById("health-ok").textContent})`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "second process refused: host lab-3 (instance bbbb); stop one of them"; !strings.Contains(got.Orin, want) {
		t.Errorf("orin-1's state %q lacks %q", got.Orin, want)
	}
	if want := "NEEDS UPGRADE: runs 0.5.2, needs 0.6.0"; !strings.Contains(got.Old, want) {
		t.Errorf("old1's state %q lacks %q", got.Old, want)
	}
	for _, want := range []string{ProblemAgentDuplicate + ": orin-1: a second process claims its id from lab-3", ProblemAgentUpgrade + ": old1"} {
		if !strings.Contains(got.Problems, want) {
			t.Errorf("the fleet's matters %q lack %q", got.Problems, want)
		}
	}
	if got.Mark != "none|health ok" {
		t.Errorf("health banner and mark %q, want no banner, health ok: both are fleet matters", got.Mark)
	}
}
