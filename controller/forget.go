package controller

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// ForgetAgent removes an offline agent from the fleet: it is no longer
// listed, counted as silent or chosen by a sweep. What it measured stays
// (runs, jobs and sweeps), and so do its credentials: an agent that comes
// back announces itself and is known again. An online agent is refused
// (409): it would announce itself again at its next start, and its jobs
// are under way.
func (c *Controller) ForgetAgent(ctx context.Context, id string) (api.AgentForgotten, error) {
	if err := protocol.ValidateAgentID(id); err != nil {
		return api.AgentForgotten{}, &requestError{http.StatusBadRequest, err}
	}
	v, err := c.agentView(id)
	if err != nil {
		return api.AgentForgotten{}, err
	}
	now := time.Now()
	if v.Online {
		return api.AgentForgotten{}, &requestError{http.StatusConflict, fmt.Errorf(
			"agent %s is online (heard %s ago): stop it first (and revoke its credentials to keep it out: vlmfleet agent-creds revoke %s); an agent is forgotten once it is offline",
			id, now.Sub(v.LastSeen).Round(time.Second), id)}
	}
	if err := c.store.ForgetAgent(id); err != nil {
		return api.AgentForgotten{}, fmt.Errorf("controller: %w", err)
	}
	c.live.ForgetAgent(id)
	c.instances.forget(id)
	c.log.Info().Str("agent", id).Msg("agent forgotten; its results are kept")
	return api.AgentForgotten{AgentID: id, ForgottenAt: now.UTC()}, nil
}

func (c *Controller) handleForgetAgent(r *http.Request) (api.AgentForgotten, error) {
	return c.ForgetAgent(r.Context(), r.PathValue("id"))
}
