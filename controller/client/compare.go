package client

import (
	"context"
	"net/url"

	"github.com/vlmfleet/vlmfleet/explorer"
)

// Compare sets run b against the earlier run a of the same configuration
// (GET /api/explorer/compare). Runs of different configurations answer 409,
// an *APIError whose message names the parts that differ.
func (c *Client) Compare(ctx context.Context, a, b string) (explorer.Comparison, error) {
	path := explorer.PathCompare + "?" + url.Values{"a": {a}, "b": {b}}.Encode()
	return get[explorer.Comparison](ctx, c, "compare runs "+a+" and "+b, path, maxAnswer)
}
