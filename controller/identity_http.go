package controller

import (
	"errors"
	"net/http"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/identity"
)

// handleCreateCredentials enrols the agent (POST /api/agents/{id}/credentials)
// and answers 201 with its credentials, the seed shown this once; 400 for
// an id that is not one, 409 when the controller issues no credentials.
func (c *Controller) handleCreateCredentials(w http.ResponseWriter, r *http.Request) {
	creds, err := c.identity.Enrol(r.Context(), r.PathValue("id"))
	if err != nil {
		api.WriteError(w, identityStatus(err), err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	api.WriteJSON(w, http.StatusCreated, creds)
}

// handleRevokeCredentials revokes the agent's credentials (DELETE
// /api/agents/{id}/credentials) and closes its connections: 200, 404 when
// it has none that are active, 409 when the controller issues none.
func (c *Controller) handleRevokeCredentials(w http.ResponseWriter, r *http.Request) {
	ident, err := c.identity.Revoke(r.Context(), r.PathValue("id"))
	if err != nil {
		api.WriteError(w, identityStatus(err), err)
		return
	}
	api.WriteJSON(w, http.StatusOK, api.AgentRevocation{AgentID: ident.AgentID, RevokedAt: ident.RevokedAt})
}

func identityStatus(err error) int {
	var no *identity.NoNATSAuthorityError
	var bad *identity.BadAgentIDError
	switch {
	case errors.As(err, &no):
		return http.StatusConflict
	case errors.As(err, &bad):
		return http.StatusBadRequest
	}
	return statusOf(err)
}
