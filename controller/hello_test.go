package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// A hello dated far ahead of its arrival (forged, or from a clock gone
// wrong) is refused and recorded, so that it cannot stand in for the agent
// and keep its real hellos, which start earlier, from replacing it.
func TestHelloFromTheFutureIsRefused(t *testing.T) {
	c := startController(t, t.TempDir())
	ev, a := announced(t, c, "a1", "d1")
	forged := protocol.AgentHello{Schema: protocol.SchemaVersion, Level: protocol.AgentLevel, AgentID: "a1", Hostname: "forged-host",
		StartedAt: time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC), Simulated: true,
		Device: protocol.DeviceFacts{Name: "Forged GPU", Kind: protocol.DeviceSimulated}}
	a.publish(t, protocol.KindHello, forged, protocol.HelloMsgID("a1", forged.StartedAt.UnixNano()))
	eventually(t, "the hello from 2099 to be refused or stored", func() bool {
		rej, _ := c.store.Rejected(context.Background(), 0)
		v, _ := c.agentView("a1")
		return len(rej) > 0 || v.Hostname == "forged-host"
	})
	rej, err := c.store.Rejected(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rej) != 1 || !strings.Contains(rej[0].Reason, "started_at 2099-01-01T00:00:00Z is") || !strings.Contains(rej[0].Reason, "is the agent's clock right?") {
		t.Errorf("rejected: %+v; want the hello from 2099, saying why", rej)
	}
	real := a.hello(t, "d1")
	ev.waitFor(t, 1, helloStored(real))
	if v, err := c.agentView("a1"); err != nil || v.Hostname != real.Hostname || v.Device.Name == "Forged GPU" {
		t.Errorf("the agent after its real hello: %+v, %v", v, err)
	}
}
