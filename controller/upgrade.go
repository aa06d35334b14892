package controller

import (
	"cmp"
	"fmt"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// upgradeOf says what agent h needs before this controller can serve it:
// nil when its level is one the controller serves. An agent below
// protocol.MinAgentLevel makes its own job consumer, which agents may no
// longer do: it would connect, look idle and never take a job.
func (c *Controller) upgradeOf(h protocol.AgentHello) *api.AgentUpgrade {
	level := max(h.Level, 1)
	if level >= protocol.MinAgentLevel {
		return nil
	}
	needs := cmp.Or(c.opt.Version, "dev")
	return &api.AgentUpgrade{
		Version: cmp.Or(h.Version, "unknown"), Level: level, NeedsLevel: protocol.MinAgentLevel, NeedsVersion: needs,
		Reason: fmt.Sprintf("runs vlmfleet %s (agent level %d); this controller needs agent level %d: upgrade the agent to vlmfleet %s, "+
			"the controller's release (an agent of level %d makes its own job consumer, which agents may no longer do, so it never takes a job)",
			cmp.Or(h.Version, "unknown"), level, protocol.MinAgentLevel, needs, level),
	}
}
