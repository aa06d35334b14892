package web

import (
	"fmt"
	"html"
	"maps"
	"strings"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// profileRuleMarker is where static/profiles.html states the rule that
// picks the max-throughput level, written from protocol.ProfileAutoRule
// so that the page says what the measurement does, word for word.
const profileRuleMarker = "<!--vlmfleet:profile-rule-->"

// withProfileRule returns assets with the rule written into the profiles
// page.
func withProfileRule(assets map[string]asset) (map[string]asset, error) {
	const name = "profiles.html"
	page := string(assets[name].body)
	if strings.Count(page, profileRuleMarker) != 1 {
		return nil, fmt.Errorf("static/%s must hold %s exactly once", name, profileRuleMarker)
	}
	out := maps.Clone(assets)
	out[name] = newAsset(name, []byte(strings.Replace(page, profileRuleMarker, html.EscapeString(protocol.ProfileAutoRule), 1)))
	return out, nil
}
