package controller

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// The drain the heartbeats are checked against is kept in memory after the
// first read; a drain changed through the API changes it too, so a
// heartbeat still saying the old drain is answered with the new one.
func TestHeartbeatsAreCheckedAgainstTheLatestDrain(t *testing.T) {
	c := startFleetController(t)
	a1 := helloLabelled(t, c, "a1", nil, "d1")
	ctl := a1.controlMessages(t)
	base := c.HTTPURL()

	a1.drainedHeartbeat(t, false) // agrees with the store: the drain is now known
	eventually(t, "the stored drain learnt from a heartbeat", func() bool { _, known := c.live.StoredDrain("a1"); return known })
	if code, body := postJSON(t, base+"/api/agents/a1/drain", ""); code != http.StatusOK {
		t.Fatalf("drain a1: %d %s", code, body)
	}
	if d := nextDrain(t, ctl); !d.Drained {
		t.Fatalf("the agent was told %+v, want drained", d)
	}
	// A heartbeat that agrees is answered with nothing. The controller
	// handles one agent's heartbeats in order and answers a request after
	// its check, so once the answer to the next one is in, anything the
	// first made has arrived.
	a1.drainedHeartbeat(t, true)
	hb, _ := json.Marshal(protocol.Heartbeat{Schema: 1, AgentID: "a1", Time: time.Now(), State: protocol.AgentIdle, Seq: 3, Drained: true})
	if _, err := a1.nc.Request(protocol.AgentSubject("a1", protocol.KindHeartbeat), hb, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if len(ctl) != 0 {
		t.Fatalf("a heartbeat that agrees with the drain was answered with %+v", nextDrain(t, ctl))
	}
	if code, body := request(t, http.MethodDelete, base+"/api/agents/a1/drain", ""); code != http.StatusOK {
		t.Fatalf("take a1 back: %d %s", code, body)
	}
	if d := nextDrain(t, ctl); d.Drained {
		t.Fatalf("the agent was told %+v, want taken back", d)
	}
	// The undrain was lost on its way: the next heartbeat still says drained.
	a1.drainedHeartbeat(t, true)
	if d := nextDrain(t, ctl); d.Drained {
		t.Fatalf("after a heartbeat still drained the agent was told %+v, want taken back", d)
	}
}
