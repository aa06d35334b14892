package controller

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vlmfleet/vlmfleet/controller/streams"
	"github.com/vlmfleet/vlmfleet/protocol"
)

// streamInfo is the stream's state and configuration as the server says now.
func streamInfo(t *testing.T, js jetstream.JetStream, name string) *jetstream.StreamInfo {
	t.Helper()
	s, err := js.Stream(waitCtx(t), name)
	if err != nil {
		t.Fatalf("stream %s: %v", name, err)
	}
	return s.CachedInfo()
}

// metric is the value of a series in c's /metrics now.
func metric(t *testing.T, c *Controller, series string) float64 {
	t.Helper()
	_, body := request(t, http.MethodGet, c.HTTPURL()+"/metrics", "")
	return metricValue(t, body, series)
}

// streamsProblem is /api/health's streams problem, "" when there is none.
func streamsProblem(t *testing.T, c *Controller) string {
	t.Helper()
	for _, p := range c.Health(waitCtx(t)).Problems {
		if p.Component == ProblemStreams {
			return p.Error
		}
	}
	return ""
}

// A hostile agent's attack: results of megabytes that are all rejected.
// Each is recorded under /api/rejected and then removed from the events
// stream, which returns to the size of what was stored; the hello stays.
func TestRejectedMessagesLeaveTheEventsStream(t *testing.T) {
	c := startController(t, t.TempDir())
	_, a := announced(t, c, "a1", "d1")
	_, admin := adminConn(t, c)
	before := streamInfo(t, admin, protocol.StreamEvents).State
	junk := bytes.Repeat([]byte("x"), 4<<20)
	for i := range 10 {
		a.publish(t, protocol.KindResult, junk, fmt.Sprintf("junk-%d", i))
	}
	eventually(t, "the 10 results rejected", func() bool {
		return metric(t, c, `vlmfleet_messages_rejected_total{kind="result"}`) == 10
	})
	var after jetstream.StreamState
	eventually(t, "the rejected results removed from the stream", func() bool {
		after = streamInfo(t, admin, protocol.StreamEvents).State
		return after.Msgs == before.Msgs
	})
	if after.Bytes > before.Bytes {
		t.Errorf("events stream %d bytes after, %d before", after.Bytes, before.Bytes)
	}
	t.Logf("events stream: %d bytes before, %d after 10 rejected results of %d bytes", before.Bytes, after.Bytes, len(junk))
	rej, err := c.store.Rejected(waitCtx(t), 0)
	if err != nil || len(rej) != 10 || rej[0].Bytes != len(junk) || rej[0].StreamSeq == 0 {
		t.Fatalf("rejected %d (%v): %+v", len(rej), err, rej[:min(1, len(rej))])
	}
	// Each removal is counted once the stream has dropped the message:
	// wait for the count, which the stream's size says nothing of.
	refusals := `vlmfleet_agent_refusals_total{kind="stream"}`
	eventually(t, "the 10 removals counted", func() bool { return metric(t, c, refusals) >= 10 })
	if n := metric(t, c, refusals); n != 10 {
		t.Errorf("stream refusals %v, want 10", n)
	}
}

// Every stream has a byte limit (the events and jobs streams refuse new
// messages when full rather than drop old ones), and a stream made by an
// earlier version without limits gets them at the next start.
func TestStreamsHaveByteLimitsSetInPlace(t *testing.T) {
	dir := t.TempDir()
	c := startController(t, dir)
	_, admin := adminConn(t, c)
	want := map[string]struct {
		max     int64
		discard jetstream.DiscardPolicy
	}{
		protocol.StreamEvents: {DefaultEventsStreamMaxBytes, jetstream.DiscardNew},
		protocol.StreamJobs:   {DefaultJobsStreamMaxBytes, jetstream.DiscardNew},
		AdvisoriesStream:      {streams.AdvisoriesStreamMaxBytes, jetstream.DiscardOld},
	}
	for name, w := range want {
		cfg := streamInfo(t, admin, name).Config
		if cfg.MaxBytes != w.max || cfg.Discard != w.discard || cfg.MaxMsgSize <= 0 {
			t.Errorf("%s: max_bytes %d, discard %v, max_msg_size %d; want %d, %v, a limit", name, cfg.MaxBytes, cfg.Discard, cfg.MaxMsgSize, w.max, w.discard)
		}
	}
	// As an earlier version made it: no byte limit, old messages dropped.
	cfg := streamInfo(t, admin, protocol.StreamEvents).Config
	cfg.MaxBytes, cfg.Discard = -1, jetstream.DiscardOld
	if _, err := admin.UpdateStream(waitCtx(t), cfg); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c = startControllerWith(t, Options{DataDir: dir, EventsStreamMaxBytes: 100 << 20, JobsStreamMaxBytes: 50 << 20})
	_, admin = adminConn(t, c)
	if cfg := streamInfo(t, admin, protocol.StreamEvents).Config; cfg.MaxBytes != 100<<20 || cfg.Discard != jetstream.DiscardNew {
		t.Errorf("events stream after the restart: max_bytes %d, discard %v; want %d, new", cfg.MaxBytes, cfg.Discard, 100<<20)
	}
	if cfg := streamInfo(t, admin, protocol.StreamJobs).Config; cfg.MaxBytes != 50<<20 {
		t.Errorf("jobs stream after the restart: max_bytes %d, want %d", cfg.MaxBytes, 50<<20)
	}
}

