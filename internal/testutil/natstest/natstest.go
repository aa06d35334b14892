// Package natstest starts NATS servers for tests that need one of their
// own: an external server for a controller, one configured with users and
// permissions. Only tests import it.
package natstest

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Start starts a NATS server with opts on loopback (it sets Host and
// NoSigs), on opts.Port when the test chose one (a server that comes up
// late, or comes back, where its clients look for it), else on a free
// port, and shuts it down when the test ends: started before a
// controller, after the controller closes. It returns once the server
// takes connections.
func Start(t testing.TB, opts *server.Options) *server.Server {
	t.Helper()
	opts.Host, opts.NoSigs = "127.0.0.1", true
	if opts.Port == 0 {
		opts.Port = server.RANDOM_PORT
	}
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
