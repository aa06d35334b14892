package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// An operator (here with the controller's own credentials) deletes the
// controller's events consumer: the controller notices, says so in
// /api/health, recreates the consumer and ingests what was published
// while it was missing.
func TestDeletedEventsConsumerIsRecreatedAndIngestionResumes(t *testing.T) {
	c := startController(t, t.TempDir())
	ev, a := announced(t, c, "a1")

	// Hold the rebind until the test has seen the controller degraded.
	rebinding := make(chan string, 4)
	release := make(chan struct{})
	hook := func(what string) {
		rebinding <- what
		<-release
	}
	c.testHookRebind.Store(&hook)

	_, adminJS := adminConn(t, c)
	if err := adminJS.DeleteConsumer(waitCtx(t), protocol.StreamEvents, ConsumerName); err != nil {
		t.Fatalf("delete the events consumer: %v", err)
	}
	select {
	case what := <-rebinding:
		if what != "events consumer" {
			t.Fatalf("recreating %q, want the events consumer", what)
		}
	case <-waitCtx(t).Done():
		t.Fatal("the controller did not notice its events consumer was deleted")
	}

	code, health := getHealth(t, c)
	if code != http.StatusServiceUnavailable ||
		health["status"] != "degraded" || health["ingest"] != "rebinding" ||
		!strings.Contains(fmt.Sprint(health["ingest_error"]), "events consumer") {
		t.Errorf("health while the consumer is missing: %d %v, want 503 degraded, ingest rebinding", code, health)
	}

	// Published while the consumer is missing: the stream keeps it.
	h := a.hello(t, "d1")
	close(release)
	ev.waitFor(t, 1, helloStored(h))

	eventually(t, "health ok again", func() bool {
		code, health = getHealth(t, c)
		return code == http.StatusOK && health["status"] == "ok" && health["ingest"] == "ok"
	})
	if _, ok := health["ingest_error"]; ok {
		t.Errorf("health still names an ingest error: %v", health)
	}
	if _, err := adminJS.Consumer(waitCtx(t), protocol.StreamEvents, ConsumerName); err != nil {
		t.Errorf("the events consumer was not recreated: %v", err)
	}
}

// Deleting the whole events stream takes the consumer with it: both come
// back, and an agent's later message is ingested.
func TestDeletedEventsStreamIsRecreated(t *testing.T) {
	c := startController(t, t.TempDir())
	ev, a := announced(t, c, "a1")
	_, adminJS := adminConn(t, c)
	if err := adminJS.DeleteStream(waitCtx(t), protocol.StreamEvents); err != nil {
		t.Fatalf("delete the events stream: %v", err)
	}
	eventually(t, "the events consumer recreated", func() bool {
		_, err := adminJS.Consumer(waitCtx(t), protocol.StreamEvents, ConsumerName)
		return err == nil
	})
	// Published as an agent does, retrying until the stream acknowledges:
	// a stream deleted and at once recreated under the same name can meet
	// nats-server's removal of the old files ("critical write error"), which
	// the controller repairs by restarting JetStream within seconds. A
	// message the half-removed stream acknowledged just before that is lost
	// with its files, while the stream remembers its id and acknowledges a
	// resend as a duplicate (the stream was deleted by hand: what it held
	// is gone either way). So the test announces again, as a restarted agent
	// would, under a new start time, until the controller stores one.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		h := protocol.AgentHello{Schema: protocol.SchemaVersion, Level: protocol.AgentLevel, AgentID: a.id, Hostname: "host-a1", Version: "test", StartedAt: time.Now().UTC(), Simulated: true}
		if err := publishUntilStored(ctx, a.js, protocol.AgentSubject(a.id, protocol.KindHello), h, protocol.HelloMsgID(a.id, h.StartedAt.UnixNano())); err != nil {
			t.Fatal(err)
		}
		if _, ok := ev.waitWithin(5*time.Second, 1, helloStored(h)); ok {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("no hello was stored after the events stream was recreated")
		}
		t.Log("a hello acknowledged by the stream was not stored in 5 s; announcing again")
	}
	if code, health := getHealth(t, c); code != http.StatusOK || health["ingest"] != "ok" {
		t.Errorf("health after recovery: %d %v", code, health)
	}
}

// getHealth returns /api/health's status and body, whatever the status.
func getHealth(t *testing.T, c *Controller) (int, map[string]any) {
	t.Helper()
	code, body := request(t, http.MethodGet, c.HTTPURL()+"/api/health", "")
	var health map[string]any
	if err := json.Unmarshal([]byte(body), &health); err != nil {
		t.Fatalf("health: %v in %s", err, body)
	}
	return code, health
}
