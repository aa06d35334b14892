package client

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/vlmfleet/vlmfleet/controller"
	"github.com/vlmfleet/vlmfleet/harness/labtest"
)

// Credentials are created, replaced and revoked through the client; a
// revoke of nothing is ErrNotFound, and an insecure controller says why it
// issues none.
func TestAgentCredentials(t *testing.T) {
	l := newLab(t)
	creds, err := l.cl.CreateAgentCredentials(l.Ctx, "a2")
	if err != nil || creds.AgentID != "a2" || !strings.HasPrefix(creds.Seed, "SU") || creds.NATSURL != l.Ctl.NATSURL() {
		t.Fatalf("create: %+v, %v", creds, err)
	}
	again, err := l.cl.CreateAgentCredentials(l.Ctx, "a2")
	if err != nil || again.PublicKey == creds.PublicKey {
		t.Fatalf("create again: %+v, %v; want a new key", again, err)
	}
	rev, err := l.cl.RevokeAgentCredentials(l.Ctx, "a2")
	if err != nil || rev.AgentID != "a2" || rev.RevokedAt.IsZero() {
		t.Fatalf("revoke: %+v, %v", rev, err)
	}
	if _, err := l.cl.RevokeAgentCredentials(l.Ctx, "a2"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("revoke again: %v, want ErrNotFound", err)
	}

	open := labtest.Start(t, controller.Options{Insecure: true})
	cl, err := New(open.Ctl.HTTPURL(), WithToken(open.Ctl.APIToken()))
	if err != nil {
		t.Fatal(err)
	}
	_, err = cl.CreateAgentCredentials(open.Ctx, "a2")
	var api *APIError
	if !errors.As(err, &api) || api.Status != http.StatusConflict || !strings.Contains(err.Error(), "--insecure") {
		t.Fatalf("credentials from an insecure controller: %v, want 409 naming --insecure", err)
	}
}
