package identity

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/vlmfleet/vlmfleet/controller/store"
)

// admittedKeys are the active identities the embedded server admits, one
// per public key, and what was left out and why. nats-server keeps one
// user per key, the last listed, so a key held twice would give its
// holders one set of rights: an agent holding the controller's key is
// never admitted, and of agents sharing a key, the one enrolled first
// keeps it (the later one is the one that took it).
func admittedKeys(idents []store.Identity, controllerKey string) (admitted []store.Identity, conflicts []string) {
	byKey := map[string][]store.Identity{}
	for _, id := range idents {
		if id.Active() {
			byKey[id.PublicKey] = append(byKey[id.PublicKey], id)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(byKey)) {
		holders := byKey[key]
		slices.SortFunc(holders, func(a, b store.Identity) int {
			return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.AgentID, b.AgentID))
		})
		switch {
		case key == controllerKey:
			conflicts = append(conflicts, fmt.Sprintf("agent %s holds the controller's own public key and is not admitted",
				holderIDs(holders)))
		case len(holders) > 1:
			admitted = append(admitted, holders[0])
			conflicts = append(conflicts, fmt.Sprintf("agents %s hold one public key: only %s (enrolled first) is admitted",
				holderIDs(holders), holders[0].AgentID))
		default:
			admitted = append(admitted, holders[0])
		}
	}
	slices.SortFunc(admitted, func(a, b store.Identity) int { return strings.Compare(a.AgentID, b.AgentID) })
	return admitted, conflicts
}

// identityConflictError is the health problem for admittedKeys' conflicts.
func identityConflictError(conflicts []string) error {
	return fmt.Errorf("%s; revoke the agents that should not hold those keys (vlmfleet agent-creds revoke ID) and enrol them again",
		strings.Join(conflicts, "; "))
}

func holderIDs(idents []store.Identity) string {
	ids := make([]string, len(idents))
	for i, id := range idents {
		ids[i] = id.AgentID
	}
	return strings.Join(ids, ", ")
}

// keyAdmitted says whether the server still admits public key pub: the
// controller's own, or an agent's that another identity holds (a conflict
// admittedKeys resolved). Revoking or replacing one holder of such a key
// must not close the connections of the one that keeps it.
func (reg *Registry) keyAdmitted(ctx context.Context, pub string) bool {
	ctlPub, err := reg.ctlKey.PublicKey()
	if err != nil || pub == ctlPub {
		return true
	}
	idents, err := reg.store.Identities(ctx)
	if err != nil {
		return false
	}
	admitted, _ := admittedKeys(idents, ctlPub)
	return slices.ContainsFunc(admitted, func(id store.Identity) bool { return id.PublicKey == pub })
}
