package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/vlmfleet/vlmfleet/controller/api"
)

// DrainAgent drains the agent (drained true: it finishes its job and takes
// no more) or takes it back (false), and returns the agent as the
// controller now shows it.
func (c *Client) DrainAgent(ctx context.Context, id string, drained bool) (api.AgentView, error) {
	method, what := http.MethodPost, "drain agent "+id
	if !drained {
		method, what = http.MethodDelete, "undrain agent "+id
	}
	return call[api.AgentView](ctx, c, what, method, "/api/agents/"+url.PathEscape(id)+"/drain", nil, maxAnswer, http.StatusOK)
}

// ForgetAgent removes an offline agent from the controller's fleet; its
// results stay. An online agent is refused (409).
func (c *Client) ForgetAgent(ctx context.Context, id string) (api.AgentForgotten, error) {
	return call[api.AgentForgotten](ctx, c, "forget agent "+id, http.MethodDelete, "/api/agents/"+url.PathEscape(id), nil, maxAnswer, http.StatusOK)
}
