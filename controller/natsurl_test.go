package controller

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/internal/testutil/natstest"
)

// A comma-separated --nats-url is a list of a cluster's nodes: the
// controller connects through whichever answers (here the second).
func TestNATSURLList(t *testing.T) {
	ns := startExternalNATS(t)
	list := "nats://127.0.0.1:1, " + ns.ClientURL()
	c := startControllerWith(t, Options{DataDir: filepath.Join(t.TempDir(), "d"), NATSURL: list})
	if got := c.nc.ConnectedUrl(); got != ns.ClientURL() {
		t.Errorf("connected to %s, want %s", got, ns.ClientURL())
	}
}

// The controller's password in --nats-url (every node's, in a list) shows
// neither in /api/health nor in the log.
func TestNATSURLPasswordsStayHidden(t *testing.T) {
	ns := natstest.Start(t, &server.Options{JetStream: true, StoreDir: t.TempDir(),
		Users: []*server.User{{Username: "controller", Password: "pw-hidden"}}})
	node := strings.Replace(ns.ClientURL(), "nats://", "nats://controller:pw-hidden@", 1)
	var logged bytes.Buffer
	c, err := New(Options{DataDir: t.TempDir(), NATSURL: node + "," + node, HTTPAddr: "127.0.0.1:0",
		Log: zerolog.New(zerolog.SyncWriter(&logged))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		_ = c.Close()
		t.Fatal(err)
	}
	var h api.Health
	getJSON(t, c.HTTPURL()+"/api/health", &h)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(node, "pw-hidden", "xxxxx", 1)
	if h.NATSURL != want+","+want {
		t.Errorf("/api/health nats_url %q, want %q", h.NATSURL, want+","+want)
	}
	if strings.Contains(logged.String(), "pw-hidden") {
		t.Errorf("the log shows the password:\n%s", logged.String())
	}
	if !strings.Contains(logged.String(), want) {
		t.Errorf("the log never names the server %s:\n%s", want, logged.String())
	}
}
