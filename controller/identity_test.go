package controller

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// The default controller's NATS server admits no one without credentials;
// its own key is private to its owner, and /api/health says nkeys.
func TestDefaultNATSRequiresCredentials(t *testing.T) {
	c := startController(t, t.TempDir())
	if _, err := nats.Connect(c.NATSURL()); !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("connecting without credentials: %v, want an authorization violation", err)
	}
	// Signing in with a key the controller never issued is refused too.
	seed, _ := testutil.NewUser(t)
	if _, err := nats.Connect(c.NATSURL(), testutil.NkeySeed(t, seed)); !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("connecting with an unknown key: %v, want an authorization violation", err)
	}
	fi, err := os.Stat(c.NATSSeedFile())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("controller seed file %s: %v, %v; want mode 0600", c.NATSSeedFile(), fi.Mode(), err)
	}
	var h map[string]any
	getJSON(t, c.HTTPURL()+"/api/health", &h)
	if h["nats_auth"] != api.NATSAuthNkeys {
		t.Errorf("health nats_auth %v, want %s", h["nats_auth"], api.NATSAuthNkeys)
	}
}

// connWatch connects with opts and reports when the connection closes for
// good; it reconnects quickly, so a refused reconnect shows soon.
func connWatch(t *testing.T, url string, opts ...nats.Option) (*nats.Conn, <-chan struct{}) {
	t.Helper()
	closed := make(chan struct{})
	opts = append(opts, nats.ReconnectWait(10*time.Millisecond), nats.MaxReconnects(-1),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc, closed
}

// waitRefused waits until the connection is closed because the server no
// longer accepts its credentials.
func waitRefused(t *testing.T, nc *nats.Conn, closed <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-closed:
	case <-time.After(waitLimit):
		t.Fatalf("%s: the connection is still open (status %v)", what, nc.Status())
	}
	if err := nc.LastError(); !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("%s: connection closed with %v, want an authorization violation", what, err)
	}
}

func credentials(t *testing.T, c *Controller, method, id string) (int, api.AgentCredentials, string) {
	t.Helper()
	code, body := request(t, method, c.HTTPURL()+"/api/agents/"+id+"/credentials", "")
	var creds api.AgentCredentials
	if code == http.StatusCreated {
		if err := json.Unmarshal([]byte(body), &creds); err != nil {
			t.Fatalf("%s credentials %s: %v in %s", method, id, err, body)
		}
	}
	return code, creds, body
}

// Enrolling over HTTP issues a seed that signs in with the agent's
// permissions; enrolling again replaces it and closes the old key's
// connection; revoking closes the connection and refuses a reconnect.
func TestEnrolRotateRevokeOverHTTP(t *testing.T) {
	c := startController(t, t.TempDir())
	code, first, body := credentials(t, c, http.MethodPost, "a1")
	if code != http.StatusCreated || first.AgentID != "a1" || !strings.HasPrefix(first.Seed, "SU") ||
		!strings.HasPrefix(first.PublicKey, "U") || first.NATSURL != c.NATSURL() {
		t.Fatalf("create credentials: %d %s", code, body)
	}
	old, oldClosed := connWatch(t, c.NATSURL(), testutil.NkeySeed(t, first.Seed), nats.CustomInboxPrefix(protocol.AgentInboxPrefix("a1")))
	if err := old.Publish(protocol.AgentSubject("a1", protocol.KindHeartbeat), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := old.Flush(); err != nil || old.LastError() != nil {
		t.Fatalf("a1 publishing on its own subject: %v %v", err, old.LastError())
	}

	code, second, body := credentials(t, c, http.MethodPost, "a1")
	if code != http.StatusCreated || second.Seed == first.Seed || second.PublicKey == first.PublicKey {
		t.Fatalf("create credentials again: %d %s", code, body)
	}
	waitRefused(t, old, oldClosed, "the replaced key's connection")
	if _, err := nats.Connect(c.NATSURL(), testutil.NkeySeed(t, first.Seed)); !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("connecting with the replaced key: %v", err)
	}

	nc, closed := connWatch(t, c.NATSURL(), testutil.NkeySeed(t, second.Seed), nats.CustomInboxPrefix(protocol.AgentInboxPrefix("a1")))
	code, body = request(t, http.MethodDelete, c.HTTPURL()+"/api/agents/a1/credentials", "")
	var rev api.AgentRevocation
	if code != http.StatusOK || json.Unmarshal([]byte(body), &rev) != nil || rev.AgentID != "a1" || rev.RevokedAt.IsZero() {
		t.Fatalf("revoke: %d %s", code, body)
	}
	waitRefused(t, nc, closed, "the revoked agent's connection")
	if _, err := nats.Connect(c.NATSURL(), testutil.NkeySeed(t, second.Seed)); !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("connecting with revoked credentials: %v", err)
	}
	if code, body := request(t, http.MethodDelete, c.HTTPURL()+"/api/agents/a1/credentials", ""); code != http.StatusNotFound {
		t.Fatalf("revoking twice: %d %s, want 404", code, body)
	}
	if code, body := request(t, http.MethodDelete, c.HTTPURL()+"/api/agents/nobody/credentials", ""); code != http.StatusNotFound {
		t.Fatalf("revoking an agent never enrolled: %d %s, want 404", code, body)
	}
	if code, _, body := credentials(t, c, http.MethodPost, "bad%20id"); code != http.StatusBadRequest || !strings.Contains(body, "agent id") {
		t.Fatalf("enrolling a bad id: %d %s, want 400", code, body)
	}
	// The controller's own connection was never touched.
	if !c.nc.IsConnected() {
		t.Fatal("the controller's connection is down")
	}
}