// A full events stream refuses new messages, which the agent keeps and
// sends again, and /api/health says so; once the controller has stored
// what the stream holds, the space is freed, the message is taken and the
// problem clears. Nothing is lost on the way.
func TestFullEventsStreamRefusesAndRecovers(t *testing.T) {
	c := startControllerWith(t, Options{DataDir: t.TempDir(), EventsStreamMaxBytes: MinStreamMaxBytes})
	_, a := announced(t, c, "a1", "d1")
	_, admin := adminConn(t, c)
	// The controller stops taking messages in, as when it is down.
	if _, err := admin.PauseConsumer(waitCtx(t), protocol.StreamEvents, ConsumerName, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	junk := bytes.Repeat([]byte("x"), 1<<20)
	var refused string
	sent := 0
	for ; sent < 2*MinStreamMaxBytes>>20; sent++ {
		_, err := a.js.Publish(waitCtx(t), protocol.AgentSubject("a1", protocol.KindResult), junk, jetstream.WithMsgID(fmt.Sprintf("junk-%d", sent)))
		if err != nil {
			if !strings.Contains(err.Error(), "maximum bytes") {
				t.Fatalf("publish %d: %v, want the stream's maximum bytes", sent, err)
			}
			refused = fmt.Sprintf("junk-%d", sent)
			break
		}
	}
	if refused == "" {
		t.Fatalf("%d MiB published into a stream of %d MiB", sent, MinStreamMaxBytes>>20)
	}
	waitLonger(t, "health to say the events stream is full", func() bool {
		return strings.Contains(streamsProblem(t, c), "full")
	})
	if _, err := admin.ResumeConsumer(waitCtx(t), protocol.StreamEvents, ConsumerName); err != nil {
		t.Fatal(err)
	}
	waitLonger(t, "the refused message taken once space is freed", func() bool {
		_, err := a.js.Publish(waitCtx(t), protocol.AgentSubject("a1", protocol.KindResult), junk, jetstream.WithMsgID(refused))
		return err == nil
	})
	waitLonger(t, "every message handled and the problem cleared", func() bool {
		return metric(t, c, `vlmfleet_messages_rejected_total{kind="result"}`) == float64(sent+1) && streamsProblem(t, c) == ""
	})
}

// An events stream that fills with what the controller has stored drops
// that, not what it has yet to store: an agent publishing twice the
// stream's limit, retrying what is refused as its spool does, has every
// message taken and stored.
func TestEventsStreamDropsWhatIsStoredWhenFull(t *testing.T) {
	c := startControllerWith(t, Options{DataDir: t.TempDir(), EventsStreamMaxBytes: MinStreamMaxBytes})
	ev, a := announced(t, c, "a1", "d1")
	reason := strings.Repeat("r", 4000)
	started := time.Now().UTC()
	hellos := 2 * MinStreamMaxBytes / (1 << 20)
	var h protocol.AgentHello
	for i := range hellos {
		h = protocol.AgentHello{Schema: protocol.SchemaVersion, Level: protocol.AgentLevel, AgentID: "a1", Hostname: "h", Version: "test", StartedAt: started.Add(time.Duration(i) * time.Second)}
		for j := range 256 {
			h.BrokenDeployments = append(h.BrokenDeployments, protocol.BrokenDeployment{ID: fmt.Sprintf("b%d", j), Reason: reason})
		}
		waitLonger(t, fmt.Sprintf("hello %d taken", i), func() bool {
			data, _ := json.Marshal(h)
			_, err := a.js.Publish(waitCtx(t), protocol.AgentSubject("a1", protocol.KindHello), data, jetstream.WithMsgID(protocol.HelloMsgID("a1", h.StartedAt.UnixNano())))
			return err == nil
		})
	}
	ev.waitFor(t, 1, helloStored(h))
	// The counter moves once the hello is acknowledged, after its event:
	// wait for the count rather than read it as the event arrives.
	series := `vlmfleet_messages_ingested_total{kind="hello"}`
	eventually(t, "every hello counted", func() bool { return metric(t, c, series) >= float64(hellos+1) })
	if n := metric(t, c, series); n != float64(hellos+1) {
		t.Errorf("%v hellos stored, want %d", n, hellos+1)
	}
	_, admin := adminConn(t, c)
	if info := streamInfo(t, admin, protocol.StreamEvents); info.State.Bytes > uint64(MinStreamMaxBytes) {
		t.Errorf("events stream holds %d bytes, limit %d", info.State.Bytes, MinStreamMaxBytes)
	}
}

// waitLonger is eventually for what the controller checks every
// jetStreamCheckEvery: it allows several checks.
func waitLonger(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(6 * jetStreamCheckEvery)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", 6*jetStreamCheckEvery, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
