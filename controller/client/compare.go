package client

import (
	"context"
	"net/url"

	"github.com/vlmfleet/vlmfleet/controller/explorerapi"
)

// Compare sets run b against the earlier run a of the same configuration
// (GET /api/explorer/compare). Runs of different configurations answer 409,
// an *APIError whose message names the parts that differ.
func (c *Client) Compare(ctx context.Context, a, b string) (explorerapi.Comparison, error) {
	path := explorerapi.PathCompare + "?" + url.Values{"a": {a}, "b": {b}}.Encode()
	return get[explorerapi.Comparison](ctx, c, "compare runs "+a+" and "+b, path, maxAnswer)
}
