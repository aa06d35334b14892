package store

import (
	"errors"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// TouchAgents moves each known agent's last-seen forward, in one call;
// it never moves one back, and makes up no agent that never announced.
func TestTouchAgentsMovesLastSeenForwardOnly(t *testing.T) {
	s := openTest(t)
	t0 := time.Unix(1700000000, 0).UTC()
	for _, id := range []string{"a1", "a2"} {
		if err := s.PutAgentHello(protocol.AgentHello{Schema: 1, Level: protocol.AgentLevel, AgentID: id, Hostname: "h", StartedAt: t0}, t0); err != nil {
			t.Fatal(err)
		}
	}
	later, earlier := t0.Add(time.Minute), t0.Add(-time.Minute)
	if err := s.TouchAgents(map[string]time.Time{"a1": later, "a2": earlier, "ghost": later}); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]time.Time{"a1": later, "a2": t0} {
		a, err := s.Agent(id)
		if err != nil {
			t.Fatal(err)
		}
		if !a.LastSeen.Equal(want) {
			t.Errorf("%s last seen %v, want %v", id, a.LastSeen, want)
		}
	}
	if _, err := s.Agent("ghost"); !errors.Is(err, ErrNotFound) {
		t.Errorf("an agent that never announced: %v, want not found", err)
	}
}
