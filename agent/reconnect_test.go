package agent_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
	"github.com/rs/zerolog"

	"github.com/vlmfleet/vlmfleet/agent"
	"github.com/vlmfleet/vlmfleet/internal/testutil/natstest"
	"github.com/vlmfleet/vlmfleet/internal/tlsca"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// runAgentUntilItStops runs an agent whose Run is expected to end on its
// own, and returns what it ended with; hello, when not nil, is closed once
// the agent's first connection is up (its hello was published).
func runAgentUntilItStops(t *testing.T, ctx context.Context, cfg agent.Config) <-chan error {
	t.Helper()
	a, err := agent.New(cfg, agent.Options{Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel), Version: "test",
		Getenv: func(string) string { return "" }, Images: builtinImages(t)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	return done
}

func simulatedConfig(t *testing.T, id, url string) agent.Config {
	t.Helper()
	deps, err := agent.SimulatedDeployments("Jetson AGX Orin", 50, "Cosmos3-Edge")
	if err != nil {
		t.Fatal(err)
	}
	return agent.Config{ID: id, NATSURL: url, Deployments: deps, Simulate: "Jetson AGX Orin", SimSpeedup: 50, SpoolDir: t.TempDir()}
}

// An agent connected over TLS whose server comes back with a certificate
// of another CA (the controller's CA replaced, or another server at its
// address) stops with the error it would have given at its first
// connection, rather than reconnecting in silence for ever.
func TestAgentStopsWhenItsServerIsNoLongerTrustedOnReconnect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first, err := tlsca.Open(t.TempDir(), []string{"127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ns := natstest.Start(t, &server.Options{JetStream: true, StoreDir: t.TempDir(), NoLog: true, TLS: true, TLSConfig: first.ServerConfig(), TLSTimeout: 5})
	port := ns.Addr().(*net.TCPAddr).Port
	url := "tls://127.0.0.1:" + strconv.Itoa(port)
	cfg := simulatedConfig(t, "tls-1", url)
	cfg.NATSCAPin = first.Fingerprint()
	done := runAgentUntilItStops(t, ctx, cfg)
	for ns.NumClients() == 0 {
		select {
		case err := <-done:
			t.Fatalf("the agent stopped before its first connection: %v", err)
		case <-ctx.Done():
			t.Fatal("the agent never connected")
		case <-time.After(20 * time.Millisecond):
		}
	}
	ns.Shutdown()
	ns.WaitForShutdown()
	other, err := tlsca.Open(t.TempDir(), []string{"127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	natstest.Start(t, &server.Options{Port: port, NoLog: true, TLS: true, TLSConfig: other.ServerConfig(), TLSTimeout: 5})
	select {
	case err := <-done:
		var ue *agent.UntrustedError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "not the pinned CA "+first.Fingerprint()) {
			t.Fatalf("the agent ended with %v, want an *UntrustedError naming its pin", err)
		}
	case <-ctx.Done():
		t.Fatal("the agent kept reconnecting to a server it does not trust")
	}
}

// An agent started with another agent's credentials is refused its own
// subjects by the server: it stops, saying the credentials are another
// agent's, instead of logging refusals for ever.
func TestAgentWithAnotherAgentsCredentialsStops(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	publish, subscribe := protocol.AgentPermissionSubjects("owner-1")
	ns := natstest.Start(t, &server.Options{JetStream: true, StoreDir: t.TempDir(), NoLog: true, Nkeys: []*server.NkeyUser{{
		Nkey:        pub,
		Permissions: &server.Permissions{Publish: &server.SubjectPermission{Allow: publish}, Subscribe: &server.SubjectPermission{Allow: subscribe}},
	}}})
	cfg := simulatedConfig(t, "borrower-1", "nats://"+ns.Addr().String())
	cfg.NATSSeed = string(seed)
	select {
	case err := <-runAgentUntilItStops(t, ctx, cfg):
		var re *agent.RefusedError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), "are another agent's") || !strings.Contains(err.Error(), "borrower-1") {
			t.Fatalf("the agent ended with %v, want a *RefusedError saying the credentials are another agent's", err)
		}
	case <-ctx.Done():
		t.Fatal("the agent with another agent's credentials never stopped")
	}
}
