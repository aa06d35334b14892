package jobs

import (
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
)

// AgentStatus is an agent as the controller tracks it: what the API shows
// (api.AgentView) and what only the controller uses. The controller makes
// it from the store, the live presence and the agent's processes; the
// scheduler and the stall checks work on it.
type AgentStatus struct {
	api.AgentView
	// StateSince is when the heartbeats last changed State or JobID
	// (controller time; zero without heartbeats), for StalledSince.
	StateSince time.Time
}
