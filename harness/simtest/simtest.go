// Package simtest serves the simulated engine on loopback for tests. It is
// a package of its own because the simulator's own tests use testutil.
package simtest

import (
	"context"
	"net"
	"testing"

	"github.com/vlmfleet/vlmfleet/agent/simengine"
	"github.com/vlmfleet/vlmfleet/internal/testutil"
)

// Serve runs the simulated engine of profile p on loopback until the test
// ends and returns its OpenAI base URL (http://127.0.0.1:PORT/v1).
func Serve(t testing.TB, p simengine.Profile, opt simengine.Options) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- simengine.New(p, opt).Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); testutil.Returned(t, done, "simulated engine") })
	return "http://" + ln.Addr().String() + "/v1"
}
