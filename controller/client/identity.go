package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/vlmfleet/vlmfleet/controller/api"
)

// CreateAgentCredentials enrols agent id with the controller's NATS server
// and returns its credentials; the seed is shown this once. Enrolling an
// agent again replaces its credentials, and closes connections made with
// the old ones. A controller on an external NATS server, or running
// --insecure, refuses (409): its error says why.
func (c *Client) CreateAgentCredentials(ctx context.Context, id string) (api.AgentCredentials, error) {
	return call[api.AgentCredentials](ctx, c, "create credentials for agent "+id, http.MethodPost,
		credentialsPath(id), nil, maxAnswer, http.StatusCreated)
}

// RevokeAgentCredentials revokes agent id's credentials: the controller
// closes its connections and admits it no more. An agent without active
// credentials is an error that Is ErrNotFound.
func (c *Client) RevokeAgentCredentials(ctx context.Context, id string) (api.AgentRevocation, error) {
	return call[api.AgentRevocation](ctx, c, "revoke credentials of agent "+id, http.MethodDelete,
		credentialsPath(id), nil, maxAnswer, http.StatusOK)
}

func credentialsPath(id string) string { return "/api/agents/" + url.PathEscape(id) + "/credentials" }
