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
