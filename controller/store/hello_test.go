package store

import (
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
	bolt "go.etcd.io/bbolt"
)

// A hello that started more than MaxHelloAhead after it arrived is
// refused; one a little ahead (a clock that is seconds off) is kept. A
// hello from the future stored before this check holds back no later one.
func TestHelloFromTheFuture(t *testing.T) {
	s := openTest(t)
	at := time.Unix(1700000000, 0).UTC()
	forged := protocol.AgentHello{Schema: 1, Level: protocol.AgentLevel, AgentID: "a1", Hostname: "forged", StartedAt: time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)}
	wantReject(t, "a hello from 2099", s.PutAgentHello(forged, at), "started_at 2099-01-01T00:00:00Z is")
	if _, err := s.Agent("a1"); err == nil {
		t.Error("the refused hello made an agent")
	}
	skewed := protocol.AgentHello{Schema: 1, Level: protocol.AgentLevel, AgentID: "a1", Hostname: "skewed", StartedAt: at.Add(MaxHelloAhead - time.Second)}
	if err := s.PutAgentHello(skewed, at); err != nil {
		t.Errorf("a hello %s ahead: %v", MaxHelloAhead-time.Second, err)
	}

	// As an earlier version stored it.
	err := s.db.Update(func(tx *bolt.Tx) error {
		return putJSON(tx.Bucket(bucketAgents), "a2", &Agent{Hello: protocol.AgentHello{Schema: 1, Level: protocol.AgentLevel, AgentID: "a2", Hostname: "forged", StartedAt: forged.StartedAt},
			FirstSeen: at, HelloAt: at, LastSeen: at})
	})
	if err != nil {
		t.Fatal(err)
	}
	real := protocol.AgentHello{Schema: 1, Level: protocol.AgentLevel, AgentID: "a2", Hostname: "real", StartedAt: at.Add(time.Minute)}
	if err := s.PutAgentHello(real, at.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if a, _ := s.Agent("a2"); a.Hello.Hostname != "real" {
		t.Errorf("kept %q; want the real hello to replace the stored one from 2099", a.Hello.Hostname)
	}
}
