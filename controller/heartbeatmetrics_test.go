package controller

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// /metrics counts the heartbeats taken in and how late each was handled,
// from its send time: what shows a controller falling behind its fleet.
func TestMetricsCountHeartbeatsAndTheirDelay(t *testing.T) {
	c := startController(t, t.TempDir())
	a := newFakeAgent(t, c, "a1")
	data, err := json.Marshal(protocol.Heartbeat{Schema: protocol.SchemaVersion, AgentID: "a1", Time: time.Now().Add(-2 * time.Second), State: protocol.AgentIdle, Seq: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.nc.Publish(protocol.AgentSubject("a1", protocol.KindHeartbeat), data); err != nil {
		t.Fatal(err)
	}
	var body string
	eventually(t, "the heartbeat counted", func() bool {
		_, body = request(t, http.MethodGet, c.HTTPURL()+"/metrics", "")
		return metricValue(t, body, "vlmfleet_heartbeats_total") == 1
	})
	for series, want := range map[string]float64{
		`vlmfleet_heartbeat_delay_seconds_bucket{le="1"}`:   0,
		`vlmfleet_heartbeat_delay_seconds_bucket{le="2.5"}`: 1,
		`vlmfleet_heartbeat_delay_seconds_count`:            1,
	} {
		if got := metricValue(t, body, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
}
