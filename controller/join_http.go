package controller

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"strconv"

	"github.com/vlmfleet/vlmfleet/controller/access"
	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/identity"
	"github.com/vlmfleet/vlmfleet/internal/loopback"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// handleJoin enrols a device (POST /api/join): 201 with how it reaches
// NATS; 401 for an unknown token or a wrong secret alike; 403 for a
// token revoked, expired or used up; 409 for an agent id enrolled under
// another key, or a controller that issues no NATS identities; 400 for a
// malformed request; 429 past the rate limit. The secret is never logged.
func (c *Controller) handleJoin(w http.ResponseWriter, r *http.Request) {
	if ok, retry := c.joinLimit.Allow(r); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(max(retry.Seconds(), 1)))))
		api.WriteError(w, http.StatusTooManyRequests, fmt.Errorf("too many joins from this address: try again in %s", retry.Round(1e9)))
		return
	}
	req, err := readRequest(w, r, protocol.MaxJoinRequest, protocol.DecodeJoinRequest)
	var ans protocol.JoinAnswer
	if err == nil {
		ans, err = c.identity.Join(r.Context(), req, r.Host, r.RemoteAddr)
	}
	if err != nil {
		api.WriteError(w, joinStatus(err), err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	api.WriteJSON(w, http.StatusCreated, ans)
}

func joinStatus(err error) int {
	var refused *identity.JoinRefusedError
	if errors.As(err, &refused) {
		return refused.Status
	}
	return identityStatus(err)
}

// handleCreateJoinToken makes a join token (POST /api/join-tokens) and
// answers 201 with its join string, shown this once.
func (c *Controller) handleCreateJoinToken(w http.ResponseWriter, r *http.Request) {
	req, err := readRequest(w, r, api.MaxJoinTokenBody, api.DecodeJoinTokenRequest)
	var t api.JoinTokenCreated
	if err == nil {
		t, err = c.identity.CreateJoinToken(r.Context(), req, c.joinURL(r, req.URL))
	}
	if err != nil {
		status := identityStatus(err)
		var noTLS *identity.NoJoinTLSError
		if errors.As(err, &noTLS) {
			status = http.StatusConflict
		}
		api.WriteError(w, status, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	api.WriteJSON(w, http.StatusCreated, t)
}

func (c *Controller) handleJoinTokens(r *http.Request) ([]api.JoinTokenView, error) {
	return c.identity.JoinTokens(r.Context())
}

func (c *Controller) handleRevokeJoinToken(r *http.Request) (api.JoinTokenView, error) {
	return c.identity.RevokeJoinToken(r.Context(), r.PathValue("id"))
}

// joinURL is the controller's address for a join string: the one asked
// for; else the one the request reached, unless that is loopback, which
// a device cannot use (but for an API listening on loopback only); else the first configured host name (--http-host),
// the address the API listens on, or this host's name, all of which the
// controller's own certificate names.
func (c *Controller) joinURL(r *http.Request, asked string) string {
	if asked != "" {
		return asked
	}
	host := access.NormalHost(r.Host)
	if !loopback.Host(access.HostOnly(host)) || loopback.Addr(c.opt.HTTPAddr) {
		// An API on loopback only is reached by devices on this host alone.
		return "https://" + host
	}
	_, port, _ := net.SplitHostPort(host)
	if ln, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); ok {
		port = strconv.Itoa(ln.Port)
	}
	if len(c.sec.Hosts) > 0 {
		h := c.sec.Hosts[0]
		if _, _, err := net.SplitHostPort(h); err == nil {
			return "https://" + h
		}
		return "https://" + net.JoinHostPort(h, port)
	}
	if h, _, err := net.SplitHostPort(c.opt.HTTPAddr); err == nil && h != "" && !loopback.Host(h) {
		if ip := net.ParseIP(h); ip == nil || !ip.IsUnspecified() {
			return "https://" + net.JoinHostPort(h, port)
		}
	}
	if h, err := os.Hostname(); err == nil && access.CertName(h) {
		return "https://" + net.JoinHostPort(h, port)
	}
	return "https://" + host
}
