package client

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/vlmfleet/vlmfleet/controller/explorerapi"
	"github.com/vlmfleet/vlmfleet/explorer/profiles"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// ExplorerProfiles is the latency and throughput lines f keeps (GET
// /api/explorer/profiles), every row checked as the wire type says.
func (c *Client) ExplorerProfiles(ctx context.Context, f profiles.Filter) (protocol.ProfileRows, error) {
	path := explorerapi.PathProfiles
	if v := f.Values(); len(v) > 0 {
		path += "?" + v.Encode()
	}
	raw, err := get[json.RawMessage](ctx, c, "explorer profiles", path, maxListAnswer)
	if err != nil {
		return protocol.ProfileRows{}, err
	}
	rows, err := protocol.DecodeProfileRows(raw)
	if err != nil {
		return protocol.ProfileRows{}, fmt.Errorf("explorer profiles: %w", err)
	}
	return rows, nil
}
