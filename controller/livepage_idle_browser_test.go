package controller

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// TestLivePageHidesAnIdleAgentsOldTelemetry: an agent samples while it
// measures; after its job, its last sample ("65 %, 399.2 W") is not what the
// device does now, and the live page must not show it as current.
func TestLivePageHidesAnIdleAgentsOldTelemetry(t *testing.T) {
	path := chromium(t)
	c := startController(t, t.TempDir())
	_, a := announced(t, c, "rtx-1", "qwen-q8")
	util, watts := 65.0, 399.2
	tick := func(at time.Time) {
		t.Helper()
		data, _ := json.Marshal(protocol.TelemetryTick{Schema: 1, AgentID: "rtx-1", Sample: protocol.TelemetrySample{Time: at, GPUUtil: &util, PowerW: &watts}})
		if err := a.nc.Publish(protocol.AgentSubject("rtx-1", protocol.KindTelemetry), data); err != nil {
			t.Fatal(err)
		}
	}
	// The end of the last job, two minutes ago; the controller keeps it.
	tick(time.Now().Add(-2 * time.Minute))
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, tel := c.live.Snapshot(); len(tel["rtx-1"]) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the controller never kept the telemetry tick")
		}
		time.Sleep(20 * time.Millisecond)
	}
	poll, text := openLive(t, path, c.HTTPURL())
	poll(`document.getElementById("conn").textContent === "live"`)
	poll(`document.querySelector("#agents").textContent.includes("rtx-1")`)
	if got := text("#agents"); contains(got, "65 %") || contains(got, "399.2 W") {
		t.Errorf("an idle agent shows its last job's telemetry as current: %q", got)
	}
	// A sample arriving now is current.
	tick(time.Now())
	poll(`document.querySelector("#agents").textContent.includes("399.2 W")`)
}
