package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/vlmfleet/vlmfleet/controller/api"
)

// CreateJoinToken makes a join token; its join string (Join), which holds
// the secret, is shown this once. A controller without TLS on its API,
// on an external NATS server or running --insecure refuses (409): its
// error says why.
func (c *Client) CreateJoinToken(ctx context.Context, req api.JoinTokenRequest) (api.JoinTokenCreated, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return api.JoinTokenCreated{}, err
	}
	return call[api.JoinTokenCreated](ctx, c, "create a join token", http.MethodPost, "/api/join-tokens", body, maxAnswer, http.StatusCreated)
}

// JoinTokens lists the controller's join tokens, without their secrets.
func (c *Client) JoinTokens(ctx context.Context) ([]api.JoinTokenView, error) {
	return get[[]api.JoinTokenView](ctx, c, "list join tokens", "/api/join-tokens", maxListAnswer)
}

// RevokeJoinToken makes token id refuse every join from now on. An
// unknown id is an error that Is ErrNotFound.
func (c *Client) RevokeJoinToken(ctx context.Context, id string) (api.JoinTokenView, error) {
	return call[api.JoinTokenView](ctx, c, "revoke join token "+id, http.MethodDelete,
		"/api/join-tokens/"+url.PathEscape(id), nil, maxAnswer, http.StatusOK)
}
