package loadgen

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// profileBody is a profile request cut around its text and images, for
// one OSL: the fields before the text, with the engine's forced-length
// switches and without them (a server that refuses them is asked again
// without), and the switches' names.
type profileBody struct {
	withSwitches, withoutSwitches string
	// forcedBy names the switches that force the length, max_tokens not
	// counted: it caps, it does not force.
	forcedBy []string
}

const (
	profileImageOpen  = `},{"type":"image_url","image_url":{"url":"`
	profileImageClose = `"}`
	profileEnd        = `}]}]}`
)

// extraBodyOf reads the workload's extra body, refusing one that is not a
// JSON object or that sets a field vlmfleet owns.
func extraBodyOf(raw json.RawMessage) (map[string]json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("extra_body: want a JSON object: %w", err)
	}
	for k := range m {
		if slices.Contains(protocol.ProfileOwnedFields, strings.ToLower(k)) {
			return nil, fmt.Errorf("extra_body sets %q, which vlmfleet sets itself (it may not set %s)",
				k, strings.Join(protocol.ProfileOwnedFields, ", "))
		}
	}
	return m, nil
}

// buildProfileBody lays out the requests of an OSL: the target's extra
// fields, then the workload's, then the fields vlmfleet owns (model,
// stream, usage when streamed, max_tokens), then forced's switches.
func buildProfileBody(t Target, extra map[string]json.RawMessage, osl int, stream bool,
	forced func(int) map[string]any) (profileBody, error) {
	top := map[string]any{}
	for k, v := range t.ExtraBody {
		top[k] = v
	}
	for k, v := range extra {
		top[k] = v
	}
	top["model"] = t.Model
	top["stream"] = stream
	delete(top, "stream_options")
	if stream {
		top["stream_options"] = map[string]any{"include_usage": true}
	}
	top["max_tokens"] = osl
	var body profileBody
	var err error
	if body.withoutSwitches, err = profilePrefix(top); err != nil {
		return body, err
	}
	if forced != nil {
		for k, v := range forced(osl) {
			top[k] = v
			if k != "max_tokens" {
				body.forcedBy = append(body.forcedBy, k)
			}
		}
		sort.Strings(body.forcedBy)
	}
	body.withSwitches, err = profilePrefix(top)
	return body, err
}

// profilePrefix is a body up to its text's value.
func profilePrefix(top map[string]any) (string, error) {
	var b strings.Builder
	if err := writeTopFields(&b, top); err != nil {
		return "", err
	}
	b.WriteString(`"messages":[{"role":"user","content":[{"type":"text","text":`)
	return b.String(), nil
}

// profileSegments is one request: prefix, the text, the pictures (head
// and tail each).
func profileSegments(prefix, text string, pics [][2]string) []string {
	segs := make([]string, 0, 3+4*len(pics))
	tj, _ := json.Marshal(text)
	segs = append(segs, prefix, string(tj))
	for _, p := range pics {
		segs = append(segs, profileImageOpen, p[0])
		if p[1] != "" {
			segs = append(segs, p[1])
		}
		segs = append(segs, profileImageClose)
	}
	return append(segs, profileEnd)
}
