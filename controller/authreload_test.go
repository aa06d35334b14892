package controller

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/vlmfleet/vlmfleet/internal/testutil"
)

// Enrolments made together share the server's reloads, and each call
// returns credentials the server already admits: every agent connects
// the moment its call returns.
func TestConcurrentEnrolmentsShareReloads(t *testing.T) {
	c := startController(t, t.TempDir())
	const n = 40
	// The first reload waits, before it takes its batch, until every
	// enrolment has asked for one: the batching is what the count shows,
	// not the scheduler's luck.
	release := make(chan struct{})
	var once sync.Once
	hook := func() { once.Do(func() { <-release }) }
	c.testHookAuthReload.Store(&hook)
	before, asked := c.identity.ReloadCounts()

	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- enrolAndConnect(t, c, fmt.Sprintf("jetson-%02d", i))
		}()
	}
	eventually(t, "every enrolment waiting for a reload", func() bool { _, now := c.identity.ReloadCounts(); return now-asked == n })
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if made, _ := c.identity.ReloadCounts(); made-before != 1 {
		t.Errorf("%d enrolments made %d reloads of the server's users, want 1", n, made-before)
	}
}

// enrolAndConnect enrols id over HTTP and connects with the seed at once.
func enrolAndConnect(t *testing.T, c *Controller, id string) error {
	code, creds, body := credentials(t, c, http.MethodPost, id)
	if code != http.StatusCreated {
		return fmt.Errorf("enrol %s: %d %s", id, code, body)
	}
	nc, err := nats.Connect(c.NATSURL(), testutil.NkeySeed(t, creds.Seed), nats.NoReconnect())
	if err != nil {
		return fmt.Errorf("agent %s connecting as soon as its enrolment returned: %w", id, err)
	}
	nc.Close()
	return nil
}
