// Package natstest starts NATS servers for tests that need one of their
// own: an external server for a controller, one configured with users and
// permissions. Only tests import it.
package natstest

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Start starts a NATS server with opts on a loopback port (it sets Host,
// Port and NoSigs) and shuts it down when the test ends: started before a
// controller, after the controller closes. It returns once the server
// takes connections.
func Start(t testing.TB, opts *server.Options) *server.Server {
	t.Helper()
	opts.Host, opts.Port, opts.NoSigs = "127.0.0.1", server.RANDOM_PORT, true
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server did not start")
	}
	return ns
}