// Enrolled agents and the controller's own key survive a restart.
func TestIdentitiesSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	c1, err := New(Options{DataDir: dir, NATSListen: "127.0.0.1:-1", HTTPAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := waitCtx(t)
	if err := c1.Start(ctx); err != nil {
		t.Fatal(err)
	}
	seed, err := c1.EnrolAgent(ctx, "a1")
	if err != nil {
		t.Fatal(err)
	}
	ctlSeed, _ := os.ReadFile(c1.NATSSeedFile())
	if err := c1.Close(); err != nil {
		t.Fatal(err)
	}
	c2 := startController(t, dir)
	if again, _ := os.ReadFile(c2.NATSSeedFile()); string(again) != string(ctlSeed) || len(ctlSeed) == 0 {
		t.Error("the controller's key changed across a restart")
	}
	nc, err := nats.Connect(c2.NATSURL(), testutil.NkeySeed(t, seed))
	if err != nil {
		t.Fatalf("the enrolled agent after a restart: %v", err)
	}
	nc.Close()
	if err := c2.RevokeAgent(ctx, "a1"); err != nil {
		t.Fatal(err)
	}
	if err := c2.RevokeAgent(ctx, "a1"); err == nil {
		t.Fatal("revoking twice succeeded")
	}
}

// --insecure runs the embedded server open, says so, and issues no
// credentials; on an address other hosts reach it needs --insecure-public.
func TestInsecureNATS(t *testing.T) {
	c := startControllerWith(t, Options{DataDir: t.TempDir(), Insecure: true})
	nc, err := nats.Connect(c.NATSURL())
	if err != nil {
		t.Fatalf("connecting to an insecure controller: %v", err)
	}
	nc.Close()
	var h map[string]any
	getJSON(t, c.HTTPURL()+"/api/health", &h)
	if h["nats_auth"] != api.NATSAuthOff {
		t.Errorf("health nats_auth %v, want %s", h["nats_auth"], api.NATSAuthOff)
	}
	if code, _, body := credentials(t, c, http.MethodPost, "a1"); code != http.StatusConflict || !strings.Contains(body, "--insecure") {
		t.Fatalf("credentials from an insecure controller: %d %s, want 409", code, body)
	}
	if c.NATSSeedFile() != "" {
		t.Errorf("an insecure controller has a seed file %q", c.NATSSeedFile())
	}

	for _, tc := range []struct {
		opt  Options
		want string
	}{
		{Options{NATSListen: "0.0.0.0:4222", Insecure: true}, "--insecure-public"},
		{Options{NATSListen: "192.0.2.1:4222", Insecure: true}, "--insecure-public"},
		{Options{InsecurePublic: true}, "goes with --insecure"},
		{Options{NATSURL: "nats://127.0.0.1:4222", Insecure: true}, "is for the embedded NATS server"},
		{Options{NATSCredentials: "x.nk"}, "are for an external server"},
	} {
		tc.opt.DataDir = t.TempDir()
		_, err := New(tc.opt)
		testutil.WantError(t, err, tc.want)
	}
	c2, err := New(Options{DataDir: t.TempDir(), NATSListen: "0.0.0.0:4222", Insecure: true, InsecurePublic: true})
	if err != nil {
		t.Fatalf("--insecure --insecure-public on 0.0.0.0: %v", err)
	}
	_ = c2.Close()
}

// On an external server the controller signs in with the nkey seed it is
// given, and leaves agent credentials to the server's operator (409).
func TestExternalNATSWithCredentials(t *testing.T) {
	seed, pub := testutil.NewUser(t)
	ns := startExternalNATS(t, &server.NkeyUser{Nkey: pub})
	file := filepath.Join(t.TempDir(), "controller.nk")
	if err := os.WriteFile(file, []byte(seed+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startControllerWith(t, Options{DataDir: t.TempDir(), NATSURL: ns.ClientURL(), NATSCredentials: file})
	if code, _, body := credentials(t, c, http.MethodPost, "a1"); code != http.StatusConflict || !strings.Contains(body, "external NATS server") {
		t.Fatalf("credentials from a controller on an external server: %d %s, want 409", code, body)
	}
	if code, body := request(t, http.MethodDelete, c.HTTPURL()+"/api/agents/a1/credentials", ""); code != http.StatusConflict {
		t.Fatalf("revoking on an external server: %d %s, want 409", code, body)
	}
	var h map[string]any
	getJSON(t, c.HTTPURL()+"/api/health", &h)
	if h["nats_auth"] != api.NATSAuthExternal || h["nats"] != "connected" {
		t.Errorf("health %v, want nats_auth %s and connected", h, api.NATSAuthExternal)
	}

	// A credentials file that is not there stops the start, named.
	c2, err := New(Options{DataDir: t.TempDir(), NATSURL: ns.ClientURL(), NATSCredentials: filepath.Join(t.TempDir(), "missing.nk"),
		HTTPAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	testutil.WantError(t, c2.Start(waitCtx(t)), "--nats-credentials")
}
